"""Statistics for aggregates: descriptive summaries and bootstrap confidence intervals.

Every random draw is seeded, so the same scores always give the same intervals.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Most index draws held in memory at once by the bootstrap (about 40 MB of int64).
_MAX_DRAWS_PER_BLOCK = 5_000_000


def bootstrap_ci(
    values: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap confidence interval for the mean of ``values``.

    Args:
        values: The observations (at least two).
        confidence: Coverage of the interval, e.g. 0.95.
        n_resamples: Number of bootstrap resamples.
        seed: Seed of the random generator; fixed so intervals are reproducible.

    Returns:
        ``(low, high)``, or ``None`` for fewer than two values (no interval exists).
    """
    data = np.asarray(values, dtype=float)
    n = len(data)
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    block = max(1, _MAX_DRAWS_PER_BLOCK // n)
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        means[start:stop] = data[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def describe(values: Sequence[float], confidence: float = 0.95) -> dict[str, float | int | None]:
    """Mean, median, standard deviation (n - 1), min, max, 95th percentile and the bootstrap
    interval of the mean. Fields are ``None`` when there are no values."""
    data = np.asarray(values, dtype=float)
    if len(data) == 0:
        return {k: None for k in ("mean", "median", "std", "min", "max", "p95", "ci_low", "ci_high")}
    interval = bootstrap_ci(data, confidence)
    return {
        "mean": float(data.mean()),
        "median": float(np.median(data)),
        "std": float(data.std(ddof=1)) if len(data) > 1 else 0.0,
        "min": float(data.min()),
        "max": float(data.max()),
        "p95": float(np.quantile(data, 0.95)),
        "ci_low": interval[0] if interval else None,
        "ci_high": interval[1] if interval else None,
    }
