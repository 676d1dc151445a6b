"""Retrieval metrics without a model: by context id (through the Metric classes and
create_metric, with and without @k) and by string similarity of context texts."""

from __future__ import annotations

import asyncio
import math

import pytest

from ragmeter import Sample, Score, create_metric

ID_METRICS = [
    "retrieval_precision",
    "retrieval_recall",
    "retrieval_f1",
    "hit_rate",
    "mrr",
    "ndcg",
    "average_precision",
    "first_relevant_rank",
]
LOG2_3 = math.log2(3)


def score(spec: str, **fields) -> Score:
    metric = create_metric(spec, **fields.pop("params", {}))
    return asyncio.run(metric.score(Sample(**fields), None))


def ids(retrieved: list[str], reference: list[str], spec: str) -> Score:
    return score(spec, retrieved_context_ids=retrieved, reference_context_ids=reference)


# The running example: d1 d2 d3 d4 d5 retrieved, d1 d3 d6 relevant.
# Relevance T F T F F, R = 3 (d6 was never retrieved).
RETRIEVED = ["d1", "d2", "d3", "d4", "d5"]
RELEVANT = ["d1", "d3", "d6"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("retrieval_precision", 2 / 5),
        ("retrieval_recall", 2 / 3),
        # 2PR/(P+R) = 2 * 0.4 * (2/3) / (0.4 + 2/3) = 0.5
        ("retrieval_f1", 0.5),
        ("hit_rate", 1.0),
        ("mrr", 1.0),
        # DCG = 1 + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3) + 1/log2(4) = 2.1309
        ("ndcg", 1.5 / (1 + 1 / LOG2_3 + 0.5)),
        # (1/1 + 2/3) / 3 = 5/9: d6, never retrieved, counts 0
        ("average_precision", 5 / 9),
        ("first_relevant_rank", 1.0),
        # @2: d1 d2 -> T F
        ("retrieval_precision@2", 1 / 2),
        ("retrieval_recall@2", 1 / 3),
        ("retrieval_f1@2", 2 * (1 / 2) * (1 / 3) / (1 / 2 + 1 / 3)),  # = 0.4
        ("hit_rate@2", 1.0),
        ("mrr@2", 1.0),
        # DCG = 1; IDCG over min(3, 2) = 2 relevant = 1 + 1/log2(3) = 1.6309
        ("ndcg@2", 1 / (1 + 1 / LOG2_3)),
        # 1/1 divided by min(3, 2) = 2
        ("average_precision@2", 1 / 2),
        ("first_relevant_rank@2", 1.0),
    ],
)
def test_id_metrics_on_the_running_example(spec, expected):
    result = ids(RETRIEVED, RELEVANT, spec)
    assert result.value == pytest.approx(expected)
    assert result.explanation


def test_id_metrics_details():
    details = ids(RETRIEVED, RELEVANT, "retrieval_recall@3").details
    assert details["retrieved"] == ["d1", "d2", "d3"]
    assert details["relevant"] == ["d1", "d3", "d6"]
    assert details["relevant_retrieved"] == ["d1", "d3"]
    assert "duplicates_removed" not in details


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("mrr", 1 / 3),
        ("first_relevant_rank", 3.0),
        ("hit_rate", 1.0),
        ("ndcg", 0.5),  # 1/log2(4), one relevant item
        ("average_precision", 1 / 3),
        ("mrr@2", 0.0),
        ("hit_rate@2", 0.0),
        ("ndcg@2", 0.0),
        ("average_precision@2", 0.0),
        ("retrieval_recall@2", 0.0),
        ("retrieval_precision@2", 0.0),
        ("retrieval_f1@2", 0.0),
    ],
)
def test_relevant_context_at_rank_three(spec, expected):
    assert ids(["x", "y", "d1"], ["d1"], spec).value == pytest.approx(expected)


def test_first_relevant_rank_cut_off_is_unscored_with_reason():
    result = ids(["x", "y", "d1"], ["d1"], "first_relevant_rank@2")
    assert result.value is None
    assert "none of the 2 retrieved contexts is relevant" in result.reason


@pytest.mark.parametrize("spec", ["ndcg@3", "average_precision@3"])
def test_a_perfect_top_k_scores_one_although_more_contexts_are_relevant(spec):
    # d1 d2 d3 are all relevant and 5 contexts are: the best possible top 3.
    # nDCG@3 = DCG / IDCG of min(5, 3) = 3 relevant = 1; AP@3 = (1 + 1 + 1) / min(5, 3) = 1.
    result = ids(["d1", "d2", "d3", "x"], ["d1", "d2", "d3", "d4", "d5"], spec)
    assert result.value == pytest.approx(1.0)


