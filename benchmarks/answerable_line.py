"""Where the ``answerable`` verdict should draw its line when it decides that a generated
"unanswerable" question is answered by the knowledge base after all.

``ragmeter generate`` rejects an unanswerable question (``answer_in_knowledge_base``) when the
local judge's P(yes) that a chunk "contains the information needed to answer the question"
reaches a line, for any of the closest chunks. Two errors follow from that line:

- too low: a truly unanswerable question on the chunk's topic is rejected (a good test item
  lost). The reads in ``benchmarks/results/generate_review.md`` found such questions rejected
  at P 0.50 to 0.72;
- too high: a question the chunk does answer is kept and labelled unanswerable (a wrong test
  item, which is worse).

This script measures the verdict on human-labelled (question, passage) pairs nobody here wrote,
in both languages: ClapNQ dev (English; the gold passage of an answerable question answers it,
the passage of an unanswerable one is on its topic and does not) and RGB zh (Chinese; a
``positive`` passage holds the answer, a ``negative`` one is related and does not). For each set
it reports ROC-AUC, and for several lines the share of answerable pairs under the line (wrong
items kept) and of unanswerable pairs at or over it (good items lost). The line is then fitted
on one set (the highest line that leaves at most :data:`MISSED` of its answerable pairs under
it) and reported on the other.

Usage:
    python benchmarks/answerable_line.py --data-dir ../shared/data [--per-class 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.bench.report import git_commit
from ragmeter.data.files import write_json, write_text
from ragmeter.judges.local import LocalJudge
from ragmeter.results.stats import bootstrap_statistic, roc_auc

#: Lines reported for each set.
LINES = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9)
#: Most share of a set's answerable pairs a fitted line may leave under it.
MISSED = 0.05


def clapnq_pairs(path: Path, per_class: int, seed: int) -> list[dict[str, Any]]:
    """``per_class`` answerable and unanswerable ClapNQ questions, each with its passage."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(seed)
    pairs = []
    for label in (1, 0):
        chosen = rng.sample([r for r in rows if int(bool(r["answerable"])) == label], per_class)
        pairs += [{"id": r["id"], "question": r["question"], "premise": r["passage"], "label": label} for r in chosen]
    return pairs


