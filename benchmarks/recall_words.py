"""Recall counted by the judge alone or by the judge and the claim's words.

A recall metric checks each claim of the reference against a text (the response for
`factual_correctness(recall)` and `answer_correctness`, the retrieved contexts for
`context_recall`). With `word_coverage` a claim's probability of being covered is the mean
of the judge's p(yes) and the share of the claim's content words the text uses
(`src/ragmeter/metrics/coverage.py`). Nothing is fitted: the plain mean was chosen on the
first 60 RAGChecker response pairs of the draw, after the words alone had done better than
the judge there; this measures it on those, on the next pairs of the same draw (disjoint),
and on ClapNQ's context recall, a set it was not chosen on: the first questions of the draw
(`--clapnq-read`), read when it was adopted for context recall, and the others, never read
before this run. It is the default of `context_recall` and off by default for the two
correctness metrics, whose held-out RAGChecker pairs did not follow it.

- RAGChecker (response pairs): Pearson of each way's score difference (response 2 minus
  response 1) with the annotators' preference, as `ragmeter bench ragchecker` does: recall
  with completeness (on `--pairs`), F1 and answer correctness with the overall rating (on
  `--overall-pairs`: they also need the response claims' verdicts); the difference between
  the ways paired on the same units, bootstrap over response pairs.
- ClapNQ context recall: answerable questions whose contexts keep some of the annotators'
  answer sentences (`ragmeter bench clapnq/context_recall`); Pearson of the score with the
  share kept, three ways: decided on the judge's p(yes) (the default before), expected
  shares of p(yes), expected shares with words (the default now); bootstrap over questions.

    flock /work/model.lock python benchmarks/recall_words.py --pairs 120 --overall-pairs 60 --chosen 60 --clapnq 120 --clapnq-read 60

Every way reads the same verdicts through the answer cache (`RAGMETER_CACHE_DIR`): the words
cost no model call. Writes benchmarks/results/recall_words.md and .json.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from correctness_evidence import paired, write_results

from ragmeter.bench.clapnq import clapnq
from ragmeter.bench.report import git_commit
from ragmeter.bench.suites import ragchecker
from ragmeter.bench.task import DEFAULT_DATA_DIR, Task
from ragmeter.judges import BatchingEmbedder, Judges
from ragmeter.judges.cache import EmbeddingStore
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.metrics import create_metric
from ragmeter.report.formatting import format_estimate
from ragmeter.results.stats import bootstrap_statistic, pearson
from ragmeter.run.engine import Evaluator

RESULTS = Path(__file__).parent / "results"
RESAMPLES = 2000
#: RAGChecker: the metric (name, parameters), the rating it is compared with, and whether it
#: is measured on the ``--overall-pairs`` (it needs the response claims' verdicts too).
RAGCHECKER = {
    "factual_correctness(recall)": ("factual_correctness", {"mode": "recall"}, "completeness", False),
    "factual_correctness": ("factual_correctness", {}, "overall", True),
    "answer_correctness": ("answer_correctness", {}, "overall", True),
}
#: ClapNQ context recall: each way's parameters.
CONTEXT_RECALL = {
    "decided, judge alone": {"counting": "decided", "word_coverage": False},
    "expected, judge alone": {"counting": "expected", "word_coverage": False},
    "expected, judge and words": {"counting": "expected", "word_coverage": True},
}


def scores_of(task: Task, metric: str, params: Mapping[str, Any], judges: Judges) -> dict[str, float]:
    """Each scored sample's value under ``metric`` with ``params`` (unscored ones left out)."""
    made = create_metric(metric, **params)
    result = Evaluator([made], judges=judges, concurrency=1).run(task.dataset)
    out = {}
    for scored in result.samples:
        score = scored.scores.get(made.id)
        if score is not None and score.value is not None:
            out[scored.key] = score.value
    return out


def measured(rows: list[tuple[float, float, float, Any]]) -> dict[str, Any]:
    """:func:`paired` figures of ``rows``, or none (``units`` 0) when there are no rows."""
    return paired(rows) if rows else {"units": 0}


def ragchecker_task(data_dir: Path, pairs: int, seed: int, rating: str) -> Task:
    """The task of ``ragmeter bench ragchecker`` that compares a score with ``rating`` (the
    overall one: answer correctness's) on the first ``pairs`` pairs of the draw."""
    tasks = ragchecker(data_dir, pairs, seed)
    if rating == "overall":
        return next(t for t in tasks if t.name == "ragchecker/answer_correctness")
    return next(t for t in tasks if t.name.startswith("ragchecker/factual_correctness(") and t.rating == rating)


def ragchecker_rows(data_dir: Path, pairs: int, overall_pairs: int, chosen: int, seed: int, judges: Judges) -> dict[str, Any]:
    """Per score, the paired figures on the pairs the mean was chosen on, on the others, and on all."""
    first = {unit["group"] for unit in ragchecker_task(data_dir, chosen, seed, "overall").units}
    out: dict[str, Any] = {}
    for name, (metric, params, rating, needs_precision) in RAGCHECKER.items():
        task = ragchecker_task(data_dir, overall_pairs if needs_precision else pairs, seed, rating)
        judge_only = scores_of(task, metric, {**params, "word_coverage": False}, judges)
        with_words = scores_of(task, metric, {**params, "word_coverage": True}, judges)
        rows = [
            (judge_only[u["sample"]] - judge_only[u["versus"]], with_words[u["sample"]] - with_words[u["versus"]], u["label"], u["group"])
            for u in task.units
            if all(key in judge_only and key in with_words for key in (u["sample"], u["versus"]))
        ]
        out[name] = {
            "rating": rating,
            "pairs": len({r[3] for r in rows}),
            "chosen on": measured([r for r in rows if r[3] in first]),
            "held out": measured([r for r in rows if r[3] not in first]),
            "all": measured(rows),
        }
    return out


