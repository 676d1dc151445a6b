"""Two systems' responses to the same questions, paired for judging.

Each side is a sample file or a run directory; samples are paired by the matching rule of
:mod:`ragmeter.decide.matching` (id, else question), and a reference winner comes from
labels (``{"id": ..., "better": "A" | "B" | "tie"}``) or from a metric both sides have.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data import InputIssue, load_dataset
from ragmeter.data.schema import Sample
from ragmeter.decide.labels import Labels, preference, read_labels
from ragmeter.decide.matching import label_of, normalise_question, pair_items
from ragmeter.results import Result


@dataclass(frozen=True)
class Pair:
    """Two responses to the same question.

    Attributes:
        key: Identifier of the pair (the sample id, or side A's key).
        question: The question both responses answer.
        response_a: Response of system A.
        response_b: Response of system B.
        reference: Which response a reference signal says is better: ``"a"``, ``"b"``,
            ``"tie"``, or ``None`` when there is no reference.
        lang: Prompt language (``"en"``/``"zh"``); ``None`` detects it from the question.
    """

    key: str
    question: str
    response_a: str
    response_b: str
    reference: str | None = None
    lang: str | None = None

    def __post_init__(self) -> None:
        if self.reference not in (None, "a", "b", "tie"):
            raise ValueError(f"pair {self.key}: reference must be 'a', 'b', 'tie' or None, got {self.reference!r}")


@dataclass
class Side:
    """The samples of one side, with their keys, the scores when it is a run directory, and the
    problems of a sample file's rows (each row skipped or sample kept, as ``eval`` reads them)."""

    path: str
    samples: list[tuple[str, Sample]]
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)  # key -> metric -> value
    higher_is_better: dict[str, bool] = field(default_factory=dict)
    issues: list[InputIssue] = field(default_factory=list)


def load_side(path: str | Path) -> Side:
    """A run directory (``ragmeter eval`` output) or a sample file.

    Raises:
        FileNotFoundError, InputError, ValueError: The path cannot be read.
    """

    path = Path(path)
    if path.is_dir():
        result = Result.load(path)
        scores = {r.key: {m: s.value for m, s in r.scores.items()} for r in result.samples}
        better = {m["id"]: bool(m.get("higher_is_better", True)) for m in result.metrics}
        return Side(str(path), [(r.key, r.sample) for r in result.samples], scores, better)
    dataset = load_dataset(path)
    return Side(str(path), [(s.key, s.sample) for s in dataset], issues=list(dataset.issues))


def _reference_from(side_a: Side, side_b: Side, key_a: str, key_b: str, sample_a: Sample, sample_b: Sample, metric: str) -> str | None:
    """Which side a metric (or a numeric metadata field) says is better, or None."""

    def value(side: Side, key: str, sample: Sample) -> float | None:
        found = side.scores.get(key, {}).get(metric)
        if found is None:
            found = sample.metadata.get(metric)
        return float(found) if isinstance(found, (int, float)) and not isinstance(found, bool) and math.isfinite(found) else None

    a, b = value(side_a, key_a, sample_a), value(side_b, key_b, sample_b)
    if a is None or b is None:
        return None
    if a == b:
        return "tie"
    higher = side_a.higher_is_better.get(metric, side_b.higher_is_better.get(metric, True))
    return ("a" if a > b else "b") if higher else ("a" if a < b else "b")


def read_preferences(path: str | Path) -> Labels[str]:
    """Reference labels from JSON lines ``{"id": ..., "better": "A" | "B" | "tie"}``
    (see :mod:`ragmeter.decide.labels`)."""
    return read_labels(path, "better", preference)


def match_samples(
    side_a: Side,
    side_b: Side,
    *,
    reference_metric: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> tuple[list[Pair], dict[str, Any]]:
    """Pairs of samples answering the same question, by the matching rule of
    :mod:`ragmeter.decide.matching` (id, else question). Samples without a question or a
    response cannot be judged and are listed as unusable.

    A reference winner comes from ``labels`` (by sample id, or key for samples without one)
    or, failing that, from ``reference_metric`` (a metric of both run directories, or a
    numeric metadata field of both sample files; its direction from the run's metric
    description).

    Returns:
        The pairs, and a report: the matching (``by``, ``unmatched_a``, ``unmatched_b``,
        ``duplicates_a``, ``duplicates_b``...), ``unusable`` (key, side and reason),
        ``questions_differ``, the sides' input issues, and ``labels_unmatched``: the ids of
        labels that name no pair (a typo, a sample in one side only), which give no reference.
    """
    unusable: list[dict[str, str]] = []

    def usable(side_name: str, side: Side) -> list[tuple[str, Sample]]:
        kept = []
        for key, sample in side.samples:
            missing = [f for f in ("user_input", "response") if not (getattr(sample, f) or "").strip()]
            if missing:
                unusable.append({"side": side_name, "key": key, "reason": f"no {' and no '.join(missing)}"})
            else:
                kept.append((key, sample))
        return kept

    matching = pair_items(usable("A", side_a), usable("B", side_b), lambda item: item[1], lambda item: item[0])
    pairs: list[Pair] = []
    questions_differ: list[str] = []
    labelled: set[str] = set()
    for (key_a, sample_a), (key_b, sample_b) in matching.pairs:
        labelled.add(sample_a.id if sample_a.id is not None else key_a)
        if normalise_question(sample_a.user_input) != normalise_question(sample_b.user_input):
            questions_differ.append(key_a)
        reference = label_of(labels, sample_a, key_a) if labels is not None else None
        if reference is None and reference_metric:
            reference = _reference_from(side_a, side_b, key_a, key_b, sample_a, sample_b, reference_metric)
        pairs.append(Pair(key_a, sample_a.user_input or "", sample_a.response or "", sample_b.response or "", reference))
    report = {
        "a": side_a.path,
        "b": side_b.path,
        **matching.to_dict(),
        "n_pairs": len(pairs),
        "unusable": unusable,
        "questions_differ": questions_differ,
        "input_issues": {"A": [str(i) for i in side_a.issues], "B": [str(i) for i in side_b.issues]},
        "reference": "labels" if labels is not None else (f"metric {reference_metric}" if reference_metric else None),
        "n_with_reference": sum(p.reference is not None for p in pairs),
        "labels_unmatched": [key for key in labels or {} if key not in labelled],
    }
    return pairs, report
