"""Metrics from sentence embeddings (default: the packaged multilingual USE model).

Cheap, deterministic and language-independent, but blind to negation and to wrong
numbers in an otherwise similar sentence; prefer the LLM metrics where that matters.
Similarities are cosines of L2-normalised embeddings, clipped below at 0.

Aggregation, shared by the three sentence-level scores: split both texts into sentences
(English and Chinese punctuation), give each sentence on one side its best cosine with any
sentence on the other side (max over sentences, and so over chunks), and average those
best matches. Working per sentence keeps a short claim from being diluted by a long chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragmeter.data.schema import Sample
from ragmeter.data.text import split_sentences
from ragmeter.metrics.base import Metric, Needs, Score
from ragmeter.metrics.checks import declines_only
from ragmeter.metrics.registry import register


def best_match(queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each query row: the best cosine (clipped at 0) over key rows, and that key's index."""
    similarity = np.clip(queries @ keys.T, 0.0, 1.0)
    index = similarity.argmax(axis=1)
    return similarity[np.arange(len(queries)), index], index


async def _sentence_coverage(judges, covered: list[str], covering: list[str]) -> tuple[float, list[dict]]:
    """Mean over ``covered`` sentences of their best cosine with a ``covering`` sentence."""
    vectors = await judges.embedder.embed(covered + covering)
    best, index = best_match(vectors[: len(covered)], vectors[len(covered) :])
    matches = [
        {"sentence": s, "best_match": covering[i], "similarity": round(float(b), 4)} for s, b, i in zip(covered, best, index, strict=True)
    ]
    return float(best.mean()), matches


def _sentences_of(texts: list[str]) -> list[str]:
    return [s for text in texts for s in split_sentences(text)]


class _EmbeddingMetric(Metric):
    needs = Needs.EMBEDDINGS


@register
@dataclass(frozen=True)
class SemanticSimilarity(_EmbeddingMetric):
    """Cosine similarity of the whole response and the whole reference, clipped at 0."""

    name = "semantic_similarity"
    family = "correctness"
    required = ("response", "reference")

    async def score(self, sample: Sample, judges) -> Score:
        if not (sample.response or "").strip():
            return Score.unscored("response is empty")
        if not (sample.reference or "").strip():
            return Score.unscored("reference is empty")
        vectors = await judges.embedder.embed([sample.response, sample.reference])
        value = float(np.clip(vectors[0] @ vectors[1], 0.0, 1.0))
        return Score(value, f"cosine {value:.2f} between response and reference")


@register
@dataclass(frozen=True)
class EmbeddingContextRecall(_EmbeddingMetric):
    """How much of the reference answer the retrieved contexts cover: mean over reference
    sentences of the best cosine with any sentence of any retrieved context."""

    name = "embedding_context_recall"
    family = "retrieval"
    required = ("retrieved_contexts", "reference")

    async def score(self, sample: Sample, judges) -> Score:
        reference = split_sentences(sample.reference or "")
        if not reference:
            return Score.unscored("reference has no sentences")
        contexts = _sentences_of(sample.retrieved_contexts or [])
        if not contexts:
            return Score(0.0, "nothing was retrieved, so nothing of the reference is covered")
        value, matches = await _sentence_coverage(judges, reference, contexts)
        weakest = min(matches, key=lambda m: m["similarity"])
        return Score(
            value,
            f"{len(reference)} reference sentences; least covered: {weakest['similarity']:.2f}",
            details={"reference_sentences": matches},
        )


@register
@dataclass(frozen=True)
class EmbeddingCorrectness(_EmbeddingMetric):
    """Sentence-level F1 of response against reference: precision is the mean best cosine of
    response sentences with reference sentences, recall the same the other way round."""

    name = "embedding_correctness"
    family = "correctness"
    required = ("response", "reference")

    async def score(self, sample: Sample, judges) -> Score:
        response = split_sentences(sample.response or "")
        reference = split_sentences(sample.reference or "")
        if not response:
            return Score.unscored("response has no sentences")
        if not reference:
            return Score.unscored("reference has no sentences")
        vectors = await judges.embedder.embed(response + reference)
        similarity = np.clip(vectors[: len(response)] @ vectors[len(response) :].T, 0.0, 1.0)
        precision = float(similarity.max(axis=1).mean())
        recall = float(similarity.max(axis=0).mean())
        value = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        return Score(
            value,
            f"precision {precision:.2f} (response supported by reference), recall {recall:.2f} (reference covered)",
            details={"precision": precision, "recall": recall},
        )


@register
@dataclass(frozen=True)
class EmbeddingGroundedness(_EmbeddingMetric):
    """How well the retrieved contexts support the response: mean over response sentences of
    the best cosine with any sentence of any retrieved context.

    A sentence that only declines to answer the question (as for ``faithfulness``:
    :func:`~ragmeter.metrics.checks.declines_only`) is set aside and listed as ``declines``;
    a response that only declines scores 1.0."""

    name = "embedding_groundedness"
    family = "groundedness"
    required = ("response", "retrieved_contexts")

    async def score(self, sample: Sample, judges) -> Score:
        sentences = split_sentences(sample.response or "")
        if not sentences:
            return Score.unscored("response has no sentences")
        contexts = _sentences_of(sample.retrieved_contexts or [])
        if not contexts:
            return Score.unscored("nothing was retrieved: there is nothing to ground the response in")
        declines = [s for s in sentences if declines_only(s, sample.user_input or "")]
        response = [s for s in sentences if s not in declines]
        if not response:
            explanation = f"the response only declines to answer ({declines[0][:60]}): it states nothing to ground"
            return Score(1.0, explanation, details={"response_sentences": [], "declines": declines})
        value, matches = await _sentence_coverage(judges, response, contexts)
        weakest = min(matches, key=lambda m: m["similarity"])
        details: dict = {"response_sentences": matches}
        if declines:
            details["declines"] = declines
        return Score(
            value,
            f"{len(response)} response sentences; least supported: {weakest['similarity']:.2f} ({weakest['sentence'][:60]})",
            details=details,
        )
