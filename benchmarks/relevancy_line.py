"""Where ``answer_relevancy`` draws its 0.5 line: the mean question similarity between relevant
and unrelated responses, fitted on one labelled set and checked on the other.

``answer_relevancy`` compares the question with 3 questions the judge writes from the response
(USE cosine, RAGAS's method). The mean similarity ranks responses well, but it is no
probability: unrelated responses sit near 0.1 to 0.3 and relevant ones from 0.25 up, so a 0.5
line called many relevant responses irrelevant. The metric now puts its mean similarity on a
scale where ``line`` scores 0.5 (:func:`ragmeter.metrics.lines.at_line`); the
order of responses, so ROC-AUC, is unchanged.

Two sets, each a question with its own answer (relevant) and with another drawn question's
answer (unrelated), nobody here wrote either:

- ClapNQ: the bench task ``clapnq/answer_relevancy`` (human answers, Wikipedia questions);
- RAGChecker: ``response_1`` of the first annotator's rows (answers of RAG systems, long,
  several domains), the next drawn question's response as the unrelated one.

For each set the line is the logistic midpoint (class-balanced) of the raw mean similarity;
each line is measured on the other set (balanced accuracy at it), and the shipped line is the
midpoint on both sets together, rounded to two decimals.

Usage:
    python benchmarks/relevancy_line.py --data-dir ../shared/data [--limit 30] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from ragmeter.bench.clapnq import clapnq, relevancy_pairs
from ragmeter.bench.report import git_commit
from ragmeter.bench.runner import run_task
from ragmeter.bench.task import Task, draw, read_rows
from ragmeter.data import load_dataset
from ragmeter.judges import BatchingEmbedder, Judges
from ragmeter.judges.cache import EmbeddingStore
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.embeddings import USEEncoder

RESULTS = Path(__file__).parent / "results"
#: The metric run with its line at 0.5: the score is then the raw mean similarity.
RAW = {"line": 0.5}


def ragchecker_task(data_dir: Path, limit: int, seed: int) -> Task:
    """``limit`` RAGChecker questions, each with its own ``response_1`` (label 1) and the next
    drawn question's (label 0)."""
    rows = [r for r in read_rows(data_dir / "ragchecker_meta_eval.jsonl") if r["annotator_slot"] == 0]
    picked = [{"id": r["instance_id"], "question": r["question"], "reference_answer": r["response_1"]} for r in draw(rows, limit, seed)]
    samples, units = relevancy_pairs(picked, prefix="rc")
    return Task("ragchecker/answer_relevancy", "answer_relevancy", load_dataset(samples), units, "binary", params=RAW)


def midpoint(scores: np.ndarray, labels: np.ndarray) -> float:
    """The similarity where a class-balanced logistic fit of ``labels`` on ``scores`` is 0.5."""
    fit = LogisticRegression(class_weight="balanced", C=1e6).fit(scores[:, None], labels)
    return float(-fit.intercept_[0] / fit.coef_[0][0])


def balanced_accuracy(scores: np.ndarray, labels: np.ndarray, line: float) -> float:
    """Balanced accuracy of deciding "relevant" when the score reaches ``line``."""
    said = scores >= line
    return float((said[labels == 1].mean() + (~said[labels == 0]).mean()) / 2)


def cross_set_arguments(description: str) -> argparse.Namespace:
    """The options of a script that fits a line on one labelled set and checks it on another:
    ``--data-dir``, ``--limit`` (questions drawn from each set) and ``--seed``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    parser.add_argument("--limit", type=int, default=30, help="questions drawn from each set")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def judges_from_env() -> Judges:
    """The judge the environment's settings describe (the local one by default) and the packaged
    embedder, both answering from the one disk cache, as ``ragmeter bench`` opens them."""
    settings = JudgeConfig.from_env()
    cache = settings.open_cache()
    return Judges(
        embedder=BatchingEmbedder(store=EmbeddingStore(cache, USEEncoder.model_name) if cache else None), llm=settings.build(cache)
    )


def main() -> None:
    args = cross_set_arguments(__doc__.split("\n\n")[0])
    judges = judges_from_env()
    (cq,) = [t for t in clapnq(args.data_dir, args.limit, args.seed) if t.name == "clapnq/answer_relevancy"]
    tasks = [Task(cq.name, cq.metric, cq.dataset, cq.units, cq.kind, params=RAW), ragchecker_task(args.data_dir, args.limit, args.seed)]
    sets: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for task in tasks:
        units = [u for u in run_task(task, judges).units if u["score"] is not None]
        sets[task.name.split("/")[0]] = (np.array([u["score"] for u in units]), np.array([u["label"] for u in units]))

    rows: list[dict[str, Any]] = []
    for fitted, measured in (("ragchecker", "clapnq"), ("clapnq", "ragchecker")):
        line = midpoint(*sets[fitted])
        scores, labels = sets[measured]
        rows.append(
            {
                "fitted_on": fitted,
                "measured_on": measured,
                "units": len(labels),
                "line": round(line, 3),
                "ba_raw_at_0.5": round(balanced_accuracy(scores, labels, 0.5), 3),
                "ba_at_line": round(balanced_accuracy(scores, labels, line), 3),
            }
        )
    both = midpoint(np.concatenate([s for s, _ in sets.values()]), np.concatenate([y for _, y in sets.values()]))
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "judge": judges.require_llm().describe().get("model"),
        "limit": args.limit,
        "seed": args.seed,
        "cross_set": rows,
        "line_on_both": round(both, 3),
        "shipped_line": round(both, 2),
    }
    lines = [
        "# answer_relevancy: the line between relevant and unrelated responses, checked across sets",
        "",
        f"{document['date']}, commit {document['commit']}; judge `{document['judge']}`; {args.limit} questions per set, seed {args.seed}.",
        f"Command: `python benchmarks/relevancy_line.py --data-dir ../shared/data --limit {args.limit} --seed {args.seed}`",
        "",
        "Each set: a question with its own answer (relevant) and with another question's (unrelated); the score is the raw",
        "mean similarity of the judge's 3 questions to the question. The line is the logistic midpoint fitted on one set;",
        "balanced accuracy is measured on the other set, at 0.5 on the raw similarity (the old score) and at the line.",
        "",
        "| fitted on | measured on | units | line | BA at 0.5, raw | BA at the line |",
        "|---|---|---:|---:|---:|---:|",
        *(
            f"| {r['fitted_on']} | {r['measured_on']} | {r['units']} | {r['line']:.3f} | {r['ba_raw_at_0.5']:.3f} | {r['ba_at_line']:.3f} |"
            for r in rows
        ),
        "",
        f"Midpoint on both sets together: {both:.3f}; shipped as `RELEVANCE_LINE` = {round(both, 2):.2f}"
        " (`ragmeter/metrics/relevance.py`). ROC-AUC is unchanged: the scale keeps the order of responses.",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "relevancy_line.json").write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    (RESULTS / "relevancy_line.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
