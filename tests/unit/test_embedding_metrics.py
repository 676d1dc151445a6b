"""Embedding metrics with a deterministic fake encoder, and the BatchingEmbedder.

The fake encoder is a bag of words: each distinct word gets its own dimension, so the
cosine of two texts is (shared word counts) / (norms), which the tests recompute with
numpy from literal sentence lists, independently of the metrics' sentence splitting and
aggregation.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import ClassVar

import numpy as np
import pytest

from ragmeter import Judges, Sample, Score, create_metric
from ragmeter.judges.embeddings import BatchingEmbedder

DIM = 512


class BagOfWords:
    """Test double: one dimension per word (lower-cased \\w+ runs; each Han character is a
    word), counts, L2-normalised. Records every call."""

    model_name = "bag-of-words"

    def __init__(self):
        self.vocabulary: dict[str, int] = {}
        self.calls: list[list[str]] = []
        self._lock = threading.Lock()

    def vector(self, text: str) -> np.ndarray:
        out = np.zeros(DIM, dtype=np.float64)
        for word in re.findall(r"[\u4e00-\u9fff]|[^\W\u4e00-\u9fff]+", text.lower()):
            with self._lock:
                index = self.vocabulary.setdefault(word, len(self.vocabulary))
            out[index] += 1.0
        norm = np.linalg.norm(out)
        return out / norm if norm else out

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vector(t) for t in texts]).astype(np.float32)


class Signed:
    """Test double with opposite directions: "up" and "down" have cosine -1."""

    model_name = "signed"
    VECTORS: ClassVar[dict[str, list[float]]] = {"up": [1.0, 0.0], "down": [-1.0, 0.0], "left": [0.0, 1.0]}

    def encode(self, texts):
        return np.array([self.VECTORS[t] for t in texts], dtype=np.float32)


def run(spec: str, encoder=None, **fields) -> Score:
    judges = Judges(embedder=BatchingEmbedder(encoder or BagOfWords()))
    return asyncio.run(create_metric(spec).score(Sample(**fields), judges))


def best_cosines(encoder: BagOfWords, covered: list[str], covering: list[str]) -> np.ndarray:
    """For each covered sentence, its best cosine (clipped at 0) with a covering sentence."""
    a = np.stack([encoder.vector(s) for s in covered])
    b = np.stack([encoder.vector(s) for s in covering])
    return np.clip(a @ b.T, 0, 1).max(axis=1)


# --- semantic_similarity ---------------------------------------------------------------


def test_semantic_similarity_is_the_cosine_of_whole_texts():
    # [the, cat, sat] vs [the, cat, ran]: 2 shared words, norms sqrt(3): cos = 2/3
    assert run("semantic_similarity", response="The cat sat.", reference="the cat ran").value == pytest.approx(2 / 3)
    # [the x2, cat, sat, on, mat] vs [a x2, cat, sat, on, rug]: shared cat, sat, on = 3;
    # norms sqrt(4+1+1+1+1) = sqrt(8) each: cos = 3/8
    result = run("semantic_similarity", response="The cat sat on the mat.", reference="A cat sat on a rug.")
    assert result.value == pytest.approx(3 / 8)


def test_semantic_similarity_identical_and_unrelated():
    assert run("semantic_similarity", response="Same words here.", reference="same words here").value == pytest.approx(1.0)
    assert run("semantic_similarity", response="alpha beta", reference="gamma delta").value == 0.0


def test_semantic_similarity_clips_negative_cosines_to_zero():
    assert run("semantic_similarity", encoder=Signed(), response="up", reference="down").value == 0.0


@pytest.mark.parametrize(("response", "reference"), [("", "x"), ("  ", "x"), ("x", ""), ("x", None), (None, "x")])
def test_semantic_similarity_unscored_on_empty_text(response, reference):
    result = run("semantic_similarity", response=response, reference=reference)
    assert result.value is None
    assert "empty" in result.reason


# --- embedding_context_recall -----------------------------------------------------------

REFERENCE = "Cats sleep a lot. Dogs bark loudly at night."
REFERENCE_SENTENCES = ["Cats sleep a lot.", "Dogs bark loudly at night."]
CONTEXTS = ["Cats sleep most of the day. Birds sing in the morning.", "Dogs bark at night."]
CONTEXT_SENTENCES = ["Cats sleep most of the day.", "Birds sing in the morning.", "Dogs bark at night."]


def test_embedding_context_recall_is_mean_best_match_of_reference_sentences():
    encoder = BagOfWords()
    expected = best_cosines(encoder, REFERENCE_SENTENCES, CONTEXT_SENTENCES).mean()
    result = run("embedding_context_recall", encoder=encoder, reference=REFERENCE, retrieved_contexts=CONTEXTS)
    assert result.value == pytest.approx(expected, abs=1e-6)
    # by hand: "cats sleep a lot" vs "cats sleep most of the day": 2 / (2 * sqrt(6));
    # "dogs bark loudly at night" vs "dogs bark at night": 4 / (sqrt(5) * 2)
    assert result.value == pytest.approx((2 / (2 * np.sqrt(6)) + 4 / (np.sqrt(5) * 2)) / 2, abs=1e-6)
    matches = result.details["reference_sentences"]
    assert [m["sentence"] for m in matches] == REFERENCE_SENTENCES
    assert [m["best_match"] for m in matches] == ["Cats sleep most of the day.", "Dogs bark at night."]


def test_embedding_context_recall_per_sentence_is_not_diluted_by_a_long_context():
    # A whole-text cosine would be diluted by the unrelated sentence; per sentence it is 1.
    result = run(
        "embedding_context_recall",
        reference="Dogs bark at night.",
        retrieved_contexts=["Birds sing in the morning. Fish swim in water. Dogs bark at night."],
    )
    assert result.value == pytest.approx(1.0)


def test_embedding_context_recall_edge_cases():
    assert run("embedding_context_recall", reference=REFERENCE, retrieved_contexts=[]).value == 0.0
    unscored = run("embedding_context_recall", reference="...", retrieved_contexts=CONTEXTS)
    assert unscored.value is None
    assert unscored.reason == "reference has no sentences"


# --- embedding_correctness -------------------------------------------------------------


def test_embedding_correctness_is_sentence_level_f1():
    encoder = BagOfWords()
    response = ["Cats sleep a lot.", "Fish swim fast."]
    reference = ["Cats sleep all day.", "Dogs bark at night.", "Fish swim."]
    precision = best_cosines(encoder, response, reference).mean()
    recall = best_cosines(encoder, reference, response).mean()
    expected = 2 * precision * recall / (precision + recall)
    result = run("embedding_correctness", encoder=encoder, response=" ".join(response), reference=" ".join(reference))
    assert result.value == pytest.approx(expected, abs=1e-6)
    assert result.details["precision"] == pytest.approx(precision, abs=1e-6)
    assert result.details["recall"] == pytest.approx(recall, abs=1e-6)
    # A response that covers part of the reference has recall < precision here.
    assert result.details["recall"] < result.details["precision"]


def test_embedding_correctness_extremes():
    assert run("embedding_correctness", response="Fish swim.", reference="fish swim").value == pytest.approx(1.0)
    assert run("embedding_correctness", response="Alpha beta.", reference="Gamma delta.").value == 0.0


@pytest.mark.parametrize(
    ("response", "reference", "reason"),
    [
        ("", "Fish swim.", "response has no sentences"),
        ("!!", "Fish swim.", "response has no sentences"),
        ("Fish swim.", "。", "reference has no sentences"),
    ],
)
def test_embedding_correctness_unscored(response, reference, reason):
    result = run("embedding_correctness", response=response, reference=reference)
    assert result.value is None
    assert result.reason == reason


# --- embedding_groundedness ------------------------------------------------------------


def test_embedding_groundedness_is_mean_best_match_of_response_sentences():
    encoder = BagOfWords()
    response = ["Cats sleep most of the day.", "Parrots talk a lot."]
    expected = best_cosines(encoder, response, CONTEXT_SENTENCES).mean()
    result = run("embedding_groundedness", encoder=encoder, response=" ".join(response), retrieved_contexts=CONTEXTS)
    assert result.value == pytest.approx(expected, abs=1e-6)
    # first sentence is verbatim in the contexts (1.0); the second shares nothing (0.0)
    assert result.value == pytest.approx(0.5)
    similarities = [m["similarity"] for m in result.details["response_sentences"]]
    assert similarities == pytest.approx([1.0, 0.0])
    assert "least supported: 0.00" in result.explanation


def test_embedding_groundedness_chinese_sentences():
    encoder = BagOfWords()
    response = ["数据库变更需要审批。", "周五下午禁止部署。"]
    contexts = ["数据库变更必须经过审批。今天天气很好。"]
    expected = best_cosines(encoder, response, ["数据库变更必须经过审批。", "今天天气很好。"]).mean()
    result = run("embedding_groundedness", encoder=encoder, response="".join(response), retrieved_contexts=contexts)
    assert result.value == pytest.approx(expected, abs=1e-6)
    assert 0 < result.value < 1


def test_embedding_groundedness_sets_aside_sentences_that_only_decline_to_answer():
    encoder = BagOfWords()
    declining = "I don't know how long parrots live."
    result = run(
        "embedding_groundedness", encoder=encoder, user_input="How long do parrots live?", response=declining, retrieved_contexts=CONTEXTS
    )
    assert result.value == 1.0 and result.details["declines"] == [declining]
    assert "only declines to answer" in result.explanation
    mixed = run(
        "embedding_groundedness",
        encoder=encoder,
        user_input="How long do parrots live?",
        response=f"{declining} Cats sleep most of the day.",
        retrieved_contexts=CONTEXTS,
    )
    assert mixed.value == pytest.approx(1.0) and [m["sentence"] for m in mixed.details["response_sentences"]] == [
        "Cats sleep most of the day."
    ]
    # Without the question, the parrots are words of its own: a claim like any other.
    alone = run("embedding_groundedness", encoder=encoder, response=declining, retrieved_contexts=CONTEXTS)
    assert "declines" not in alone.details and alone.value < 1.0


def test_embedding_groundedness_unscored():
    no_contexts = run("embedding_groundedness", response="Cats sleep.", retrieved_contexts=[])
    assert no_contexts.value is None
    assert "nothing was retrieved" in no_contexts.reason
    no_sentences = run("embedding_groundedness", response=" ", retrieved_contexts=CONTEXTS)
    assert no_sentences.value is None
    assert no_sentences.reason == "response has no sentences"


# --- BatchingEmbedder ------------------------------------------------------------------


def test_concurrent_requests_are_encoded_in_one_batch():
    encoder = BagOfWords()
    embedder = BatchingEmbedder(encoder)

    async def main():
        return await asyncio.gather(*(embedder.embed([f"text {i}"]) for i in range(50)))

    results = asyncio.run(main())
    assert len(encoder.calls) == 1
    assert sorted(encoder.calls[0]) == sorted(f"text {i}" for i in range(50))
    for i, result in enumerate(results):
        assert result.shape == (1, DIM)
        np.testing.assert_allclose(result[0], encoder.vector(f"text {i}"), atol=1e-6)
    assert embedder.batches == 1
    assert embedder.texts_encoded == 50


def test_batches_are_at_most_max_batch_texts():
    encoder = BagOfWords()
    embedder = BatchingEmbedder(encoder, max_batch=16)

    async def main():
        await asyncio.gather(*(embedder.embed([f"text {i}"]) for i in range(50)))

    asyncio.run(main())
    assert [len(call) for call in encoder.calls] == [16, 16, 16, 2]


def test_repeated_texts_are_encoded_once():
    encoder = BagOfWords()
    embedder = BatchingEmbedder(encoder)

    async def main():
        within = await embedder.embed(["cat", "dog", "cat"])
        across = await asyncio.gather(*(embedder.embed(["bird", "fish"]) for _ in range(20)))
        return within, across

    within, across = asyncio.run(main())
    assert encoder.calls == [["cat", "dog"], ["bird", "fish"]]
    assert within.shape == (3, DIM)
    np.testing.assert_array_equal(within[0], within[2])
    assert all(np.array_equal(a, across[0]) for a in across)


def test_results_are_cached_across_calls():
    encoder = BagOfWords()
    embedder = BatchingEmbedder(encoder)

    async def main():
        await embedder.embed(["cat"])
        await embedder.embed(["cat", "dog"])
        await embedder.embed(["dog", "cat"])

    asyncio.run(main())
    assert encoder.calls == [["cat"], ["dog"]]


def test_cache_forgets_least_recently_used_texts():
    encoder = BagOfWords()
    embedder = BatchingEmbedder(encoder, cache_size=2)

    async def main():
        await embedder.embed(["a", "b"])
        await embedder.embed(["a"])  # a is now more recent than b
        await embedder.embed(["c"])  # evicts b
        await embedder.embed(["a", "b"])

    asyncio.run(main())
    assert encoder.calls == [["a", "b"], ["c"], ["b"]]


def test_an_encoder_failure_reaches_every_waiter_and_is_not_cached():
    class Flaky(BagOfWords):
        fail = True

        def encode(self, texts):
            self.calls.append(list(texts))
            if self.fail:
                raise RuntimeError("model crashed")
            return super().encode(texts)

    encoder = Flaky()
    embedder = BatchingEmbedder(encoder)

    async def main():
        return await asyncio.gather(*(embedder.embed([f"t{i}", "shared"]) for i in range(5)), return_exceptions=True)

    outcomes = asyncio.run(main())
    assert len(encoder.calls) == 1
    assert all(isinstance(o, RuntimeError) and str(o) == "model crashed" for o in outcomes)

    encoder.fail = False
    recovered = asyncio.run(embedder.embed(["t0", "shared"]))
    assert recovered.shape == (2, DIM)


def test_a_cancelled_caller_does_not_cancel_others_waiting_for_the_same_text():
    class Slow(BagOfWords):
        def encode(self, texts):
            time.sleep(0.2)
            return super().encode(texts)

    embedder = BatchingEmbedder(Slow())

    async def main():
        impatient = asyncio.ensure_future(embedder.embed(["shared"]))
        patient = asyncio.ensure_future(embedder.embed(["shared"]))
        await asyncio.sleep(0.05)
        impatient.cancel()
        return await patient, impatient

    vectors, impatient = asyncio.run(main())
    assert impatient.cancelled()
    assert vectors.shape == (1, DIM)


def test_an_encoder_returning_too_few_rows_fails_every_waiter():
    class Short(BagOfWords):
        def encode(self, texts):
            return super().encode(texts)[:-1]

    embedder = BatchingEmbedder(Short())
    with pytest.raises(RuntimeError, match="returned 1 embeddings for 2 texts"):
        asyncio.run(embedder.embed(["a", "b"]))


def test_works_across_separate_event_loops():
    encoder = BagOfWords()
    embedder = BatchingEmbedder(encoder)
    first = asyncio.run(embedder.embed(["cat", "dog"]))
    second = asyncio.run(embedder.embed(["dog", "bird"]))

    async def concurrent():
        return await asyncio.gather(embedder.embed(["fish"]), embedder.embed(["eel"]))

    third = asyncio.run(concurrent())
    assert encoder.calls == [["cat", "dog"], ["bird"], ["fish", "eel"]]
    np.testing.assert_array_equal(first[1], second[0])
    assert third[0].shape == (1, DIM)


def test_empty_request():
    assert asyncio.run(BatchingEmbedder(BagOfWords()).embed([])).shape[0] == 0


def test_model_name_comes_from_the_encoder():
    assert BatchingEmbedder(BagOfWords()).model_name == "bag-of-words"
