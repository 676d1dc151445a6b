"""RGB zh (Chinese queries, gold answers, passages that hold the answer and passages that only
look related) turned into benchmark tasks: context relevance, faithfulness (easy and on
minimal edits), answer correctness and noise sensitivity.

The file is read once for all of them (:func:`rgb`); each builder takes its rows.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmeter.bench.edits import rgb_pairs, spellings, zh_claim
from ragmeter.bench.task import Task, draw, edit_tasks, read_rows, relevance_task
from ragmeter.data import load_dataset
from ragmeter.data.text import split_sentences

#: Longest sentence a response is built from, in characters: RGB passages hold unpunctuated
#: runs of a whole page, which would be no answer at all.
LONGEST_SENTENCE = 200


def rgb(data_dir: Path, limit: int | None, seed: int) -> list[Task]:
    """Chinese context relevance (``limit``: passages): positive passages contain the
    answer, negative ones are related but do not; and Chinese faithfulness, easy
    (:func:`rgb_faithfulness`) and minimally edited (:func:`rgb_faithfulness_edits`),
    answer correctness (:func:`rgb_answer_correctness`) and noise sensitivity
    (:func:`rgb_noise_sensitivity`), ``limit``: questions. The file is read once for all of them."""
    rows = read_rows(data_dir / "rgb_zh_refine.jsonl")
    return [
        relevance_task("rgb/context_relevance", _triples(rows), limit, seed, "rgb"),
        *rgb_faithfulness(rows, limit, seed),
        *rgb_faithfulness_edits(rows, limit, seed),
        rgb_answer_correctness(rows, limit, seed),
        *rgb_noise_sensitivity(rows, limit, seed),
    ]


def rgb_triples(data_dir: Path) -> list[tuple[str, str, int]]:
    """Every RGB Chinese (query, passage, label) in file order: 1 if the passage contains
    the answer, 0 if it is related but does not."""
    return _triples(read_rows(data_dir / "rgb_zh_refine.jsonl"))


def _triples(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """The (query, passage, label) of RGB ``rows`` (see :func:`rgb_triples`)."""
    triples = []
    for row in rows:
        triples += [(row["query"], p, 1) for p in row["positive"]] + [(row["query"], p, 0) for p in row["negative"]]
    return triples


def rgb_faithfulness(rows: list[dict[str, Any]], limit: int | None, seed: int) -> list[Task]:
    """Chinese groundedness (``limit``: questions of the RGB ``rows``). A question's first gold answer is the
    response, judged once against one of its positive passages (label 1: the passage
    gives the answer) and once against one of its negative passages (label 0: on the
    topic, without the answer), each drawn with the seed and the question's id. In RGB
    nearly every positive passage contains the answer's exact string and nearly no
    negative one does, so this checks that the Chinese path works rather than judging a
    hard case; ``embedding_groundedness`` runs beside it."""
    samples, units = [], []
    for row in draw(rows, limit, seed):
        answer = row["answer"][0]
        while isinstance(answer, list):  # a list of accepted spellings: the first
            answer = answer[0]
        pick = random.Random(f"{seed}-{row['id']}")
        for kind, label in (("positive", 1), ("negative", 0)):
            sample_id = f"rgb-{row['id']}-{kind}"
            samples.append(
                {"id": sample_id, "user_input": row["query"], "retrieved_contexts": [pick.choice(row[kind])], "response": answer}
            )
            units.append({"sample": sample_id, "label": label, "group": f"rgb-{row['id']}", "part": None})
    dataset = load_dataset(samples)
    return [
        Task("rgb/faithfulness", "faithfulness", dataset, units, "binary", "ROC-AUC target 0.85 (within 0.05 of English)"),
        Task("rgb/embedding_groundedness", "embedding_groundedness", dataset, units, "binary", "embedding baseline"),
    ]


def rgb_faithfulness_edits(rows: list[dict[str, Any]], limit: int | None, seed: int) -> list[Task]:
    """Chinese faithfulness on minimal edits (``limit``: questions of the RGB ``rows``, two claims each): the
    claim "<query>：<gold answer>。" against a positive passage that contains the answer
    (label 1), and the same claim with the answer replaced by a wrong one of the same kind
    that the passage never states (label 0), against the same passage
    (:func:`ragmeter.bench.edits.rgb_pairs`). The English twin is
    :func:`~ragmeter.bench.clapnq.clapnq_faithfulness_edits`."""
    return edit_tasks("rgb", rgb_pairs(rows, draw(rows, None, seed), limit, seed))


def rgb_answer_correctness(rows: list[dict[str, Any]], limit: int | None, seed: int) -> Task:
    """Chinese answer correctness (``limit``: questions of the RGB ``rows``), the twin of ClapNQ's. The reference is
    the claim that the first gold answer answers the question (:func:`~ragmeter.bench.edits.zh_claim`);
    against it, the sentence of a positive passage that holds an accepted answer and shares the
    most characters with the query (correct), and the sentence of a negative passage that shares
    the most characters with the query and holds no accepted answer (wrong: same topic and
    words, not the answer). Questions without both sentences are left out."""
    samples, units = [], []
    for row in draw(rows, None, seed):
        found = _answer_and_noise(row)
        if found is None:
            continue
        reference, right, wrong, _ = found
        group = f"rgbc-{row['id']}"
        for suffix, (response, _), label in (("right", right, 1), ("wrong", wrong, 0)):
            samples.append({"id": f"{group}-{suffix}", "user_input": row["query"], "response": response, "reference": reference})
            units.append({"sample": f"{group}-{suffix}", "label": label, "group": group, "part": None})
        if limit is not None and len(samples) >= 2 * limit:
            break
    reference = "a sentence giving the gold answer vs a related one that does not"
    return Task("rgb/answer_correctness", "answer_correctness", load_dataset(samples), units, "binary", reference)


def rgb_noise_sensitivity(rows: list[dict[str, Any]], limit: int | None, seed: int) -> list[Task]:
    """Chinese noise sensitivity (``limit``: questions of the RGB ``rows``, three responses each). The
    retrieved contexts are a positive passage and a negative one; the reference is the claim that
    the first gold answer answers the question (:func:`~ragmeter.bench.edits.zh_claim`). The
    responses, each the sentence that shares the most characters with the query among:

    - *right*: the positive passage's sentences that hold an accepted answer (label 0 in both tasks);
    - *relevant noise*: that passage's sentences that hold none (label 1 in
      ``rgb/noise_sensitivity``, whose default mode counts wrong claims taken from a relevant chunk);
    - *irrelevant noise*: the negative passage's sentences that hold none (label 1 in
      ``rgb/noise_sensitivity(irrelevant)``).

    Label 1 means the response repeats the noise, and a higher score means more noise taken in.
    Both tasks judge the same samples, so the second is answered from the cache. Questions
    without all three sentences are left out."""
    samples: list[dict[str, Any]] = []
    relevant_units: list[dict[str, Any]] = []
    irrelevant_units: list[dict[str, Any]] = []
    for row in draw(rows, None, seed):
        found = _answer_and_noise(row)
        if found is None:
            continue
        reference, right, irrelevant, relevant = found
        if relevant is None:
            continue
        group = f"rgbn-{row['id']}"
        contexts = [right[1], irrelevant[1]]
        for suffix, (response, _) in (("right", right), ("relevant", relevant), ("irrelevant", irrelevant)):
            samples.append(
                {
                    "id": f"{group}-{suffix}",
                    "user_input": row["query"],
                    "response": response,
                    "reference": reference,
                    "retrieved_contexts": contexts,
                }
            )
        for units, noisy in ((relevant_units, "relevant"), (irrelevant_units, "irrelevant")):
            units += [
                {"sample": f"{group}-{suffix}", "label": int(suffix == noisy), "group": group, "part": None} for suffix in ("right", noisy)
            ]
        if limit is not None and len(samples) >= 3 * limit:
            break
    dataset = load_dataset(samples)
    return [
        Task(
            "rgb/noise_sensitivity",
            "noise_sensitivity",
            dataset,
            relevant_units,
            "binary",
            "answer sentence vs a sentence of its passage without it",
        ),
        Task(
            "rgb/noise_sensitivity(irrelevant)",
            "noise_sensitivity",
            dataset,
            irrelevant_units,
            "binary",
            "answer sentence vs a sentence of a related passage without it",
            {"mode": "irrelevant"},
        ),
    ]


def _answer_and_noise(row: dict[str, Any]) -> tuple[str, tuple[str, str], tuple[str, str], tuple[str, str] | None] | None:
    """For one RGB ``row``: the reference (the claim that its first gold answer answers the query),
    the positive passages' sentence nearest the query that holds an accepted answer, the negative
    passages' nearest that holds none, and the nearest sentence without one in the first one's
    passage (``None`` when it has none), each with its passage (:func:`_nearest_sentence`);
    ``None`` when either of the first two sentences is missing."""
    accepted = [s for entry in row["answer"] for s in spellings(entry)]
    right = _nearest_sentence(row["query"], row["positive"], accepted, holds=True)
    wrong = _nearest_sentence(row["query"], row["negative"], accepted, holds=False)
    if right is None or wrong is None:
        return None
    beside = _nearest_sentence(row["query"], [right[1]], accepted, holds=False)
    return zh_claim(row["query"], accepted[0]), right, wrong, beside


def _nearest_sentence(query: str, passages: Sequence[str], answers: Sequence[str], holds: bool) -> tuple[str, str] | None:
    """The sentence of ``passages`` (at most :data:`LONGEST_SENTENCE` characters) that shares
    the most distinct characters with ``query`` (the first on a tie) among those that hold one
    of ``answers`` (``holds``) or none of them (not ``holds``), with the passage it is from."""
    candidates = [
        (s, p) for p in passages for s in split_sentences(p) if len(s) <= LONGEST_SENTENCE and any(a in s for a in answers) == holds
    ]
    return max(candidates, key=lambda c: len(set(c[0]) & set(query)), default=None)