def clapnq_rows(data_dir: Path, limit: int, read: int, seed: int, judges: Judges) -> dict[str, Any]:
    """Per part of the ClapNQ draw (the questions of the draw of ``read``, read before; the
    others; all): Pearson of each way of counting context recall with the share of gold
    sentences kept, and each way minus the first, paired."""

    def task_of(n: int) -> Task:
        return next(t for t in clapnq(data_dir, n, seed) if t.name == "clapnq/context_recall")

    task, seen = task_of(limit), {u["sample"] for u in task_of(read).units}
    values = {way: scores_of(task, "context_recall", params, judges) for way, params in CONTEXT_RECALL.items()}
    units = [u for u in task.units if all(u["sample"] in v for v in values.values())]
    parts = {
        "read before": [u for u in units if u["sample"] in seen],
        "never read": [u for u in units if u["sample"] not in seen],
        "all": units,
    }
    return {part: context_recall_figures(chosen, values) for part, chosen in parts.items() if chosen}


def context_recall_figures(units: list[dict[str, Any]], values: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """Pearson of each way's scores of ``units`` with their labels, and each way minus the first."""
    data = np.array([[*(values[way][u["sample"]] for way in CONTEXT_RECALL), u["label"]] for u in units], dtype=float)
    label = len(CONTEXT_RECALL)

    def way(column: int):
        return lambda d: pearson(d[:, column], d[:, label])

    out: dict[str, Any] = {"units": len(units)}
    for column, name in enumerate(CONTEXT_RECALL):
        out[name] = bootstrap_statistic(way(column), data, n_resamples=RESAMPLES)
        if column:
            out[f"{name} minus decided"] = bootstrap_statistic(lambda d, c=column: way(c)(d) - way(0)(d), data, n_resamples=RESAMPLES)
    return out


def table(document: Mapping[str, Any]) -> list[str]:
    """The Markdown report."""
    lines = [
        "# Recall by the judge alone, or by the judge and the claim's words",
        "",
        f"{document['date']}, commit {document['commit']}; command: `{document['command']}`; judge {document['judge']}. "
        "Nothing was fitted. The mean of p(yes) and word coverage was chosen on the first "
        f"{document['chosen']} RAGChecker response pairs of the draw; the others are held out, and so is ClapNQ "
        "(its first questions were read when the mean was adopted for context recall; the others never). "
        "95% bootstrap intervals.",
        "",
        "## RAGChecker: Pearson of the score difference with the annotators' preference",
        "",
        "| score | rating | pairs | units | judge alone | judge and words | words minus judge |",
        "|---|---|---|---:|---|---|---|",
    ]
    for name, parts in document["ragchecker"].items():
        for part in ("chosen on", "held out", "all"):
            m = parts[part]
            if not m["units"]:
                continue
            lines.append(
                f"| {name} | {parts['rating']} | {part} | {m['units']} | {format_estimate(m['plain'])} | "
                f"{format_estimate(m['combined'])} | {format_estimate(m['difference'])} |"
            )
    lines += [
        "",
        "## ClapNQ context recall: Pearson with the share of answer sentences kept",
        "",
        "| questions | units | counting | Pearson | minus decided, judge alone |",
        "|---|---:|---|---|---|",
    ]
    for part, c in document["clapnq"].items():
        for n, name in enumerate(CONTEXT_RECALL):
            gain = format_estimate(c[f"{name} minus decided"]) if n else "–"
            lines.append(f"| {part} | {c['units']} | {name} | {format_estimate(c[name])} | {gain} |")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=120, help="RAGChecker response pairs, drawn as `ragmeter bench` draws them")
    parser.add_argument(
        "--overall-pairs", type=int, default=60, help="the first pairs of the draw F1 and answer correctness are measured on"
    )
    parser.add_argument("--chosen", type=int, default=60, help="the first CHOSEN pairs of the draw, on which the mean was chosen")
    parser.add_argument("--clapnq", type=int, default=120, help="ClapNQ questions drawn (half answerable: the context recall units)")
    parser.add_argument("--clapnq-read", type=int, default=60, help="the ClapNQ draw whose questions were read before")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draws")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="folder of the labelled sets")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder to write to")
    args = parser.parse_args(argv)
    settings = JudgeConfig()
    cache = settings.open_cache()
    judge = settings.build(cache)
    judges = Judges(embedder=BatchingEmbedder(store=EmbeddingStore(cache, USEEncoder.model_name) if cache else None), llm=judge)
    document: dict[str, Any] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "judge": judge.model,
        "chosen": args.chosen,
        "ragchecker": ragchecker_rows(args.data_dir, args.pairs, args.overall_pairs, args.chosen, args.seed, judges),
        "clapnq": clapnq_rows(args.data_dir, args.clapnq, args.clapnq_read, args.seed, judges),
    }
    write_results(args.out, "recall_words", table(document), document)


if __name__ == "__main__":
    main()
