"""ClapNQ as benchmark tasks: questions with a gold passage, annotator-selected answer
sentences and a human answer, half of them unanswerable (see :func:`clapnq`).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from ragmeter.bench.edits import clapnq_pairs
from ragmeter.bench.task import Task, draw, edit_tasks, read_rows
from ragmeter.data import load_dataset


def clapnq_answerable(data_dir: Path, limit: int | None, seed: int) -> list[dict[str, Any]]:
    """The answerable ClapNQ questions :func:`clapnq` draws for this ``limit`` (the
    answerable half) and ``seed``, in order."""
    rows = read_rows(data_dir / "clapnq_dev.jsonl")
    return draw([r for r in rows if r["answerable"]], None if limit is None else limit - limit // 2, seed)


def clapnq(data_dir: Path, limit: int | None, seed: int) -> list[Task]:
    """ClapNQ (``limit``: questions, half answerable, half not).

    Answerable questions get as retrieved contexts the gold passage's sentences mixed with
    as many sentences from other questions' passages (shuffled, seeded):

    - context precision: each sentence's usefulness against the annotators' selection
      (with the human answer as the reference, and without a reference with the human
      answer as the response);
    - context recall and context entity recall: some gold sentences are left out at
      random, and the metric is compared with the share of annotator-selected sentences
      that remain;
    - answer relevancy: the question's own human answer (relevant) and the next
      question's (not relevant);
    - answer correctness: the annotator-selected sentences as a response (correct) and as
      many of the passage's other sentences (wrong: same topic, same words, not the
      answer), against the human answer.

    All questions (answerable and not) test whether the judge sees that the passage holds
    no answer: the answerable-vs-unanswerable verdict of negative rejection. Faithfulness on
    minimal edits of the human answers is :func:`clapnq_faithfulness_edits`.
    """
    rows = read_rows(data_dir / "clapnq_dev.jsonl")
    answerable = clapnq_answerable(data_dir, limit, seed)
    unanswerable = draw([r for r in rows if not r["answerable"]], None if limit is None else limit // 2, seed)
    rng = random.Random(seed)
    noise_pool = [s for r in rows for s in r["passage_sentences"]]
    built: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
        k: ([], []) for k in ("precision", "recall", "correctness", "utilization")
    }
    for row in answerable:
        _clapnq_units(row, noise_pool, rng, built)
    answerability: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    for row in answerable + unanswerable:
        sample_id = f"cq-{row['id']}"
        response = "I cannot find the answer in the documents."
        answerability[0].append(
            {"id": sample_id, "user_input": row["question"], "retrieved_contexts": row["passage_sentences"], "response": response}
        )
        answerability[1].append({"sample": sample_id, "label": int(row["answerable"]), "group": sample_id, "part": None})
    specs = [
        ("clapnq/context_precision", "context_precision", built["precision"], "binary", "per sentence vs annotator selection"),
        (
            "clapnq/context_precision_without_reference",
            "context_precision_without_reference",
            built["precision"],
            "binary",
            "per sentence vs annotator selection; the human answer as the response",
        ),
        ("clapnq/context_recall", "context_recall", built["recall"], "graded", "vs share of gold sentences kept"),
        ("clapnq/context_entity_recall", "context_entity_recall", built["recall"], "graded", "vs share of gold sentences kept"),
        (
            "clapnq/answer_correctness",
            "answer_correctness",
            built["correctness"],
            "binary",
            "gold sentences vs the passage's other sentences",
        ),
        (
            "clapnq/context_utilization",
            "context_utilization",
            built["utilization"],
            "binary",
            "gold sentences vs the passage's other sentences, the gold passage retrieved",
        ),
        ("clapnq/answer_relevancy", "answer_relevancy", relevancy_pairs(answerable), "binary", "own human answer vs another question's"),
        ("clapnq/answerability", "negative_rejection", answerability, "binary", "answerable vs unanswerable questions"),
    ]
    tasks = [Task(name, metric, load_dataset(samples), units, kind, reference) for name, metric, (samples, units), kind, reference in specs]
    return tasks + clapnq_faithfulness_edits(data_dir, limit, seed)


def clapnq_faithfulness_edits(data_dir: Path, limit: int | None, seed: int) -> list[Task]:
    """English faithfulness on minimal edits, the twin of :func:`~ragmeter.bench.rgb.rgb_faithfulness_edits`
    (``limit``: answerable questions, two claims each): the human reference answer against
    the gold passage (label 1), and the same answer with one number, date or name that the
    passage states replaced by a wrong one of the same kind that it never states (label 0)
    (:func:`ragmeter.bench.edits.clapnq_pairs`)."""
    rows = [r for r in read_rows(data_dir / "clapnq_dev.jsonl") if r["answerable"]]
    return edit_tasks("clapnq", clapnq_pairs(rows, draw(rows, None, seed), limit, seed))


def relevancy_pairs(answerable: list[dict[str, Any]], prefix: str = "cq") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Answer relevancy samples and units: each question (``{"id", "question",
    "reference_answer"}``) with its own answer (relevant) and with the next question's answer
    (on another topic: not relevant); sample ids start with ``prefix``."""
    samples: list[dict[str, Any]] = []
    units: list[dict[str, Any]] = []
    if len(answerable) < 2:
        return samples, units
    for n, row in enumerate(answerable):
        other = answerable[(n + 1) % len(answerable)]
        for suffix, response, label in (("own", row["reference_answer"], 1), ("other", other["reference_answer"], 0)):
            sample_id = f"{prefix}-{row['id']}-{suffix}"
            samples.append({"id": sample_id, "user_input": row["question"], "response": response})
            units.append({"sample": sample_id, "label": label, "group": f"{prefix}-{row['id']}", "part": None})
    return samples, units


