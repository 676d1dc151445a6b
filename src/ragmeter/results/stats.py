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


def balanced_accuracy(labels: Sequence[int], decisions: Sequence[int]) -> float:
    """Mean of the true-positive rate and the true-negative rate (0.5 for chance).

    Raises:
        ValueError: ``labels`` lacks one of the two classes.
    """
    y, d = np.asarray(labels, dtype=int), np.asarray(decisions, dtype=int)
    positives, negatives = y == 1, y == 0
    if not positives.any() or not negatives.any():
        raise ValueError("balanced accuracy needs both classes among the labels")
    return float(((d[positives] == 1).mean() + (d[negatives] == 0).mean()) / 2)


def roc_auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """Area under the ROC curve: the probability that a random positive scores higher than a
    random negative, ties counting half (the Mann-Whitney statistic).

    Raises:
        ValueError: ``labels`` lacks one of the two classes.
    """
    from scipy.stats import rankdata

    y, s = np.asarray(labels, dtype=int), np.asarray(scores, dtype=float)
    n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError("ROC-AUC needs both classes among the labels")
    ranks = rankdata(s)
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation; ``nan`` when either side is constant."""
    from scipy.stats import pearsonr

    if np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(pearsonr(x, y).statistic)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation; ``nan`` when either side is constant."""
    from scipy.stats import spearmanr

    if np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def bootstrap_statistic(
    statistic,
    *columns: Sequence[float],
    groups: Sequence[object] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, float | int | None]:
    """A statistic of paired columns and its percentile bootstrap interval.

    Args:
        statistic: Function of the columns (e.g. :func:`roc_auc`).
        columns: Equal-length columns, resampled together by row.
        groups: Optional cluster of each row (an article, a question): whole clusters are
            resampled, so rows that are not independent do not narrow the interval.
        confidence: Coverage of the interval.
        n_resamples: Bootstrap resamples; a resample where the statistic is undefined
            (one class only, a constant column) is skipped.
        seed: Seed of the random generator.

    Returns:
        ``{"value", "ci_low", "ci_high", "n"}``; the interval is ``None`` when fewer than
        half of the resamples gave a value.
    """
    data = [np.asarray(c) for c in columns]
    n = len(data[0])
    value = statistic(*data)
    rng = np.random.default_rng(seed)
    if groups is None:
        clusters = [np.array([i]) for i in range(n)]
    else:
        index: dict[object, list[int]] = {}
        for row, group in enumerate(groups):
            index.setdefault(group, []).append(row)
        clusters = [np.array(rows) for rows in index.values()]
    estimates = []
    for _ in range(n_resamples):
        picked = np.concatenate([clusters[i] for i in rng.integers(0, len(clusters), len(clusters))])
        try:
            estimate = statistic(*(c[picked] for c in data))
        except ValueError:
            continue
        if np.isfinite(estimate):
            estimates.append(estimate)
    alpha = (1 - confidence) / 2
    enough = len(estimates) >= n_resamples / 2
    low, high = np.quantile(estimates, [alpha, 1 - alpha]) if enough else (None, None)
    return {
        "value": float(value),
        "ci_low": None if low is None else float(low),
        "ci_high": None if high is None else float(high),
        "n": n,
    }


# Paired comparisons of two runs on the same samples -------------------------------------

#: Up to this many non-zero differences, the permutation test enumerates every sign
#: assignment (2**16 = 65,536) instead of drawing random ones.
EXACT_PERMUTATION_MAX_N = 16


def paired_bootstrap_ci(
    diffs: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean paired difference.

    ``diffs[i]`` is ``b_i - a_i`` for the i-th matched pair. Each resample draws ``n`` pairs
    with replacement (a pair keeps its two values together, so the pairing is respected)
    and takes the mean of their differences; the interval is the ``(1 - confidence) / 2``
    and ``1 - (1 - confidence) / 2`` quantiles of those means.

    Returns:
        ``(low, high)``, or ``None`` for fewer than two pairs.
    """
    return bootstrap_ci(diffs, confidence=confidence, n_resamples=n_resamples, seed=seed)


def _permutation_tolerance(d: np.ndarray) -> float:
    # Sums of the same numbers in another order differ by rounding: count those as ties.
    return 1e-9 * float(np.abs(d).sum())


def paired_permutation_pvalue(
    diffs: Sequence[float],
    n_permutations: int = 10_000,
    seed: int = 0,
    exact_max_n: int = EXACT_PERMUTATION_MAX_N,
) -> float:
    """Two-sided p-value of the paired sign-flip permutation test of "mean difference = 0".

    Under the null hypothesis each pair's two values are exchangeable, so each difference
    is as likely to have either sign. The statistic is ``T = |sum(d)|`` (equivalent to the
    absolute mean difference); the p-value is the share of sign assignments ``s`` with
    ``|sum(s * d)| >= T``. Zero differences take no part (their sign changes nothing).

    With at most ``exact_max_n`` non-zero differences every one of the ``2**n`` sign
    assignments is enumerated and the p-value is exact. Otherwise ``n_permutations``
    assignments are drawn at random (seeded) and the p-value is ``(1 + hits) /
    (1 + n_permutations)``, which counts the observed assignment and so is never 0 and
    never anti-conservative.

    Returns:
        The p-value in (0, 1]; 1.0 when every difference is zero (or there is none).
    """
    d = np.asarray(diffs, dtype=float)
    d = d[d != 0]
    n = len(d)
    if n == 0:
        return 1.0
    total = float(d.sum())
    threshold = abs(total) - _permutation_tolerance(d)
    if n <= exact_max_n:
        bits = (np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1
        sums = 2.0 * (bits @ d) - total  # sum(s * d) with s = 2 * bit - 1
        return float(np.count_nonzero(np.abs(sums) >= threshold) / 2**n)
    rng = np.random.default_rng(seed)
    hits = 0
    width = (n + 7) // 8
    block = max(1, _MAX_DRAWS_PER_BLOCK // n)
    for start in range(0, n_permutations, block):
        size = min(block, n_permutations - start)
        bits = np.unpackbits(rng.integers(0, 256, size=(size, width), dtype=np.uint8), axis=1)[:, :n]
        sums = 2.0 * (bits @ d) - total
        hits += int(np.count_nonzero(np.abs(sums) >= threshold))
    return (hits + 1) / (n_permutations + 1)


def wilcoxon_pvalue(diffs: Sequence[float]) -> float | None:
    """Two-sided p-value of the Wilcoxon signed-rank test (scipy defaults: zero differences
    dropped, exact distribution for small samples without ties); ``None`` when every
    difference is zero or there are none."""
    import warnings

    from scipy.stats import wilcoxon

    d = np.asarray(diffs, dtype=float)
    if not np.any(d != 0):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            p = float(wilcoxon(d).pvalue)
        except ValueError:
            return None
    return p if np.isfinite(p) else None


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given.

    With the ``m`` p-values sorted ascending, ``p_(1) <= ... <= p_(m)``, the adjusted value
    of the i-th is ``max over j <= i of min(1, (m - j + 1) * p_(j))``. Rejecting every
    hypothesis whose adjusted p-value is below ``alpha`` keeps the family-wise error rate
    (the chance of any false rejection) at most ``alpha``, whatever the dependence between
    the tests.
    """
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    if m == 0:
        return []
    if np.any(~np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError("p-values must be numbers in [0, 1]")
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return [float(x) for x in adjusted]
