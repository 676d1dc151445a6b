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
