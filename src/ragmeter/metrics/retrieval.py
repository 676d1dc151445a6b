"""Retrieval metrics that need no model: by context id, and by string similarity.

Id metrics compare ``retrieved_context_ids`` (best first) with the set
``reference_context_ids``; ids match exactly. A retriever that returns the same id twice
is credited once: duplicates are dropped, keeping the first, and the details say so.
With ``@k`` (``ndcg@5``) only the first ``k`` retrieved ids count.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from typing import Any

from rapidfuzz.distance import Levenshtein

from ragmeter.data.issues import describe_briefly
from ragmeter.data.schema import Sample
from ragmeter.data.text import normalize
from ragmeter.metrics import ranking
from ragmeter.metrics.base import Metric, Score, finite_number
from ragmeter.metrics.registry import CUTOFF_DIGITS, register

_IDS = ("retrieved_context_ids", "reference_context_ids")


def _judged_ids(sample: Sample, k: int | None) -> tuple[list[bool], int, dict] | Score:
    """Relevance of each retrieved id, the number of relevant ids, and details; or why not."""
    relevant = list(dict.fromkeys(sample.reference_context_ids or []))
    if not relevant:
        return Score.unscored(
            "reference_context_ids is empty: with no relevant context there is nothing to retrieve (typical of an unanswerable question)"
        )
    retrieved_all = sample.retrieved_context_ids or []
    retrieved = list(dict.fromkeys(retrieved_all))
    ranked = retrieved if k is None else retrieved[:k]
    relevant_set = set(relevant)
    relevance = [r in relevant_set for r in ranked]
    details: dict[str, Any] = {
        "retrieved": ranked,
        "relevant": relevant,
        "relevant_retrieved": [r for r in ranked if r in relevant_set],
    }
    if len(retrieved) != len(retrieved_all):
        details["duplicates_removed"] = len(retrieved_all) - len(retrieved)
    return relevance, len(relevant), details


class _IdMetric(Metric):
    required = _IDS
    family = "retrieval"

    k: int | None

    def __post_init__(self) -> None:
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k < 10**CUTOFF_DIGITS):
            raise ValueError(
                f"{self.name}: the cut-off k must be a positive integer of at most {CUTOFF_DIGITS} digits, got {describe_briefly(self.k)}"
            )
        super().__post_init__()

    async def score(self, sample: Sample, judges) -> Score:
        judged = _judged_ids(sample, self.k)
        if isinstance(judged, Score):
            return judged
        relevance, n_relevant, details = judged
        return self.from_relevance(relevance, n_relevant, details)

    def from_relevance(self, relevance: list[bool], n_relevant: int, details: dict) -> Score:
        raise NotImplementedError

    def _found(self, details: dict) -> str:
        cut = "" if self.k is None else f" in the top {self.k}"
        return f"{len(details['relevant_retrieved'])} of {len(details['relevant'])} relevant contexts retrieved{cut}"


@register
@dataclass(frozen=True)
class RetrievalPrecision(_IdMetric):
    """Share of retrieved contexts that are relevant: |relevant ∩ retrieved| / |retrieved|.

    Unscored when nothing was retrieved (precision of an empty list is undefined).
    """

    name = "retrieval_precision"
    k: int | None = None

    def from_relevance(self, relevance, n_relevant, details):
        if not relevance:
            return Score.unscored("nothing was retrieved, so precision is undefined", details)
        value = ranking.precision(relevance)
        return Score(value, f"{sum(relevance)} of {len(relevance)} retrieved contexts are relevant", details=details)


@register
@dataclass(frozen=True)
class RetrievalRecall(_IdMetric):
    """Share of relevant contexts that were retrieved: |relevant ∩ retrieved| / |relevant|."""

    name = "retrieval_recall"
    k: int | None = None

    def from_relevance(self, relevance, n_relevant, details):
        return Score(ranking.recall(relevance, n_relevant), self._found(details), details=details)


@register
@dataclass(frozen=True)
class RetrievalF1(_IdMetric):
    """Harmonic mean of retrieval precision and recall (0 when nothing was retrieved)."""

    name = "retrieval_f1"
    k: int | None = None

    def from_relevance(self, relevance, n_relevant, details):
        if not relevance:
            return Score(0.0, "nothing was retrieved: recall is 0, so F1 is 0", details=details)
        p, r = ranking.precision(relevance), ranking.recall(relevance, n_relevant)
        details = {**details, "precision": p, "recall": r}
        return Score(ranking.f1(p, r), f"precision {p:.2f}, recall {r:.2f}", details=details)


@register
@dataclass(frozen=True)
class HitRate(_IdMetric):
    """1 when at least one relevant context was retrieved (in the top k), else 0."""

    name = "hit_rate"
    k: int | None = None

    def from_relevance(self, relevance, n_relevant, details):
        return Score(ranking.hit(relevance), self._found(details), details=details)


@register
@dataclass(frozen=True)
class MRR(_IdMetric):
    """Reciprocal rank of the first relevant context: 1/rank, 0 when none was retrieved."""

    name = "mrr"
    k: int | None = None

    def from_relevance(self, relevance, n_relevant, details):
        rank = ranking.first_relevant_rank(relevance)
        explanation = "no relevant context retrieved" if rank is None else f"first relevant context at rank {rank}"
        return Score(ranking.reciprocal_rank(relevance), explanation, details={**details, "first_relevant_rank": rank})


@register
@dataclass(frozen=True)
class NDCG(_IdMetric):
    """Normalised discounted cumulative gain, binary relevance, log2(rank + 1) discount.

    DCG = Σ rel_i / log2(i + 1) over the retrieved list; divided by the DCG of an ideal list
    holding min(|relevant|, k) relevant contexts first.
    """

    name = "ndcg"
    k: int | None = None

    def from_relevance(self, relevance, n_relevant, details):
        return Score(ranking.ndcg(relevance, n_relevant, self.k), self._found(details), details=details)


@register
@dataclass(frozen=True)
class AveragePrecision(_IdMetric):
    """Average precision (trec_eval): mean of precision@i at the rank i of each relevant
    context, over min(|relevant|, k) relevant contexts; missed ones count 0."""

    name = "average_precision"
    k: int | None = None

    def from_relevance(self, relevance, n_relevant, details):
        return Score(ranking.average_precision(relevance, n_relevant, self.k), self._found(details), details=details)


@register
@dataclass(frozen=True)
class FirstRelevantRank(_IdMetric):
    """Rank (1 = first) of the first relevant context retrieved; lower is better.

    Unscored, with the reason, when no relevant context was retrieved: there is no rank.
    MRR gives such samples 0 instead.
    """

    name = "first_relevant_rank"
    unit = "rank"
    higher_is_better = False
    k: int | None = None

    def from_relevance(self, relevance, n_relevant, details):
        rank = ranking.first_relevant_rank(relevance)
        if rank is None:
            return Score.unscored(f"none of the {len(relevance)} retrieved contexts is relevant", details)
        return Score(float(rank), f"first relevant context at rank {rank}", details=details)


def string_similarity(a: str, b: str) -> float:
    """Normalised Levenshtein similarity of the normalised texts, in [0, 1]."""
    return Levenshtein.normalized_similarity(normalize(a), normalize(b))


def _similarity_matrix(retrieved: list[str], references: list[str]) -> list[list[float]]:
    return [[string_similarity(r, g) for g in references] for r in retrieved]


@dataclass(frozen=True)
class _StringMatchMetric(Metric):
    """Base of the metrics that match retrieved contexts to reference contexts by string
    similarity.

    Parameters:
        threshold: A retrieved context matches a reference context when their normalised
            Levenshtein similarity reaches it (in [0, 1]).
    """

    family = "retrieval"
    required = ("retrieved_contexts", "reference_contexts")
    threshold: float = 0.5

    def __post_init__(self) -> None:
        if finite_number(self.threshold) is None or not 0 <= self.threshold <= 1:
            raise ValueError(f"{self.name}: threshold must be a number in [0, 1], got {reprlib.repr(self.threshold)}")
        super().__post_init__()


@register
@dataclass(frozen=True)
class NonLLMContextPrecision(_StringMatchMetric):
    """Rank-aware precision of retrieved contexts judged by string similarity to the
    reference contexts, no model involved.

    A retrieved context is relevant when its normalised Levenshtein similarity to some
    reference context reaches ``threshold``. The score is average precision over the
    retrieved list: Σ_i precision@i · rel_i / (number of relevant retrieved), so relevant
    contexts ranked first score higher; 0 when none is relevant.
    """

    name = "nonllm_context_precision"

    async def score(self, sample: Sample, judges) -> Score:
        retrieved, references = sample.retrieved_contexts or [], sample.reference_contexts or []
        if not references:
            return Score.unscored("reference_contexts is empty: nothing to compare the retrieved contexts with")
        if not retrieved:
            return Score.unscored("nothing was retrieved, so precision is undefined")
        best = [max(row) for row in _similarity_matrix(retrieved, references)]
        relevance = [s >= self.threshold for s in best]
        details = {"similarity": [round(s, 4) for s in best], "relevant": relevance}
        n_found = sum(relevance)
        if n_found == 0:
            return Score(0.0, f"no retrieved context reaches similarity {self.threshold} to a reference context", details=details)
        value = ranking.average_precision(relevance, n_found)
        return Score(value, f"{n_found} of {len(retrieved)} retrieved contexts match a reference context", details=details)


@register
@dataclass(frozen=True)
class NonLLMContextRecall(_StringMatchMetric):
    """Share of reference contexts that some retrieved context matches by string similarity
    (normalised Levenshtein similarity at least ``threshold``), no model involved."""

    name = "nonllm_context_recall"

    async def score(self, sample: Sample, judges) -> Score:
        retrieved, references = sample.retrieved_contexts or [], sample.reference_contexts or []
        if not references:
            return Score.unscored("reference_contexts is empty: there is nothing to recall")
        if not retrieved:
            return Score(0.0, f"nothing was retrieved: 0 of {len(references)} reference contexts found")
        matrix = _similarity_matrix(retrieved, references)
        best = [max(matrix[i][j] for i in range(len(retrieved))) for j in range(len(references))]
        found = [s >= self.threshold for s in best]
        details = {"similarity": [round(s, 4) for s in best], "found": found}
        return Score(
            sum(found) / len(references),
            f"{sum(found)} of {len(references)} reference contexts were retrieved",
            details=details,
        )
