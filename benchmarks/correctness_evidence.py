"""Tried and not adopted: correctness counted by the claim-support head instead of the judge's P(yes).

`answer_correctness` and `factual_correctness` count each claim by the judge's P(yes) (the
expected share of claims that hold). Faithfulness counts its claims by a calibrated
P(supported) instead: P(yes) combined with the numbers, names and negations the premise
lacks, through the head in `src/ragmeter/resources/claim_support_head.json`, fitted on QAGS
and SummEdits claims. Would the same head lift correctness, where the 1.5B judge finds a
reference claim "in the response" too easily (README, RAGChecker)? RAGChecker was never used
to fit or choose anything, so it is held out here.

This scores `answer_correctness` (default settings) once on RAGChecker's response pairs and,
from each claim's verdict in the details (P(yes) and the evidence sentences shown), counts
every score both ways: plain (P(yes), the default) and combined (the head's P(supported), as
faithfulness does). Each way's score difference (response 2 minus response 1) is compared with
the annotators' preference, as `ragmeter bench ragchecker` does: precision with the
correctness rating, recall with completeness, F1 and answer correctness with the overall one.
The difference between the two ways is paired (same units), with a bootstrap interval that
resamples response pairs.

    flock /work/model.lock python benchmarks/correctness_evidence.py --limit 60

Model calls go through the answer cache (`RAGMETER_CACHE_DIR`): a run after `ragmeter bench
ragchecker --limit 60` with the same cache reads every verdict from it. Writes
benchmarks/results/correctness_evidence.md and .json.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.bench.report import git_commit
from ragmeter.bench.suites import ragchecker
from ragmeter.bench.task import DEFAULT_DATA_DIR
from ragmeter.data.files import write_json, write_text
from ragmeter.judges import BatchingEmbedder, Judges, Verdict
from ragmeter.judges.cache import EmbeddingStore
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.metrics import create_metric
from ragmeter.metrics.claim_support import packaged_head, supported_probability
from ragmeter.metrics.correctness import f_beta
from ragmeter.report.formatting import format_estimate
from ragmeter.results.stats import bootstrap_statistic, pearson
from ragmeter.run.engine import Evaluator

RESULTS = Path(__file__).parent / "results"
RESAMPLES = 2000
#: Each score, the RAGChecker rating it is compared with, and how it is made from precision,
#: recall and the embedding similarity (answer correctness' default weights 0.75 and 0.25).
SCORES: dict[str, tuple[str, Callable[[float, float, float], float]]] = {
    "factual_correctness(precision)": ("correctness", lambda p, r, s: p),
    "factual_correctness(recall)": ("completeness", lambda p, r, s: r),
    "factual_correctness": ("overall", lambda p, r, s: f_beta(p, r)),
    "answer_correctness": ("overall", lambda p, r, s: 0.75 * f_beta(p, r) + 0.25 * s),
}


def shares(details: Mapping[str, Any], response: str, reference: str) -> dict[str, tuple[float, float]]:
    """(precision, recall) of one scored sample, plain and combined.

    Args:
        details: The answer_correctness score's details (claims with ``p_yes`` and ``evidence``).
        response: The response, the premise of the reference's claims.
        reference: The reference, the premise of the response's claims.
    """
    head = packaged_head()
    out = {}
    for way in ("plain", "combined"):
        values = []
        for side, premise in (("response_claims", reference), ("reference_claims", response)):
            claims = details[side]
            if way == "plain":
                values.append(float(np.mean([c["p_yes"] for c in claims])))
            else:
                verdicts = [Verdict(p_yes=c["p_yes"], evidence=c.get("evidence")) for c in claims]
                values.append(
                    float(np.mean([supported_probability(head, c["claim"], premise, v) for c, v in zip(claims, verdicts, strict=True)]))
                )
        out[way] = (values[0], values[1])
    return out


def paired(rows: Sequence[tuple[float, float, float, Any]]) -> dict[str, Any]:
    """Pearson of each way's score difference with the label, and combined minus plain.

    Args:
        rows: (plain difference, combined difference, label, response pair) per unit.
    """
    data = np.array([r[:3] for r in rows], dtype=float)
    groups = [r[3] for r in rows]

    def way(column: int):
        return lambda d: pearson(d[:, column], d[:, 2])

    return {
        "units": len(rows),
        "plain": bootstrap_statistic(way(0), data, groups=groups, n_resamples=RESAMPLES),
        "combined": bootstrap_statistic(way(1), data, groups=groups, n_resamples=RESAMPLES),
        "difference": bootstrap_statistic(lambda d: way(1)(d) - way(0)(d), data, groups=groups, n_resamples=RESAMPLES),
    }


def write_results(out: Path, name: str, lines: Sequence[str], document: Mapping[str, Any]) -> None:
    """Write a benchmark's table (``lines``) to ``out/name.md`` and ``document`` to ``out/name.json``; print the table."""
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / f"{name}.md", "\n".join(lines) + "\n")
    write_json(out / f"{name}.json", document)
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=60, help="RAGChecker response pairs, drawn as `ragmeter bench` draws them")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draw")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="folder of the labelled sets")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder to write to")
    args = parser.parse_args()
    # One task per rating: its units hold that rating; all of them share the same samples.
    by_name = {t.name: t for t in ragchecker(args.data_dir, args.limit, args.seed)}
    overall = by_name["ragchecker/answer_correctness"]
    tasks = {
        by_name[f"ragchecker/factual_correctness({mode})"].rating: by_name[f"ragchecker/factual_correctness({mode})"]
        for mode in ("precision", "recall")
    }
    tasks["overall"] = overall
    settings = JudgeConfig()
    cache = settings.open_cache()
    judge = settings.build(cache)
    judges = Judges(embedder=BatchingEmbedder(store=EmbeddingStore(cache, USEEncoder.model_name) if cache else None), llm=judge)
    result = Evaluator([create_metric("answer_correctness")], judges=judges, concurrency=1).run(overall.dataset)
    samples = {s.sample.id: s.sample for s in overall.dataset.samples}
    scores: dict[str, dict[str, dict[str, float]]] = {}
    unscored = 0
    for scored in result.samples:
        score = scored.scores.get("answer_correctness")
        if score is None or score.value is None:
            unscored += 1
            continue
        sample = samples[scored.key]
        similarity = score.details.get("similarity", 0.0)
        made = shares(score.details, sample.response or "", sample.reference or "")
        scores[scored.key] = {way: {name: make(*made[way], similarity) for name, (_, make) in SCORES.items()} for way in made}
    document: dict[str, Any] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "command": "python " + " ".join(shlex.quote(a) for a in sys.argv),
        "judge": judge.describe(),
        "head": packaged_head().description,
        "unscored_responses": unscored,
        "scores": {},
    }
    lines = [
        "# Correctness counted by the claim-support head: tried, not adopted",
        "",
        f"{document['date']}, commit {document['commit']}; command: `{document['command']}`; judge {judge.model}. "
        f"The same claim verdicts of `answer_correctness` counted two ways: by the judge's P(yes) (plain, the default) "
        f"and by the head's P(supported) (combined; {document['head']}). RAGChecker was never used to fit it. "
        "Pearson of the score difference between a pair's two responses with each annotator's preference; "
        f"95% bootstrap intervals over response pairs, the difference paired on the same units. "
        f"{unscored} responses unscored (empty), their pairs left out.",
        "",
        "| score | rating | units | plain | combined | combined - plain |",
        "|---|---|---:|---|---|---|",
    ]
    for name, (rating, _) in SCORES.items():
        rows = []
        for unit in tasks[rating].units:
            mine, other = scores.get(unit["sample"]), scores.get(unit["versus"])
            if mine is None or other is None:
                continue
            rows.append(
                (mine["plain"][name] - other["plain"][name], mine["combined"][name] - other["combined"][name], unit["label"], unit["group"])
            )
        measured = paired(rows)
        document["scores"][name] = {"rating": rating, **measured}
        cells = " | ".join(format_estimate(measured[k]) for k in ("plain", "combined", "difference"))
        lines.append(f"| {name} | {rating} | {measured['units']} | {cells} |")
    write_results(args.out, "correctness_evidence", lines, document)


if __name__ == "__main__":
    main()
