"""Rank metrics of ragmeter.ranking: hand-computed values, scikit-learn as an independent
reference, and properties every ranking must satisfy.

Notation in the comments: a ranking is written best first, T = relevant, F = not relevant;
R is the total number of relevant items (retrieved or not).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    average_precision_score,
    label_ranking_average_precision_score,
    ndcg_score,
    precision_score,
    recall_score,
    top_k_accuracy_score,
)

from ragmeter.metrics import ranking

T, F = True, False

# The running example: T F T F F with R = 3, so one relevant item was never retrieved.
EXAMPLE = [T, F, T, F, F]
EXAMPLE_R = 3

LOG2_3 = math.log2(3)  # discount of rank 2 is 1/log2(3) = 0.6309


# --- precision -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (None, 2 / 5),  # 2 relevant of 5 retrieved
        (1, 1.0),  # T
        (2, 1 / 2),  # T F
        (3, 2 / 3),  # T F T
        (5, 2 / 5),
        # k beyond the list: the cut keeps the 5 items there are, so 2/5. (trec_eval's P@10
        # would pad with non-relevant items: 2/10.)
        (10, 2 / 5),
    ],
)
def test_precision(k, expected):
    assert ranking.precision(EXAMPLE, k) == pytest.approx(expected)


def test_precision_of_nothing_relevant_is_zero():
    assert ranking.precision([F, F, F]) == 0.0


def test_precision_of_an_empty_ranking_is_undefined():
    with pytest.raises(ValueError):
        ranking.precision([])


# --- recall ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (None, 2 / 3),  # 2 of the R = 3 relevant items were retrieved
        (1, 1 / 3),  # T
        (2, 1 / 3),  # T F
        (3, 2 / 3),  # T F T
        (10, 2 / 3),
    ],
)
def test_recall(k, expected):
    assert ranking.recall(EXAMPLE, EXAMPLE_R, k) == pytest.approx(expected)


def test_recall_counts_relevant_items_not_retrieved():
    # T with R = 4: 1/4, the three missed ones count against it.
    assert ranking.recall([T], 4) == pytest.approx(0.25)


def test_recall_of_nothing_retrieved_or_nothing_relevant_retrieved_is_zero():
    assert ranking.recall([], 2) == 0.0
    assert ranking.recall([F, F], 2) == 0.0


def test_recall_is_undefined_when_nothing_is_relevant():
    with pytest.raises(ValueError):
        ranking.recall([F, F], 0)


# --- f1 --------------------------------------------------------------------------------


def test_f1():
    # 2 * 0.4 * (2/3) / (0.4 + 2/3) = (8/15) / (16/15) = 0.5
    assert ranking.f1(0.4, 2 / 3) == pytest.approx(0.5)
    assert ranking.f1(1.0, 1.0) == 1.0
    # 2 * 1 * 0 / (1 + 0) = 0
    assert ranking.f1(1.0, 0.0) == 0.0
    # 0 / 0 is defined as 0
    assert ranking.f1(0.0, 0.0) == 0.0


# --- first relevant rank, hit, reciprocal rank -------------------------------------------


@pytest.mark.parametrize(
    ("relevance", "k", "rank", "hit", "rr"),
    [
        ([T, F, T], None, 1, 1.0, 1.0),
        ([F, F, T], None, 3, 1.0, 1 / 3),
        ([F, F, T], 3, 3, 1.0, 1 / 3),
        ([F, F, T], 2, None, 0.0, 0.0),  # the relevant item is cut off
        ([F, F, F], None, None, 0.0, 0.0),  # nothing relevant
        ([], None, None, 0.0, 0.0),  # nothing retrieved
        ([F, T, T, T], 10, 2, 1.0, 1 / 2),
    ],
)
def test_first_relevant_rank_hit_and_reciprocal_rank(relevance, k, rank, hit, rr):
    assert ranking.first_relevant_rank(relevance, k) == rank
    assert ranking.hit(relevance, k) == hit
    assert ranking.reciprocal_rank(relevance, k) == pytest.approx(rr)


# --- average precision (trec_eval) ------------------------------------------------------


def test_average_precision_divides_by_all_relevant_items_like_trec_eval():
    # T F T F F, R = 3: precision at the relevant ranks is 1/1 and 2/3; the relevant item
    # never retrieved contributes 0. AP = (1 + 2/3) / 3 = 5/9 = 0.5556.
    assert ranking.average_precision(EXAMPLE, EXAMPLE_R) == pytest.approx(5 / 9)


@pytest.mark.parametrize(
    ("relevance", "n_relevant", "expected"),
    [
        ([T, T, T], 3, 1.0),  # (1 + 1 + 1) / 3
        ([F, F, T], 1, 1 / 3),  # (1/3) / 1
        ([F, T, F, T], 2, (1 / 2 + 2 / 4) / 2),  # = 0.5
        ([T], 4, 1 / 4),  # (1/1) / 4: three relevant items never retrieved
        ([F, F, F], 2, 0.0),
        ([], 2, 0.0),
        # relevant at ranks 1, 3 and 6, R = 3:
        # (1/1 + 2/3 + 3/6) / 3 = 13/18 = 0.7222
        ([T, F, T, F, F, T], 3, 13 / 18),
    ],
)
def test_average_precision_known_values(relevance, n_relevant, expected):
    assert ranking.average_precision(relevance, n_relevant) == pytest.approx(expected)


def test_average_precision_at_k_divides_by_the_relevant_items_that_fit_in_k():
    # T F T F F, R = 3, k = 2: only T F counts; sum of precisions = 1/1; divided by
    # min(R, k) = 2 -> 0.5. (trec_eval's map_cut.2 divides by R instead: 1/3.)
    assert ranking.average_precision(EXAMPLE, EXAMPLE_R, 2) == pytest.approx(0.5)
    # k = 3: (1 + 2/3) / min(3, 3) = 5/9
    assert ranking.average_precision(EXAMPLE, EXAMPLE_R, 3) == pytest.approx(5 / 9)
    # A perfect top k scores 1 even though more relevant items exist: T T, R = 5, k = 2.
    assert ranking.average_precision([T, T, F], 5, 2) == pytest.approx(1.0)
    # k larger than R changes nothing: min(3, 10) = 3.
    assert ranking.average_precision(EXAMPLE, EXAMPLE_R, 10) == pytest.approx(5 / 9)


def test_average_precision_is_undefined_when_nothing_is_relevant():
    with pytest.raises(ValueError):
        ranking.average_precision([F, F], 0)


# --- nDCG ------------------------------------------------------------------------------


def test_ndcg_known_values():
    # T F T F F, R = 3
    # DCG  = 1/log2(2) + 1/log2(4) = 1 + 0.5 = 1.5
    # IDCG = 1/log2(2) + 1/log2(3) + 1/log2(4) = 1 + 0.6309 + 0.5 = 2.1309 (3 relevant first)
    # nDCG = 1.5 / 2.1309 = 0.7039
    assert ranking.ndcg(EXAMPLE, EXAMPLE_R) == pytest.approx(1.5 / (1 + 1 / LOG2_3 + 0.5))
    assert ranking.ndcg(EXAMPLE, EXAMPLE_R) == pytest.approx(0.70392, abs=1e-5)


def test_ndcg_at_k_uses_an_ideal_list_of_min_r_k_relevant_items():
    # k = 2: DCG = 1 (T F); IDCG = 1 + 1/log2(3) = 1.6309 (min(3, 2) = 2 relevant)
    assert ranking.ndcg(EXAMPLE, EXAMPLE_R, 2) == pytest.approx(1 / (1 + 1 / LOG2_3))
    # A perfect top 3 with 5 relevant items in total: DCG = IDCG -> 1
    assert ranking.ndcg([T, T, T, F], 5, 3) == pytest.approx(1.0)
    # Without a cut the same list misses two relevant items:
    # DCG = 1 + 0.6309 + 0.5 = 2.1309; IDCG = 2.1309 + 1/log2(5) + 1/log2(6) = 2.9485
    idcg5 = sum(1 / math.log2(i + 1) for i in range(1, 6))
    assert ranking.ndcg([T, T, T, F], 5) == pytest.approx((1 + 1 / LOG2_3 + 0.5) / idcg5)


@pytest.mark.parametrize(
    ("relevance", "n_relevant", "k", "expected"),
    [
        ([F, F, T], 1, None, 0.5),  # (1/log2(4)) / 1
        ([F, F, T], 1, 2, 0.0),  # the relevant item is cut off
        ([F, F, F], 2, None, 0.0),
        ([], 1, None, 0.0),
        ([T], 1, None, 1.0),
    ],
)
def test_ndcg_edge_values(relevance, n_relevant, k, expected):
    assert ranking.ndcg(relevance, n_relevant, k) == pytest.approx(expected)


def test_ndcg_is_undefined_when_nothing_is_relevant():
    with pytest.raises(ValueError):
        ranking.ndcg([F, T], 0)


# --- scikit-learn as an independent reference ----------------------------------------------
#
# scikit-learn scores a list of items by (label, score). A ranking becomes labels = relevance
# and strictly decreasing scores (n, n-1, ..., 1), so there are no ties to average over.
# The conventions coincide only under these conditions:
# - ndcg_score builds its ideal DCG from the labels it is given, so it agrees with ours
#   only when every relevant item is in the list (R == number of True). With k, both use the
#   ideal top k, i.e. min(R, k) relevant items.
# - average_precision_score and label_ranking_average_precision_score divide by the
#   positives in the list, so they agree with trec_eval's AP when R == number of True, and
#   only without a cut-off.
# - label_ranking_average_precision_score with exactly one relevant item is 1 / its rank,
#   the reciprocal rank.
# - recall_score over the whole item set (the retrieved items, predicted 1 in the top k,
#   plus the relevant items never retrieved, predicted 0) equals recall@k with R = all
#   relevant items, so there the relevant items missing from the list are allowed.
# - precision_score with the top k predicted 1 equals precision@k when k <= list length.
# - top_k_accuracy_score with a single relevant item among >= 3 items is hit@k.


def _scores(n: int) -> np.ndarray:
    return np.arange(n, 0, -1, dtype=float)


rankings = st.lists(st.booleans(), min_size=2, max_size=12)


@settings(max_examples=150, deadline=None)
@given(relevance=rankings, k=st.one_of(st.none(), st.integers(1, 14)))
def test_ndcg_matches_sklearn_when_every_relevant_item_is_ranked(relevance, k):
    assume(any(relevance))
    expected = ndcg_score([list(map(int, relevance))], [_scores(len(relevance))], k=k)
    assert ranking.ndcg(relevance, sum(relevance), k) == pytest.approx(expected)


@settings(max_examples=150, deadline=None)
@given(relevance=rankings)
def test_average_precision_matches_sklearn_when_every_relevant_item_is_ranked(relevance):
    assume(any(relevance))
    y_true, y_score = np.array(relevance, dtype=int), _scores(len(relevance))
    ours = ranking.average_precision(relevance, sum(relevance))
    assert ours == pytest.approx(average_precision_score(y_true, y_score))
    assert ours == pytest.approx(label_ranking_average_precision_score([y_true], [y_score]))


@settings(max_examples=100, deadline=None)
@given(n=st.integers(2, 12), data=st.data())
def test_reciprocal_rank_matches_sklearn_with_one_relevant_item(n, data):
    position = data.draw(st.integers(0, n - 1))
    relevance = [i == position for i in range(n)]
    expected = label_ranking_average_precision_score([np.array(relevance, dtype=int)], [_scores(n)])
    assert ranking.reciprocal_rank(relevance) == pytest.approx(expected)
    assert ranking.reciprocal_rank(relevance) == pytest.approx(1 / (position + 1))


@settings(max_examples=100, deadline=None)
@given(n=st.integers(3, 12), data=st.data())
def test_hit_matches_sklearn_top_k_accuracy_with_one_relevant_item(n, data):
    position = data.draw(st.integers(0, n - 1))
    k = data.draw(st.integers(1, n - 1))
    relevance = [i == position for i in range(n)]
    expected = top_k_accuracy_score([position], [_scores(n)], k=k, labels=list(range(n)))
    assert ranking.hit(relevance, k) == expected


@settings(max_examples=150, deadline=None)
@given(relevance=st.lists(st.booleans(), min_size=1, max_size=12), missed=st.integers(0, 4), data=st.data())
def test_recall_and_precision_match_sklearn(relevance, missed, data):
    n_relevant = sum(relevance) + missed
    assume(n_relevant > 0)
    k = data.draw(st.integers(1, len(relevance)))
    # Every item: the retrieved ones, then the relevant ones never retrieved.
    y_true = list(map(int, relevance)) + [1] * missed
    y_pred = [1] * k + [0] * (len(relevance) - k) + [0] * missed
    assert ranking.recall(relevance, n_relevant, k) == pytest.approx(recall_score(y_true, y_pred))
    assert ranking.precision(relevance, k) == pytest.approx(precision_score(y_true, y_pred, zero_division=0.0))


# --- properties ------------------------------------------------------------------------


@st.composite
def judged_rankings(draw):
    """A ranking and a total number of relevant items consistent with it (R >= #True, R >= 1)."""
    relevance = draw(st.lists(st.booleans(), max_size=15))
    n_relevant = sum(relevance) + draw(st.integers(0, 5))
    return relevance, max(n_relevant, 1)


cutoffs = st.one_of(st.none(), st.integers(1, 20))


@settings(max_examples=300, deadline=None)
@given(judged=judged_rankings(), k=cutoffs)
def test_every_value_is_in_the_unit_interval(judged, k):
    relevance, n_relevant = judged
    values = [
        ranking.recall(relevance, n_relevant, k),
        ranking.hit(relevance, k),
        ranking.reciprocal_rank(relevance, k),
        ranking.average_precision(relevance, n_relevant, k),
        ranking.ndcg(relevance, n_relevant, k),
    ]
    if relevance and k != 0:  # precision needs at least one ranked item
        p = ranking.precision(relevance, k)
        values += [p, ranking.f1(p, values[0])]
    for value in values:
        assert 0.0 <= value <= 1.0


@st.composite
def promotions(draw):
    """A ranking, R, and the same ranking with one relevant item swapped with a
    non-relevant item ranked above it."""
    relevance, n_relevant = draw(judged_rankings())
    pairs = [(i, j) for j, rel_j in enumerate(relevance) if rel_j for i in range(j) if not relevance[i]]
    assume(pairs)
    i, j = draw(st.sampled_from(pairs))
    promoted = list(relevance)
    promoted[i], promoted[j] = True, False
    return relevance, promoted, n_relevant


@settings(max_examples=300, deadline=None)
@given(case=promotions(), k=cutoffs)
def test_moving_a_relevant_item_up_never_lowers_a_rank_metric(case, k):
    before, after, n_relevant = case
    assert ranking.average_precision(after, n_relevant, k) >= ranking.average_precision(before, n_relevant, k) - 1e-12
    assert ranking.ndcg(after, n_relevant, k) >= ranking.ndcg(before, n_relevant, k) - 1e-12
    assert ranking.reciprocal_rank(after, k) >= ranking.reciprocal_rank(before, k)
    assert ranking.hit(after, k) >= ranking.hit(before, k)


@settings(max_examples=200, deadline=None)
@given(judged=judged_rankings())
def test_recall_never_decreases_as_k_grows(judged):
    relevance, n_relevant = judged
    values = [ranking.recall(relevance, n_relevant, k) for k in range(1, len(relevance) + 3)]
    assert values == sorted(values)
    assert values[-1] == ranking.recall(relevance, n_relevant)
