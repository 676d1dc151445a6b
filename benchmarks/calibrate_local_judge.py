"""Fit the packaged local judge's P(yes) calibration for claim support, on QAGS.

The packaged 1.5B model says "supported" too easily: its raw P(yes) ranks claims well but
0.5 is the wrong place to cut. This script measures raw P(yes) on the calibration split of
QAGS (claims of articles whose number is divisible by 4: 239 of 953 claims, about a quarter)
with faithfulness exactly as ``ragmeter eval`` runs it, fits a class-balanced logistic
regression of the label on logit(P(yes)), and writes slope and intercept into
``src/ragmeter/resources/local_judge_calibration.json`` under ``supported/en``.

``ragmeter bench`` measures QAGS faithfulness on the other articles only, so the fit is
never scored on the claims it was fitted on. Switched on (``judge: {calibrated: true}`` in a
config file, ``LocalJudge(calibrated=True)``), the calibration applies wherever the local
judge answers "is this statement supported by this text" in English (faithfulness, context
recall and utilisation, answer and factual correctness, noise sensitivity); those sets
measure it without having been used for the fit.

Usage:
    python benchmarks/calibrate_local_judge.py [--data-dir ../shared/data] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import ragmeter
from ragmeter.bench.report import git_commit
from ragmeter.bench.suites import in_qags_calibration_split, qags_rows
from ragmeter.judges import Judges
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.local_model import PACKAGED_MODEL, PACKAGED_SHA256, recalibrate
from ragmeter.results.stats import roc_auc

RESOURCE = Path(__file__).resolve().parents[1] / "src" / "ragmeter" / "resources" / "local_judge_calibration.json"


def raw_p_yes(rows: list[dict], threads: int | None) -> list[float]:
    """Raw P(yes) of each claim against its article, through the faithfulness metric;
    ``threads``: CPU threads of the local judge (None: its default)."""
    samples = [
        {"id": r["id"], "user_input": "Summarise the article.", "retrieved_contexts": [r["context"]], "response": r["claim"]} for r in rows
    ]
    judge = LocalJudge(calibrated=False, threads=threads)
    result = ragmeter.Evaluator(["faithfulness"], judges=Judges(llm=judge), progress=True).run(ragmeter.load_dataset(samples))
    by_id = {s.key: s.scores["faithfulness"] for s in result.samples}
    values = []
    for r in rows:
        score = by_id[r["id"]]
        if score.value is None:
            raise SystemExit(f"{r['id']}: unscored ({score.reason}); cannot fit on it")
        claims = score.details["claims"]
        values.append(sum(c["p_yes"] for c in claims) / len(claims))
    return values


def fit_balanced_logistic(p: np.ndarray, y: np.ndarray, iterations: int = 50) -> tuple[float, float]:
    """Slope and intercept of P(y=1) = sigmoid(slope * logit(p) + intercept), each class
    weighted by the inverse of its frequency (Newton's method on the weighted log-loss)."""
    x = np.log(np.clip(p, 1e-6, 1 - 1e-6) / (1 - np.clip(p, 1e-6, 1 - 1e-6)))
    w = np.where(y == 1, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    X = np.column_stack([x, np.ones_like(x)])
    beta = np.zeros(2)
    for _ in range(iterations):
        q = 1 / (1 + np.exp(-X @ beta))
        gradient = X.T @ (w * (y - q))
        hessian = (X * (w * q * (1 - q))[:, None]).T @ X + 1e-9 * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.abs(step).max() < 1e-10:
            break
    return float(beta[0]), float(beta[1])


def balanced_accuracy(y: np.ndarray, decision: np.ndarray) -> float:
    return float(((decision[y == 1]).mean() + (~decision[y == 0]).mean()) / 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--limit", type=int, default=None, help="Fit on the first N calibration claims only (a quick look).")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads of the local judge (default: its own)")
    args = parser.parse_args()
    rows = [r for r in qags_rows(args.data_dir) if in_qags_calibration_split(r["id"])][: args.limit]
    y = np.array([int(r["faithful_majority"]) for r in rows])
    p = np.array(raw_p_yes(rows, args.threads))
    slope, intercept = fit_balanced_logistic(p, y)
    calibrated = np.array([recalibrate(v, slope, intercept) for v in p])
    fit = {
        "slope": round(slope, 6),
        "intercept": round(intercept, 6),
        "claims": len(rows),
        "supported_share": round(float(y.mean()), 4),
        "raw_roc_auc": round(roc_auc(y.tolist(), p.tolist()), 4),
        "balanced_accuracy_raw_at_0_5": round(balanced_accuracy(y, p >= 0.5), 4),
        "balanced_accuracy_calibrated_at_0_5": round(balanced_accuracy(y, calibrated >= 0.5), 4),
        "raw_p_yes_at_decision_point": round(1 / (1 + math.exp(intercept / slope)), 4),
        "data": "QAGS claims of articles whose number is divisible by 4 (ids cnndm-N-*, xsum-N-*)",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
    }
    data = json.loads(RESOURCE.read_text(encoding="utf-8"))
    if data.get("sha256") != PACKAGED_SHA256:
        raise SystemExit(f"{RESOURCE} names another model file")
    data.update(model=PACKAGED_MODEL, fitted_by="benchmarks/calibrate_local_judge.py")
    data["calibrations"]["supported/en"] = fit
    RESOURCE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(fit, indent=1))


if __name__ == "__main__":
    main()