def test_without_a_cut_off_missing_relevant_contexts_lower_ndcg_and_ap():
    # Same list uncut: 3 of 5 relevant found.
    # nDCG = (1 + 1/log2(3) + 1/log2(4)) / (that + 1/log2(5) + 1/log2(6))
    dcg = 1 + 1 / LOG2_3 + 0.5
    idcg = dcg + 1 / math.log2(5) + 1 / math.log2(6)
    assert ids(["d1", "d2", "d3", "x"], ["d1", "d2", "d3", "d4", "d5"], "ndcg").value == pytest.approx(dcg / idcg)
    # AP = (1 + 1 + 1) / 5
    assert ids(["d1", "d2", "d3", "x"], ["d1", "d2", "d3", "d4", "d5"], "average_precision").value == pytest.approx(3 / 5)


def test_create_metric_with_and_without_k():
    assert create_metric("ndcg").k is None
    assert create_metric("ndcg").id == "ndcg"
    metric = create_metric("ndcg@3")
    assert metric.k == 3
    assert metric.id == "ndcg@3"
    assert create_metric(" mrr@10 ").id == "mrr@10"


@pytest.mark.parametrize("spec", ["ndcg@0", "ndcg@-1", "ndcg@x", "nonllm_context_precision@3", "ndgc"])
def test_create_metric_rejects_bad_specs(spec):
    with pytest.raises(ValueError):
        create_metric(spec)


# --- duplicates ------------------------------------------------------------------------


def test_duplicate_retrieved_ids_are_counted_once():
    # d1 d1 d2 d3 -> d1 d2 d3 (T F T); relevant d1 d3.
    retrieved, relevant = ["d1", "d1", "d2", "d3"], ["d1", "d3"]
    precision = ids(retrieved, relevant, "retrieval_precision")
    assert precision.value == pytest.approx(2 / 3)  # not 3/4
    assert precision.details["duplicates_removed"] == 1
    assert precision.details["retrieved"] == ["d1", "d2", "d3"]
    assert ids(retrieved, relevant, "retrieval_recall").value == pytest.approx(1.0)
    # (1/1 + 2/3) / 2, not the 1 a double-counted d1 would give (1/1 + 2/2) / 2
    assert ids(retrieved, relevant, "average_precision").value == pytest.approx(5 / 6)
    # @2 cuts the deduplicated list: d1 d2 -> precision 1/2 (not d1 d1 -> 1)
    assert ids(retrieved, relevant, "retrieval_precision@2").value == pytest.approx(1 / 2)


def test_duplicate_reference_ids_count_once():
    # Relevant d1 d1 is one relevant context: recall 1, not 1/2.
    assert ids(["d1", "x"], ["d1", "d1"], "retrieval_recall").value == pytest.approx(1.0)
    assert ids(["d1", "x"], ["d1", "d1"], "ndcg").value == pytest.approx(1.0)


# --- unscored and nothing retrieved ----------------------------------------------------


@pytest.mark.parametrize("spec", [*ID_METRICS, "ndcg@3"])
def test_empty_reference_ids_are_unscored_with_reason(spec):
    result = ids(["d1", "d2"], [], spec)
    assert result.value is None
    assert "reference_context_ids is empty" in result.reason


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # Precision of nothing is undefined; the others have a natural value of 0.
        ("retrieval_precision", None),
        ("retrieval_recall", 0.0),
        ("retrieval_f1", 0.0),
        ("hit_rate", 0.0),
        ("mrr", 0.0),
        ("ndcg", 0.0),
        ("average_precision", 0.0),
        ("first_relevant_rank", None),
    ],
)
def test_nothing_retrieved(spec, expected):
    result = ids([], ["d1"], spec)
    assert result.value == expected
    if expected is None:
        assert result.reason


def test_first_relevant_rank_is_a_rank_where_lower_is_better():
    metric = create_metric("first_relevant_rank")
    assert metric.unit == "rank"
    assert metric.higher_is_better is False


# --- string similarity of context texts -----------------------------------------------

FREEZE = "Deployments to production are frozen from Friday 15:00 UTC until Monday 09:00 UTC."
FREEZE_NEAR = "Deployments to production are frozen from Friday 15:00 UTC until Monday 9:00 UTC"
MIGRATION = "Database migrations need DBRE review when they lock a large table."
MIGRATION_NEAR = "Database migrations need a DBRE review when they lock large tables."
UNRELATED = "The cafeteria serves lunch between noon and two o clock every weekday."


