"""One rule for pairing the samples of two runs, and for finding the sample a label names.

Pairing (``compare``, ``gate --baseline``, ``pairwise``, experiments)
    A sample's match key is its id when it has one, else its question (``user_input``
    NFKC-normalised, case-folded, runs of whitespace collapsed to one space and the ends
    stripped: "How  long?" and "how long?" are the same question). A sample
    of A and a sample of B are paired when their match keys are equal. A key that occurs
    more than once in a run is ambiguous: all of its samples are left out and listed as
    duplicates, and the samples of the other run with that key are listed as unmatched.
    Samples with neither id nor question, and samples whose key is absent from the other
    run, are listed as unmatched. Nothing is dropped without being listed.

Labels (``calibrate``, ``pairwise --labels``)
    A label's ``id`` names a sample by its id, or, for a sample without one, by its key in
    the run (its source and line).
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ragmeter.data.schema import Sample

T = TypeVar("T")
V = TypeVar("V")


def normalise_question(text: str | None) -> str | None:
    """The question as used for matching: NFKC-normalised, case-folded, whitespace runs
    collapsed, ends stripped; ``None`` when there is no question or it is blank."""
    if text is None:
        return None
    value = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return value or None


def match_key(sample: Sample) -> tuple[str, str] | None:
    """``("id", id)`` when the sample has an id, else ``("question", normalised question)``,
    else ``None`` (the sample cannot be matched)."""
    if sample.id is not None:
        return ("id", sample.id)
    question = normalise_question(sample.user_input)
    return ("question", question) if question is not None else None


@dataclass
class Matching(Generic[T]):
    """How the items of two runs were paired.

    Attributes:
        pairs: Matched ``(a, b)`` items, in A's order.
        unmatched_a, unmatched_b: ``{"key", "question", "reason"}`` per item left unpaired.
        duplicates_a, duplicates_b: ``{"by", "value", "keys", "reason"}`` per ambiguous key.
        n_a, n_b: Items in each run.
        kinds: What each pair was matched by (``"id"`` or ``"question"``), in pair order.
    """

    pairs: list[tuple[T, T]]
    unmatched_a: list[dict[str, Any]]
    unmatched_b: list[dict[str, Any]]
    duplicates_a: list[dict[str, Any]]
    duplicates_b: list[dict[str, Any]]
    n_a: int
    n_b: int
    kinds: list[str]

    @property
    def by(self) -> str:
        """What the pairs were matched by: "id", "question", "id and question" or "nothing"."""
        found = set(self.kinds)
        return " and ".join(k for k in ("id", "question") if k in found) or "nothing"

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "n_matched": len(self.pairs),
            "n_unmatched_a": len(self.unmatched_a),
            "n_unmatched_b": len(self.unmatched_b),
            "n_duplicate_samples_a": sum(len(d["keys"]) for d in self.duplicates_a),
            "n_duplicate_samples_b": sum(len(d["keys"]) for d in self.duplicates_b),
            "unmatched_a": self.unmatched_a,
            "unmatched_b": self.unmatched_b,
            "duplicates_a": self.duplicates_a,
            "duplicates_b": self.duplicates_b,
        }


def pair_items(a: Sequence[T], b: Sequence[T], sample: Callable[[T], Sample], key: Callable[[T], str]) -> Matching[T]:
    """Pair the items of two runs by the rule in the module docstring.

    Args:
        a, b: The items of each run (sample results, or ``(key, Sample)`` pairs).
        sample: The sample of an item.
        key: The item's key in its run (named in the unmatched and duplicate lists).
    """
    index_a, unmatchable_a = _index(a, sample)
    index_b, unmatchable_b = _index(b, sample)

    def unmatched(item: T, reason: str) -> dict[str, Any]:
        return {"key": key(item), "question": sample(item).user_input or "", "reason": reason}

    def duplicates(index: dict[tuple[str, str], list[T]]) -> list[dict[str, Any]]:
        return [
            {
                "by": by,
                "value": value if by == "id" else " ".join((sample(items[0]).user_input or "").split()),
                "keys": [key(i) for i in items],
                "reason": "ambiguous match: left out of the comparison",
            }
            for (by, value), items in index.items()
            if len(items) > 1
        ]

    pairs, kinds = [], []
    lost_a = [unmatched(i, "no id and no question to match by") for i in unmatchable_a]
    lost_b = [unmatched(i, "no id and no question to match by") for i in unmatchable_b]
    for found, items in index_a.items():
        others = index_b.get(found, [])
        if len(items) > 1:
            continue
        if len(others) == 1:
            pairs.append((items[0], others[0]))
            kinds.append(found[0])
        else:
            why = f"no sample with this {found[0]} in B" if not others else f"its {found[0]} occurs {len(others)} times in B (ambiguous)"
            lost_a.append(unmatched(items[0], why))
    for found, items in index_b.items():
        others = index_a.get(found, [])
        if len(items) == 1 and len(others) != 1:
            why = f"no sample with this {found[0]} in A" if not others else f"its {found[0]} occurs {len(others)} times in A (ambiguous)"
            lost_b.append(unmatched(items[0], why))
    return Matching(pairs, lost_a, lost_b, duplicates(index_a), duplicates(index_b), len(a), len(b), kinds)


def _index(items: Sequence[T], sample: Callable[[T], Sample]) -> tuple[dict[tuple[str, str], list[T]], list[T]]:
    index: dict[tuple[str, str], list[T]] = defaultdict(list)
    unmatchable = []
    for item in items:
        found = match_key(sample(item))
        if found is None:
            unmatchable.append(item)
        else:
            index[found].append(item)
    return index, unmatchable


def label_of(labels: Mapping[str, V], sample: Sample, key: str) -> V | None:
    """The label naming this sample: by its id, or by its key when it has no id."""
    return labels.get(sample.id if sample.id is not None else key)
