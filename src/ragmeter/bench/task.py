"""A comparison of a metric with human labels (:class:`Task`), and what the suites of
:mod:`ragmeter.bench.suites` share to build them: reading a labelled file, a seeded draw, the
minimal-edit and context relevance tasks.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.bench.edits import Pairs
from ragmeter.data import Dataset, load_dataset
from ragmeter.data.encodings import not_utf8
from ragmeter.data.files import json_object, read_json_lines

#: Where the labelled sets are read from unless told (``--data-dir``).
DEFAULT_DATA_DIR = Path("../shared/data")


@dataclass
class Task:
    """One comparison of a metric with human labels.

    Attributes:
        name: Short name (``"qags/faithfulness"``).
        metric: The metric spec to run (``"faithfulness"``).
        dataset: The samples.
        units: What is compared, one entry per judged unit: ``{"sample", "label", "group",
            "part"}``; ``part`` picks a sub-score (a chunk's index) or is ``None`` for the
            sample's score; ``group`` clusters units that are not independent (an article).
        kind: ``"binary"`` (labels 0/1: balanced accuracy and ROC-AUC), ``"graded"``
            (continuous truth: Pearson and Spearman) or ``"preference"`` (labels are
            preferences between two samples: Pearson and Spearman of the score difference).
        reference: Published reference points to print beside the result.
        params: Parameters of the metric (``{"counting": "decided"}``); default settings
            when empty.
        rating: Which of the set's human ratings the units carry, for a set with several
            (RAGChecker's ``"correctness"``, ``"completeness"``, ``"overall"``); empty otherwise.
    """

    name: str
    metric: str
    dataset: Dataset
    units: list[dict[str, Any]]
    kind: str
    reference: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    rating: str = ""


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a labelled JSONL file, one per line.

    Args:
        path: The file, in the folder given by ``--data-dir``.

    Raises:
        FileNotFoundError: The file is missing (the message says to pass --data-dir).
        ValueError: The file cannot be read (a folder, not readable), is not UTF-8 (the message
            names its first bad line and the encoding it may be in: :func:`not_utf8`), or a line
            is not a JSON object; the message names the file and line.
    """
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: pass --data-dir with the folder of the labelled sets")
    try:
        lines = list(read_json_lines(path))
    except UnicodeDecodeError as exc:  # the message named neither the file nor the line
        where, said = not_utf8(path, exc)
        raise ValueError(f"{path}, {where}: {said}") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the labelled set: {exc.strerror or exc}") from None
    rows = []
    for number, line in lines:
        try:
            rows.append(json_object(line))
        except ValueError as exc:
            raise ValueError(f"{path}, line {number}: {exc}") from None
    return rows


def draw(rows: list, limit: int | None, seed: int) -> list:
    """``limit`` of ``rows`` (all when ``None``) in an order shuffled by ``seed``: the same
    arguments draw the same rows."""
    rows = list(rows)
    random.Random(seed).shuffle(rows)
    return rows if limit is None else rows[:limit]


def edit_tasks(suite: str, pairs: Pairs) -> list[Task]:
    """Faithfulness and the embedding baseline on a minimal-edit set."""
    dataset = load_dataset(pairs.samples)
    target = f"ROC-AUC target 0.85, zh within 0.05 of en; {pairs.counts_text()}"
    return [
        Task(f"{suite}/faithfulness_edits", "faithfulness", dataset, pairs.units, "binary", target),
        Task(f"{suite}/embedding_groundedness_edits", "embedding_groundedness", dataset, pairs.units, "binary", "embedding baseline"),
    ]


def relevance_draw(triples: list[tuple[str, str, int]], limit: int | None, seed: int) -> list[tuple[str, str, int]]:
    """The (query, passage, label) triples a relevance task with this ``limit`` and
    ``seed`` measures, before duplicates of a query's passage are dropped."""
    return draw(triples, limit, seed)


def relevance_task(name: str, triples: list[tuple[str, str, int]], limit: int | None, seed: int, prefix: str) -> Task:
    """Context relevance on (query, passage, label) ``triples`` (``limit``: passages, drawn by
    :func:`relevance_draw`): the passages of one query are the retrieved contexts of one sample
    (ids start with ``prefix``), and each passage is a unit judged against the query."""
    chosen = relevance_draw(triples, limit, seed)
    by_query: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for query, passage, label in chosen:
        if passage not in {p for p, _ in by_query[query]}:
            by_query[query].append((passage, label))
    samples, units = [], []
    for number, (query, passages) in enumerate(sorted(by_query.items())):
        sample_id = f"{prefix}-{number}"
        samples.append({"id": sample_id, "user_input": query, "retrieved_contexts": [p for p, _ in passages]})
        units += [{"sample": sample_id, "label": label, "group": sample_id, "part": index} for index, (_, label) in enumerate(passages)]
    return Task(name, "context_relevance", load_dataset(samples), units, "binary", "ROC-AUC target 0.85")