def _clapnq_units(
    row: dict[str, Any], noise_pool: list[str], rng: random.Random, built: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]
) -> None:
    """The context precision, recall and answer correctness samples and units of one
    answerable ClapNQ question (see :func:`clapnq`), appended to ``built``."""
    gold_set = set(row["gold_sentences"])
    gold = [s for s in row["passage_sentences"] if s in gold_set]
    if not gold:
        return
    sample_id = f"cq-{row['id']}"
    others = [s for s in noise_pool if s not in set(row["passage_sentences"])]
    contexts = row["passage_sentences"][:8] + rng.sample(others, min(len(row["passage_sentences"]), 8))
    rng.shuffle(contexts)
    # The human answer is both the reference and, for the metrics that need no reference, the response.
    built["precision"][0].append(
        {
            "id": sample_id,
            "user_input": row["question"],
            "retrieved_contexts": contexts,
            "reference": row["reference_answer"],
            "response": row["reference_answer"],
        }
    )
    built["precision"][1].extend(
        {"sample": sample_id, "label": int(context in set(gold)), "group": sample_id, "part": index}
        for index, context in enumerate(contexts)
    )
    kept = [s for s in gold if rng.random() < 0.5] if len(gold) > 1 else gold[: rng.randint(0, 1)]
    recall_contexts = kept + rng.sample(others, 4)
    rng.shuffle(recall_contexts)
    built["recall"][0].append(
        {"id": sample_id, "user_input": row["question"], "retrieved_contexts": recall_contexts, "reference": row["reference_answer"]}
    )
    built["recall"][1].append({"sample": sample_id, "label": len(kept) / len(gold), "group": sample_id, "part": None})
    # Wrong: as many of the passage's other sentences: same topic and words, not the answer.
    others_in_passage = [s for s in row["passage_sentences"] if s not in set(gold)][: len(gold)]
    responses = [("right", " ".join(gold), 1)] + ([("wrong", " ".join(others_in_passage), 0)] if others_in_passage else [])
    for suffix, response, label in responses:
        sample = {"id": f"{sample_id}-{suffix}", "user_input": row["question"], "response": response, "reference": row["reference_answer"]}
        built["correctness"][0].append(sample)
        # The same responses with the gold passage retrieved: does the response use what it holds?
        built["utilization"][0].append({**sample, "retrieved_contexts": row["passage_sentences"]})
        for kind in ("correctness", "utilization"):
            built[kind][1].append({"sample": f"{sample_id}-{suffix}", "label": label, "group": sample_id, "part": None})
