"""Completeness counted over atomic reference claims instead of reference sentences.

`factual_correctness` in recall mode checks each claim of the reference against the response
and counts the share the response covers. By default a claim is a reference sentence. On
RAGChecker's response pairs this recall agrees with the annotators' completeness preference at
about 0.41 Pearson, against RAGChecker's own 0.607: the 1.5B judge says a reference sentence is
"in the response" at a median P(yes) of 0.71, and a sentence that holds several facts reads as
present when some of them are (`correctness_evidence.md`). With ``claims: llm`` the judge first
writes the reference's atomic statements, one fact each. Does that lift recall?

This scores `factual_correctness(recall)` on the same response pairs both ways (sentences, the
default, and llm) and compares each way's score difference between a pair's two responses with
the annotators' completeness preference, as `ragmeter bench ragchecker` does, with the
difference between the two ways paired on the same units (bootstrap over response pairs).
Nothing is fitted; RAGChecker was never used to fit or choose anything.

    flock /work/model.lock python benchmarks/reference_claims.py --limit 60

Model calls go through the answer cache (`RAGMETER_CACHE_DIR`): the sentence way's verdicts are
those of `ragmeter bench ragchecker` with the same cache. Writes
benchmarks/results/reference_claims.md and .json.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from correctness_evidence import paired, write_results

from ragmeter.bench.report import git_commit
from ragmeter.bench.suites import ragchecker
from ragmeter.bench.task import DEFAULT_DATA_DIR, Task
from ragmeter.data.loading import load_dataset
from ragmeter.judges import Judges
from ragmeter.judges.config import JudgeConfig
from ragmeter.metrics import create_metric
from ragmeter.report.formatting import format_estimate
from ragmeter.run.engine import Evaluator

RESULTS = Path(__file__).parent / "results"
WAYS = ("sentences", "llm")


def completeness(data_dir: Path, limit: int, skip: int, seed: int) -> Task:
    """RAGChecker's completeness task on the pairs ``skip`` to ``limit`` of the draw by ``seed``
    (a draw of ``limit`` begins with the draw of any smaller limit, so two ranges are disjoint).
    """

    def task_of(n: int) -> Task:
        return next(t for t in ragchecker(data_dir, n, seed) if t.rating == "completeness")

    task = task_of(limit)
    if not skip:
        return task
    left_out = {unit["group"] for unit in task_of(skip).units}
    units = [unit for unit in task.units if unit["group"] not in left_out]
    kept = {key for unit in units for key in (unit["sample"], unit["versus"])}
    dataset = load_dataset([loaded.sample for loaded in task.dataset.samples if loaded.sample.id in kept])
    return replace(task, dataset=dataset, units=units)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=60, help="RAGChecker response pairs, drawn as `ragmeter bench` draws them")
    parser.add_argument(
        "--skip", type=int, default=0, help="leave out the first SKIP pairs of the draw (a later part of the same draw is disjoint)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="folder of the labelled sets")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder to write to")
    args = parser.parse_args()
    task = completeness(args.data_dir, args.limit, args.skip, args.seed)
    settings = JudgeConfig()
    judge = settings.build(settings.open_cache())
    recall: dict[str, dict[str, float]] = {way: {} for way in WAYS}
    claims: dict[str, list[int]] = {way: [] for way in WAYS}
    unscored: dict[str, dict[str, str]] = {way: {} for way in WAYS}
    seconds: dict[str, float] = {}
    for way in WAYS:
        metric = create_metric("factual_correctness", mode="recall", claims=way)
        started = time.perf_counter()
        result = Evaluator([metric], judges=Judges(llm=judge), concurrency=1).run(task.dataset)
        seconds[way] = round(time.perf_counter() - started, 1)
        for scored in result.samples:
            score = scored.scores.get(metric.id)
            if score is None or score.value is None:
                unscored[way][scored.key] = score.reason if score is not None else "not scored"
                continue
            recall[way][scored.key] = score.value
            claims[way].append(len(score.details["reference_claims"]))
    rows = []
    for unit in task.units:
        mine, other = unit["sample"], unit["versus"]
        if all(key in recall[way] for way in WAYS for key in (mine, other)):
            rows.append((*(recall[way][mine] - recall[way][other] for way in WAYS), unit["label"], unit["group"]))
    measured = paired(rows)
    document: dict[str, Any] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "judge": judge.describe(),
        "seconds": seconds,
        "reference_claims_per_response": {way: float(np.mean(claims[way])) for way in WAYS if claims[way]},
        "unscored": unscored,
        "completeness": {
            "units": measured["units"],
            "sentences": measured["plain"],
            "llm": measured["combined"],
            "difference": measured["difference"],
        },
    }
    lines = [
        "# Completeness over atomic reference claims",
        "",
        f"{document['date']}, commit {document['commit']}; command: `{document['command']}`; judge {judge.model}. "
        "`factual_correctness(recall)` with the reference's sentences as its claims (the default) and with the judge's "
        "atomic statements (`claims: llm`). Pearson of the recall difference between a pair's two responses with each "
        "annotator's completeness preference; 95% bootstrap intervals over response pairs, the difference paired on the "
        "same units. RAGChecker's own recall: 0.607; two annotators: 0.719. Nothing was fitted.",
        "",
        "| claims | reference claims per response | seconds (this run) | unscored responses | completeness Pearson |",
        "|---|---:|---:|---:|---|",
    ]
    for way, key in zip(WAYS, ("plain", "combined"), strict=True):
        per = document["reference_claims_per_response"].get(way, float("nan"))
        lines.append(f"| {way} | {per:.1f} | {seconds[way]:.0f} | {len(unscored[way])} | {format_estimate(measured[key])} |")
    lines += ["", f"llm - sentences, paired on {measured['units']} units: {format_estimate(measured['difference'])}"]
    write_results(args.out, "reference_claims", lines, document)


if __name__ == "__main__":
    main()
