"""Rank metrics over binary relevance, as plain functions.

Each function takes ``relevance``: one boolean per retrieved item, best-ranked first, and
where it matters ``n_relevant``: how many relevant items exist in total (retrieved or
not). ``k`` cuts the ranking to its first ``k`` items; ``None`` keeps all of it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _cut(relevance: Sequence[bool], k: int | None) -> Sequence[bool]:
    return relevance if k is None else relevance[:k]


def precision(relevance: Sequence[bool], k: int | None = None) -> float:
    """Share of the (first ``k``) retrieved items that are relevant. Needs one item."""
    ranked = _cut(relevance, k)
    if not ranked:
        raise ValueError("precision of an empty ranking is undefined")
    return sum(ranked) / len(ranked)


def recall(relevance: Sequence[bool], n_relevant: int, k: int | None = None) -> float:
    """Share of all relevant items that appear in the (first ``k``) retrieved ones."""
    if n_relevant < 1:
        raise ValueError("recall is undefined when nothing is relevant")
    return min(sum(_cut(relevance, k)), n_relevant) / n_relevant


def f1(precision_value: float, recall_value: float) -> float:
    """Harmonic mean of precision and recall (0 when both are 0)."""
    total = precision_value + recall_value
    return 0.0 if total == 0 else 2 * precision_value * recall_value / total


def first_relevant_rank(relevance: Sequence[bool], k: int | None = None) -> int | None:
    """1-based rank of the first relevant item, or ``None`` when none is relevant."""
    for rank, relevant in enumerate(_cut(relevance, k), start=1):
        if relevant:
            return rank
    return None


def hit(relevance: Sequence[bool], k: int | None = None) -> float:
    """1.0 when a relevant item is among the first ``k``, else 0.0."""
    return 1.0 if any(_cut(relevance, k)) else 0.0


def reciprocal_rank(relevance: Sequence[bool], k: int | None = None) -> float:
    """1 / rank of the first relevant item; 0.0 when none is relevant."""
    rank = first_relevant_rank(relevance, k)
    return 0.0 if rank is None else 1.0 / rank


def average_precision(relevance: Sequence[bool], n_relevant: int, k: int | None = None) -> float:
    """Average of precision@i over the ranks i of relevant items, divided by the number of
    relevant items that could have been found: ``n_relevant`` (trec_eval's AP), or
    ``min(n_relevant, k)`` when cut at ``k`` (trec_eval's ``map_cut`` keeps ``n_relevant``,
    so a perfect top ``k`` scores 1 here but less there). Relevant items never retrieved
    count as precision 0.
    """
    ranked = _cut(relevance, k)
    denominator = n_relevant if k is None else min(n_relevant, k)
    if denominator < 1:
        raise ValueError("average precision is undefined when nothing is relevant")
    hits, total = 0, 0.0
    for rank, relevant in enumerate(ranked, start=1):
        if relevant:
            hits += 1
            total += hits / rank
    return min(total / denominator, 1.0)


def ndcg(relevance: Sequence[bool], n_relevant: int, k: int | None = None) -> float:
    """Normalised discounted cumulative gain with binary gains and log2(rank + 1) discount.

    The ideal ranking puts ``min(n_relevant, k)`` relevant items first.
    """
    ranked = _cut(relevance, k)
    if n_relevant < 1:
        raise ValueError("nDCG is undefined when nothing is relevant")
    dcg = sum(1.0 / math.log2(rank + 1) for rank, relevant in enumerate(ranked, start=1) if relevant)
    ideal_hits = n_relevant if k is None else min(n_relevant, k)
    idcg = sum(1.0 / math.log2(rank + 1) for rank in range(1, ideal_hits + 1))
    return min(dcg / idcg, 1.0)