def levenshtein(a: str, b: str) -> int:
    """Edit distance by the textbook dynamic programme (independent of rapidfuzz)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def similarity(a: str, b: str) -> float:
    a, b = " ".join(a.lower().split()), " ".join(b.lower().split())
    return 1 - levenshtein(a, b) / max(len(a), len(b))


def contexts(spec: str, retrieved: list[str], reference: list[str], **params) -> Score:
    return score(spec, retrieved_contexts=retrieved, reference_contexts=reference, params=params)


def test_similarity_of_the_fixtures():
    # Sanity of the test data against the default threshold 0.5.
    assert similarity(FREEZE_NEAR, FREEZE) > 0.9
    assert similarity(MIGRATION_NEAR, MIGRATION) > 0.9
    assert similarity(UNRELATED, FREEZE) < 0.3
    assert similarity(UNRELATED, MIGRATION) < 0.3


def test_nonllm_context_precision_is_rank_aware():
    # relevant first: T F -> AP = (1/1) / 1 = 1
    first = contexts("nonllm_context_precision", [FREEZE_NEAR, UNRELATED], [FREEZE])
    # relevant last: F T -> AP = (1/2) / 1 = 0.5
    last = contexts("nonllm_context_precision", [UNRELATED, FREEZE_NEAR], [FREEZE])
    assert first.value == pytest.approx(1.0)
    assert last.value == pytest.approx(0.5)
    assert last.details["relevant"] == [False, True]
    assert last.details["similarity"] == pytest.approx([similarity(UNRELATED, FREEZE), similarity(FREEZE_NEAR, FREEZE)], abs=1e-4)


def test_nonllm_context_precision_three_contexts():
    # T F T -> (1/1 + 2/3) / 2 relevant found = 5/6
    result = contexts("nonllm_context_precision", [FREEZE_NEAR, UNRELATED, MIGRATION_NEAR], [FREEZE, MIGRATION])
    assert result.value == pytest.approx(5 / 6)


def test_nonllm_context_precision_with_nothing_relevant_is_zero():
    result = contexts("nonllm_context_precision", [UNRELATED], [FREEZE])
    assert result.value == 0.0


def test_nonllm_context_precision_unscored_cases():
    assert contexts("nonllm_context_precision", [], [FREEZE]).reason
    assert contexts("nonllm_context_precision", [], [FREEZE]).value is None
    assert contexts("nonllm_context_precision", [FREEZE], []).value is None


def test_nonllm_context_recall():
    # Each reference context is found when some retrieved one is similar enough.
    assert contexts("nonllm_context_recall", [FREEZE_NEAR, UNRELATED], [FREEZE, MIGRATION]).value == pytest.approx(1 / 2)
    both = contexts("nonllm_context_recall", [UNRELATED, MIGRATION_NEAR, FREEZE_NEAR], [FREEZE, MIGRATION])
    assert both.value == pytest.approx(1.0)
    assert both.details["found"] == [True, True]
    assert both.details["similarity"] == pytest.approx([similarity(FREEZE_NEAR, FREEZE), similarity(MIGRATION_NEAR, MIGRATION)], abs=1e-4)
    assert contexts("nonllm_context_recall", [UNRELATED], [FREEZE, MIGRATION]).value == 0.0


def test_nonllm_context_recall_edge_cases():
    assert contexts("nonllm_context_recall", [], [FREEZE]).value == 0.0
    unscored = contexts("nonllm_context_recall", [FREEZE], [])
    assert unscored.value is None
    assert "reference_contexts is empty" in unscored.reason


def test_threshold_parameter():
    # The near duplicate is ~0.98 similar: found at 0.95, not at 0.99.
    assert contexts("nonllm_context_recall", [FREEZE_NEAR], [FREEZE], threshold=0.95).value == 1.0
    assert contexts("nonllm_context_recall", [FREEZE_NEAR], [FREEZE], threshold=0.99).value == 0.0
    assert contexts("nonllm_context_precision", [FREEZE_NEAR], [FREEZE], threshold=0.99).value == 0.0


@pytest.mark.parametrize("k", [0, -2, True, 2.5])
def test_cut_off_must_be_a_positive_integer(k):
    with pytest.raises(ValueError, match="cut-off k must be a positive integer"):
        create_metric("ndcg", k=k)
