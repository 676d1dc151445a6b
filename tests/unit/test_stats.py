"""Bootstrap intervals and descriptive statistics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmeter.results.stats import bootstrap_ci, describe


def test_interval_is_reproducible_and_contains_the_mean():
    values = np.random.default_rng(1).uniform(size=200)
    low, high = bootstrap_ci(values)
    assert (low, high) == bootstrap_ci(values), "same data, same interval"
    assert low < values.mean() < high


def test_interval_width_matches_the_normal_approximation():
    values = np.random.default_rng(2).normal(0.5, 0.2, size=400)
    low, high = bootstrap_ci(values, n_resamples=4000)
    normal_half_width = 1.96 * values.std(ddof=1) / np.sqrt(len(values))
    assert (high - low) / 2 == pytest.approx(normal_half_width, rel=0.1)


def test_interval_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(3)
    covered = 0
    trials = 300
    for trial in range(trials):
        sample = rng.beta(2, 5, size=60)  # true mean 2/7
        low, high = bootstrap_ci(sample, n_resamples=1000, seed=trial)
        covered += low <= 2 / 7 <= high
    assert 0.90 <= covered / trials <= 0.98


def test_too_few_values_have_no_interval():
    assert bootstrap_ci([]) is None and bootstrap_ci([0.3]) is None
    single = describe([0.3])
    assert single["mean"] == 0.3 and single["std"] == 0.0 and single["ci_low"] is None
    empty = describe([])
    assert all(v is None for v in empty.values())


def test_large_inputs_are_processed_in_blocks():
    values = np.linspace(0, 1, 20_000)
    low, high = bootstrap_ci(values, n_resamples=500)
    assert low < 0.5 < high


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=50))
def test_interval_lies_within_the_data_range(values):
    low, high = bootstrap_ci(values, n_resamples=200)
    assert min(values) - 1e-12 <= low <= high <= max(values) + 1e-12


# Descriptive statistics, ROC-AUC and balanced accuracy against independent implementations
# (the standard library's ``statistics``, numpy, scikit-learn), on data WITH TIES: perfectly
# separated or all-distinct data cannot tell a tie counted as a loss from one counted half.

TIED = [0.2, 0.5, 0.5, 0.5, 1.0, 0.0, 0.7, 0.7]


def test_describe_matches_the_standard_library_on_tied_values():
    import statistics

    described = describe(TIED)
    assert described["mean"] == pytest.approx(statistics.fmean(TIED))
    assert described["median"] == pytest.approx(statistics.median(TIED))
    assert described["min"] == 0.0 and described["max"] == 1.0
    # Sample standard deviation (n - 1), not the population one (n): they differ here.
    assert described["std"] == pytest.approx(statistics.stdev(TIED))
    assert statistics.stdev(TIED) != pytest.approx(statistics.pstdev(TIED))
    # The 95th percentile with linear interpolation between order statistics: the 19th of
    # the 20-quantiles, 'inclusive' (numpy's default 'linear' method). Sorted values
    # 0, .2, .5, .5, .5, .7, .7, 1: position 0.95 * 7 = 6.65 -> 0.7 + 0.65 * 0.3 = 0.895.
    p95 = statistics.quantiles(TIED, n=20, method="inclusive")[18]
    assert p95 == pytest.approx(0.895)
    assert described["p95"] == pytest.approx(p95)
    assert described["p95"] != pytest.approx(float(np.percentile(TIED, 90)))  # 0.79: the 90th is another number
    interval = bootstrap_ci(TIED)
    assert (described["ci_low"], described["ci_high"]) == interval


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=2, max_size=30))
def test_describe_matches_numpy_with_explicit_parameters(values):
    described = describe(values)
    assert described["std"] == pytest.approx(float(np.std(values, ddof=1)), abs=1e-12)
    assert described["p95"] == pytest.approx(float(np.percentile(values, 95, method="linear")), abs=1e-12)
    assert described["median"] == pytest.approx(float(np.median(values)), abs=1e-12)


def test_roc_auc_counts_ties_half_like_sklearn():
    from sklearn.metrics import roc_auc_score

    from ragmeter.results.stats import roc_auc

    labels = [1, 1, 1, 0, 0, 0, 1, 0, 0]
    scores = [0.9, 0.5, 0.5, 0.5, 0.1, 0.5, 0.3, 0.3, 0.0]
    # By hand: 4 positives x 5 negatives (0.5, 0.1, 0.5, 0.3, 0.0) = 20 pairs. 0.9 beats all
    # 5; each positive 0.5 beats 0.1, 0.3, 0.0 and ties both negative 0.5s: 3 + 2 * 0.5 = 4;
    # 0.3 beats 0.1 and 0.0 and ties the 0.3: 2.5. (5 + 4 + 4 + 2.5) / 20 = 0.775.
    assert roc_auc_score(labels, scores) == pytest.approx(0.775)
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))
    assert roc_auc([1, 0], [0.4, 0.4]) == pytest.approx(0.5), "a tie is half a win"


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 4)), min_size=2, max_size=40))
def test_roc_auc_and_balanced_accuracy_match_sklearn_on_tied_scores(rows):
    from hypothesis import assume
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    from ragmeter.results.stats import balanced_accuracy, roc_auc

    labels = [int(y) for y, _ in rows]
    assume(0 < sum(labels) < len(labels))
    scores = [s / 4 for _, s in rows]
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    decisions = [int(s >= 0.5) for s in scores]
    assert balanced_accuracy(labels, decisions) == pytest.approx(balanced_accuracy_score(labels, decisions), abs=1e-12)


def test_roc_auc_and_balanced_accuracy_need_both_classes():
    from ragmeter.results.stats import balanced_accuracy, roc_auc

    with pytest.raises(ValueError):
        roc_auc([1, 1], [0.2, 0.4])
    with pytest.raises(ValueError):
        roc_auc([0, 0], [0.2, 0.4])
    with pytest.raises(ValueError):
        balanced_accuracy([1, 1], [1, 0])
    with pytest.raises(ValueError):
        balanced_accuracy([0, 0], [1, 0])


@pytest.mark.parametrize("n_resamples", [2, 101])  # with 2, both means make each bound
@pytest.mark.parametrize("block_draws", [5_000_000, 7 * 9, 9])
def test_interval_is_the_percentile_of_seeded_resample_means_whatever_the_blocks(monkeypatch, block_draws, n_resamples):
    """The documented procedure, written out: ``n_resamples`` resamples of the n values drawn
    with replacement by ``default_rng(seed)``, their means, and the (1 - confidence) / 2 and
    1 - (1 - confidence) / 2 quantiles. Drawing in blocks (few draws per block here) gives the
    same draws, so the same interval."""
    from ragmeter.results import stats

    values = np.array([0.0, 0.25, 0.25, 0.5, 1.0, 1.0, 0.75, 0.1, 0.3])
    rng = np.random.default_rng(11)
    means = values[rng.integers(0, len(values), size=(n_resamples, len(values)))].mean(axis=1)
    expected = np.quantile(means, [0.05, 0.95])  # confidence 0.9: alpha = 0.1 / 2
    monkeypatch.setattr(stats, "MAX_DRAWS_PER_BLOCK", block_draws)
    assert bootstrap_ci(values, confidence=0.9, n_resamples=n_resamples, seed=11) == pytest.approx(tuple(expected), abs=1e-12)
