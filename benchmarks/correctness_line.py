"""Where ``answer_correctness`` and ``factual_correctness`` draw their 0.5 line: the score
between a correct response and a wrong one on the same topic, fitted on one labelled set and
checked on the other.

Both metrics rank responses well (ClapNQ ROC-AUC 0.97) but their value is no probability:
``answer_correctness`` adds a quarter of the response's cosine similarity to the reference,
and the judge's p(yes) runs high, so wrong answers made of the same passage's other sentences
scored 0.36 to 0.72 and 0.5 passed many of them. The fix tried: put each metric's value on a
scale where a fitted ``line`` scores 0.5 (:func:`ragmeter.metrics.lines.at_line`, as
``answer_relevancy`` does), which keeps the order of responses, so ROC-AUC.

Two sets, each a question with a correct and a wrong response against a reference answer,
nobody here wrote the labels:

- ClapNQ: the bench task ``clapnq/answer_correctness`` (English; the annotators' answer
  sentences vs as many other sentences of the passage; the human answer as the reference);
- RGB: the bench task ``rgb/answer_correctness`` (Chinese; a sentence of a passage that gives
  the gold answer vs a related passage's sentence that does not; the gold answer as the
  reference).

For each set and metric the line is the logistic midpoint (class-balanced) of the metric's
score; each line is measured on the other set (balanced accuracy at it). The rule, set before
any figure was seen: a metric gets a line (the midpoint on both sets together) only if both
cross-set balanced accuracies beat balanced accuracy at 0.5. Neither metric met it on
2026-12-07 (``benchmarks/results/correctness_line.md``): the two sets want lines 0.18 apart;
RGB's line raises ClapNQ's balanced accuracy, but ClapNQ's lowers RGB's.

Usage:
    python benchmarks/correctness_line.py --data-dir ../shared/data [--limit 30] [--seed 0]
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from relevancy_line import balanced_accuracy, cross_set_arguments, judges_from_env, midpoint
from sklearn.metrics import roc_auc_score

from ragmeter.bench.report import git_commit
from ragmeter.bench.runner import run_task
from ragmeter.bench.suites import bench_tasks
from ragmeter.judges import Judges

RESULTS = Path(__file__).parent / "results"
METRICS = ("answer_correctness", "factual_correctness")
SETS = ("clapnq", "rgb")


def scores(data_dir: Path, limit: int, seed: int, judges: Judges) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """Each (metric, set)'s unit scores (default settings) and labels; ``limit`` questions per set
    (ClapNQ's task draws half its limit among answerable questions, so it is asked for twice)."""
    tasks = bench_tasks(["clapnq/answer_correctness"], data_dir, 2 * limit, seed) + bench_tasks(
        ["rgb/answer_correctness"], data_dir, limit, seed
    )
    out = {}
    for task in tasks:
        for metric in METRICS:
            run = run_task(replace(task, metric=metric), judges)
            units = [u for u in run.units if u["score"] is not None]
            out[(metric, task.name.split("/")[0])] = (np.array([u["score"] for u in units]), np.array([u["label"] for u in units]))
    return out


def cross_set(sets: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The cross-set rows (line fitted on one set, measured on the other) and each metric's
    midpoint on both sets together."""
    rows: list[dict[str, Any]] = []
    both: dict[str, float] = {}
    for metric in METRICS:
        for fitted, measured in (SETS, SETS[::-1]):
            line = midpoint(*sets[(metric, fitted)])
            values, labels = sets[(metric, measured)]
            rows.append(
                {
                    "metric": metric,
                    "fitted_on": fitted,
                    "measured_on": measured,
                    "units": len(labels),
                    "line": round(line, 3),
                    "ba_at_0.5": round(balanced_accuracy(values, labels, 0.5), 3),
                    "ba_at_line": round(balanced_accuracy(values, labels, line), 3),
                }
            )
        both[metric] = round(midpoint(*(np.concatenate(parts) for parts in zip(*(sets[(metric, s)] for s in SETS), strict=True))), 3)
    return rows, both


def main() -> None:
    args = cross_set_arguments(__doc__.split("\n\n")[0])
    judges = judges_from_env()
    sets = scores(args.data_dir, args.limit, args.seed, judges)
    rows, both = cross_set(sets)
    auc = {m: {s: round(float(roc_auc_score(sets[(m, s)][1], sets[(m, s)][0])), 3) for s in SETS} for m in METRICS}
    adopted = {m: all(r["ba_at_line"] > r["ba_at_0.5"] for r in rows if r["metric"] == m) for m in METRICS}
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "judge": judges.require_llm().describe().get("model"),
        "limit": args.limit,
        "seed": args.seed,
        "cross_set": rows,
        "roc_auc": auc,
        "line_on_both": both,
        "rule_met": adopted,
    }
    command = f"python benchmarks/correctness_line.py --data-dir ../shared/data --limit {args.limit} --seed {args.seed}"
    lines = [
        "# answer_correctness and factual_correctness: the line between correct and wrong responses, checked across sets",
        "",
        f"{document['date']}, commit {document['commit']}; judge `{document['judge']}`; {args.limit} questions per set, seed {args.seed}.",
        f"Command: `{command}`",
        "",
        "Each set: a question with a correct response and a wrong one on the same topic, against a reference answer (ClapNQ:",
        "English, annotators' answer sentences vs other sentences of the passage; RGB: Chinese, a sentence giving the gold",
        "answer vs a related passage's sentence). The score is the metric's, default settings. The line is the logistic",
        "midpoint fitted on one set; balanced accuracy is measured on the other set, at 0.5 and at the line.",
        "Rule, set beforehand: a metric gets a line only if both cross-set balanced accuracies beat those at 0.5.",
        "",
        "| metric | fitted on | measured on | units | line | BA at 0.5 | BA at the line |",
        "|---|---|---|---:|---:|---:|---:|",
        *(
            f"| {r['metric']} | {r['fitted_on']} | {r['measured_on']} | {r['units']} | {r['line']:.3f} | {r['ba_at_0.5']:.3f} "
            f"| {r['ba_at_line']:.3f} |"
            for r in rows
        ),
        "",
        *(
            f"- {m}: ROC-AUC {', '.join(f'{s} {auc[m][s]:.3f}' for s in SETS)} (any monotone scale keeps it); "
            f"midpoint on both sets {both[m]:.3f}; rule {'met' if adopted[m] else 'not met'}."
            for m in METRICS
        ),
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "correctness_line.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    (RESULTS / "correctness_line.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
