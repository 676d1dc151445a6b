"""Chinese against English faithfulness on the minimal-edit sets, from two `ragmeter bench` runs.

Issue 14 asks that faithfulness on Chinese be within 0.05 of English. `rgb/faithfulness_edits`
and `clapnq/faithfulness_edits` are built the same way (a claim and its twin with one value
changed, against the same passage), so their figures can be compared:

    flock /work/model.lock ragmeter bench rgb/faithfulness_edits rgb/embedding_groundedness_edits \\
        --limit 30 --data-dir ../shared/data --out benchmarks/results --name faithfulness_edits_rgb
    flock /work/model.lock ragmeter bench clapnq/faithfulness_edits clapnq/embedding_groundedness_edits \\
        --limit 30 --data-dir ../shared/data --out benchmarks/results --name faithfulness_edits_clapnq
    python benchmarks/faithfulness_edits.py benchmarks/results/faithfulness_edits_rgb.json \\
        benchmarks/results/faithfulness_edits_clapnq.json

Writes benchmarks/results/faithfulness_edits.md and .json: per language, faithfulness and the
embedding baseline (ROC-AUC, balanced accuracy at 0.5, 95% intervals clustered by question);
faithfulness minus the baseline on the same units (a paired bootstrap over questions); and
Chinese minus English (the two sets resampled independently, question by question).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.files import write_json, write_text
from ragmeter.report.formatting import format_estimate
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic, roc_auc

RESULTS = Path(__file__).parent / "results"
RESAMPLES = 2000
STATISTICS: dict[str, Callable[[Sequence[Mapping[str, Any]]], float]] = {
    "roc_auc": lambda units: roc_auc([u["label"] for u in units], [u["score"] for u in units]),
    "balanced_accuracy": lambda units: balanced_accuracy([u["label"] for u in units], [u["decision"] for u in units]),
}


def paired(faithfulness: Sequence[Mapping[str, Any]], baseline: Sequence[Mapping[str, Any]], name: str) -> dict[str, Any]:
    """``name`` of faithfulness minus that of the baseline on the units both scored (matched by
    question and label), with a bootstrap interval that resamples questions."""
    theirs = {(u["group"], u["label"]): u for u in baseline}
    both = [(u, theirs[(u["group"], u["label"])]) for u in faithfulness if (u["group"], u["label"]) in theirs]
    statistic = STATISTICS[name]
    rows = np.arange(len(both))

    def difference(index: np.ndarray) -> float:
        return statistic([both[i][0] for i in index]) - statistic([both[i][1] for i in index])

    return bootstrap_statistic(difference, rows, groups=[a["group"] for a, _ in both], n_resamples=RESAMPLES)


def independent(zh: Sequence[Mapping[str, Any]], en: Sequence[Mapping[str, Any]], name: str, seed: int = 0) -> dict[str, Any]:
    """``name`` on ``zh`` minus on ``en``, with a percentile interval from resampling each set's
    questions independently (resamples where either is undefined are skipped).

    Args:
        zh: The Chinese set's compared units (``score``, ``decision``, ``label``, ``group``).
        en: The English set's.
        name: A key of :data:`STATISTICS`.
        seed: Seed of the resampling.
    """
    statistic = STATISTICS[name]
    rng = np.random.default_rng(seed)
    clusters = [_clusters(units) for units in (zh, en)]
    draws = []
    for _ in range(RESAMPLES):
        resampled = [[u for k in rng.integers(0, len(c), len(c)) for u in c[k]] for c in clusters]
        try:
            values = [statistic(units) for units in resampled]
        except ValueError:  # a resample with one class only
            continue
        if all(np.isfinite(values)):
            draws.append(values[0] - values[1])
    low, high = np.percentile(draws, [2.5, 97.5]) if draws else (None, None)
    value = statistic(zh) - statistic(en)
    return {
        "value": value,
        "ci_low": None if low is None else float(low),
        "ci_high": None if high is None else float(high),
    }


def _clusters(units: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    by_group: dict[Any, list[Mapping[str, Any]]] = {}
    for unit in units:
        by_group.setdefault(unit["group"], []).append(unit)
    return list(by_group.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("zh", type=Path, help="results JSON of the rgb/*_edits tasks")
    parser.add_argument("en", type=Path, help="results JSON of the clapnq/*_edits tasks")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder to write to")
    args = parser.parse_args()
    runs = {lang: json.loads(path.read_text(encoding="utf-8")) for lang, path in (("zh", args.zh), ("en", args.en))}
    tasks = {lang: {t["metric"]: t for t in run["tasks"]} for lang, run in runs.items()}
    for lang, by_metric in tasks.items():
        missing = {"faithfulness", "embedding_groundedness"} - set(by_metric)
        if missing:
            raise SystemExit(f"{args.zh if lang == 'zh' else args.en}: no task of metric(s) {', '.join(sorted(missing))}")
    document: dict[str, Any] = {
        "sources": {lang: {k: run[k] for k in ("date", "commit")} | {"command": run["settings"]["command"]} for lang, run in runs.items()}
    }
    lines = [
        "# Faithfulness on minimal edits: Chinese (RGB) and English (ClapNQ)",
        "",
        "Each question gives two claims against the same passage: one stating a value the passage gives, "
        "one with that value replaced by a wrong one of the same kind (`src/ragmeter/bench/edits.py`). "
        "Intervals: 95% bootstrap over questions. Generated by `benchmarks/faithfulness_edits.py` from:",
        "",
        *(f"- {lang}: `{source['command']}` ({source['date']}, commit {source['commit']})" for lang, source in document["sources"].items()),
        "",
        "| set | units | faithfulness ROC-AUC | faithfulness BA at 0.5 | embedding ROC-AUC | embedding BA at 0.5 | "
        "faithfulness - embedding, ROC-AUC (paired) |",
        "|---|---:|---|---|---|---|---|",
    ]
    for lang, by_metric in tasks.items():
        faith, embed = by_metric["faithfulness"], by_metric["embedding_groundedness"]
        gain = paired(faith["units"], embed["units"], "roc_auc")
        document[lang] = {"faithfulness": faith["statistics"], "embedding_groundedness": embed["statistics"], "paired_auc_gain": gain}
        cells = [format_estimate(t["statistics"][k]) for t in (faith, embed) for k in ("roc_auc", "balanced_accuracy")]
        lines.append(f"| {faith['task']} ({lang}) | {len(faith['units'])} | {' | '.join(cells)} | {format_estimate(gain)} |")
    gap = {name: independent(tasks["zh"]["faithfulness"]["units"], tasks["en"]["faithfulness"]["units"], name) for name in STATISTICS}
    document["zh_minus_en"] = gap
    lines += [
        "",
        f"Chinese minus English, faithfulness: ROC-AUC {format_estimate(gap['roc_auc'])}, "
        f"balanced accuracy {format_estimate(gap['balanced_accuracy'])} (the two sets resampled independently).",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "faithfulness_edits.json", document)
    write_text(args.out / "faithfulness_edits.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