def rgb_pairs(path: Path, per_class: int, seed: int) -> list[dict[str, Any]]:
    """``per_class`` RGB zh queries with their first positive passage and as many other queries
    with their first negative passage (distinct queries, so that no query is in both classes)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("positive") and r.get("negative")]
    chosen = random.Random(seed).sample(rows, 2 * per_class)
    pairs = []
    for i, row in enumerate(chosen):
        label = int(i < per_class)
        premise = row["positive"][0] if label else row["negative"][0]
        pairs.append({"id": str(row["id"]), "question": row["query"], "premise": premise, "label": label})
    return pairs


async def judge_pairs(judge: LocalJudge, pairs: list[dict[str, Any]], lang: str) -> tuple[list[float], float]:
    """P(yes) of the ``answerable`` verdict for each pair, and the seconds it took."""
    start = time.perf_counter()
    p = []
    for pair in pairs:
        verdict = (await judge.verdicts("answerable", {"premise": pair["premise"]}, [pair["question"]], lang))[0]
        p.append(float(verdict.p_yes))
    return p, time.perf_counter() - start


def rates(labels: np.ndarray, p: np.ndarray, line: float) -> dict[str, float]:
    """Share of answerable pairs under ``line`` (kept wrongly) and of unanswerable pairs at or
    over it (lost)."""
    return {
        "answerable_under": round(float(np.mean(p[labels == 1] < line)), 3),
        "unanswerable_over": round(float(np.mean(p[labels == 0] >= line)), 3),
    }


def fitted_line(labels: np.ndarray, p: np.ndarray) -> float:
    """The highest line leaving at most :data:`MISSED` of the answerable pairs under it: the
    P(yes) of the answerable pair at that rank."""
    answerable = np.sort(p[labels == 1])
    allowed = int(np.floor(MISSED * len(answerable)))
    return round(float(answerable[allowed]), 3)


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: one table of the sets, one of the lines, one of the fits."""
    lines = [
        "# The `answerable` verdict's line for unanswerable generated questions",
        "",
        f"{report['date']}, commit {report['commit']}; packaged Qwen2.5-Coder-1.5B Q4_K_M, {report['threads']} threads; "
        f"seed {report['seed']}, {report['per_class']} pairs per class and set. Generated by `benchmarks/answerable_line.py`.",
        "",
        "Command: `" + report["command"] + "`",
        "",
        "A pair is a question and one passage. *Answerable under*: share of the answerable pairs whose P(yes) is under the "
        "line, i.e. a question the passage answers that the filter would keep as unanswerable (a wrong test item). "
        "*Unanswerable over*: share of the unanswerable pairs at or over it, i.e. a good unanswerable question lost "
        "(the filter asks each of the 3 closest chunks, so the loss per question is higher).",
        "",
        "| set | pairs | ROC-AUC [95% CI] | P answerable: median (min) | P unanswerable: median (max) | s / pair |",
        "|---|---:|---|---|---|---:|",
    ]
    for name, s in report["sets"].items():
        auc = s["roc_auc"]
        lines.append(
            f"| {name} | {s['pairs']} | {auc['value']:.3f} [{auc['low']:.3f}, {auc['high']:.3f}] | "
            f"{s['answerable_median']:.2f} ({s['answerable_min']:.2f}) | {s['unanswerable_median']:.2f} ({s['unanswerable_max']:.2f}) | "
            f"{s['seconds_per_pair']:.1f} |"
        )
    lines += ["", "| line | " + " | ".join(f"{n}: answerable under / unanswerable over" for n in report["sets"]) + " |"]
    lines.append("|---:|" + "---|" * len(report["sets"]))
    for line in LINES:
        cells = [
            f"{s['lines'][str(line)]['answerable_under']:.3f} / {s['lines'][str(line)]['unanswerable_over']:.3f}"
            for s in report["sets"].values()
        ]
        lines.append(f"| {line} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Fitted on one set (the highest line leaving at most {MISSED:.0%} of its answerable pairs under it), reported on the other:",
        "",
    ]
    lines += ["| fitted on | line | reported on | answerable under | unanswerable over |", "|---|---:|---|---:|---:|"]
    for fit in report["fits"]:
        lines.append(
            f"| {fit['fitted_on']} | {fit['line']:.3f} | {fit['reported_on']} | {fit['answerable_under']:.3f} | {fit['unanswerable_over']:.3f} |"
        )
    return "\n".join(lines) + "\n"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(args.data_dir)
    sets = {
        "ClapNQ dev (en)": (clapnq_pairs(data / "clapnq_dev.jsonl", args.per_class, args.seed), "en"),
        "RGB zh": (rgb_pairs(data / "rgb_zh_refine.jsonl", args.per_class, args.seed), "zh"),
    }
    judge = LocalJudge(threads=args.threads)
    report: dict[str, Any] = {"sets": {}, "units": {}}
    try:
        for name, (pairs, lang) in sets.items():
            p, seconds = await judge_pairs(judge, pairs, lang)
            labels, scores = np.array([x["label"] for x in pairs]), np.array(p)
            auc = bootstrap_statistic(roc_auc, labels, scores, seed=args.seed)
            report["sets"][name] = {
                "pairs": len(pairs),
                "roc_auc": {"value": auc["value"], "low": auc["ci_low"], "high": auc["ci_high"]},
                "answerable_median": float(np.median(scores[labels == 1])),
                "answerable_min": float(scores[labels == 1].min()),
                "unanswerable_median": float(np.median(scores[labels == 0])),
                "unanswerable_max": float(scores[labels == 0].max()),
                "seconds_per_pair": seconds / len(pairs),
                "lines": {str(line): rates(labels, scores, line) for line in LINES},
            }
            report["units"][name] = [{"id": x["id"], "label": x["label"], "p_yes": round(q, 4)} for x, q in zip(pairs, p, strict=True)]
    finally:
        await judge.aclose()
    report["fits"] = []
    names = list(sets)
    for fit_on in names:
        units = report["units"][fit_on]
        line = fitted_line(np.array([u["label"] for u in units]), np.array([u["p_yes"] for u in units]))
        for other in (n for n in names if n != fit_on):
            held = report["units"][other]
            measured = rates(np.array([u["label"] for u in held]), np.array([u["p_yes"] for u in held]), line)
            report["fits"].append({"fitted_on": fit_on, "line": line, "reported_on": other, **measured})
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="../shared/data", help="Folder of clapnq_dev.jsonl and rgb_zh_refine.jsonl.")
    parser.add_argument("--per-class", type=int, default=40, help="Pairs per class (answerable, unanswerable) and set.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the sample and of the bootstrap.")
    parser.add_argument("--threads", type=int, default=2, help="Threads of the local judge.")
    parser.add_argument("--out", default="benchmarks/results", help="Folder of answerable_line.json and .md.")
    args = parser.parse_args()
    report = asyncio.run(run(args))
    report.update(
        date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        commit=git_commit(),
        seed=args.seed,
        per_class=args.per_class,
        threads=args.threads,
        command=f"python benchmarks/answerable_line.py --data-dir {args.data_dir} --per-class {args.per_class} --seed {args.seed}",
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "answerable_line.json", report)
    write_text(out / "answerable_line.md", markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
