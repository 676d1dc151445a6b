"""Statistics for aggregates: descriptive summaries and bootstrap confidence intervals.

Every random draw is seeded, so the same scores always give the same intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike

#: Most index draws held in memory at once by the bootstrap (about 40 MB of int64).
MAX_DRAWS_PER_BLOCK = 5_000_000


def bootstrap_ci(
    values: ArrayLike,
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
    block = max(1, MAX_DRAWS_PER_BLOCK // n)
    for start in range(0, n_resamples, block):
        stop = min(start + block, n_resamples)
        means[start:stop] = data[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


class Description(TypedDict):
    """Descriptive statistics of a sample of values (``None`` each, without values)."""

    mean: float | None
    median: float | None
    std: float | None
    min: float | None
    max: float | None
    p95: float | None
    ci_low: float | None
    ci_high: float | None


def describe(values: ArrayLike, confidence: float = 0.95) -> Description:
    """Mean, median, standard deviation (n - 1), min, max, 95th percentile and the bootstrap
    interval of the mean. Fields are ``None`` when there are no values."""
    data = np.asarray(values, dtype=float)
    if len(data) == 0:
        return Description(mean=None, median=None, std=None, min=None, max=None, p95=None, ci_low=None, ci_high=None)
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


def balanced_accuracy(labels: ArrayLike, decisions: ArrayLike) -> float:
    """Mean of the true-positive rate and the true-negative rate (0.5 for chance).

    Raises:
        ValueError: ``labels`` lacks one of the two classes.
    """
    y, d = np.asarray(labels, dtype=int), np.asarray(decisions, dtype=int)
    positives, negatives = y == 1, y == 0
    if not positives.any() or not negatives.any():
        raise ValueError("balanced accuracy needs both classes among the labels")
    return float(((d[positives] == 1).mean() + (d[negatives] == 0).mean()) / 2)


def roc_auc(labels: ArrayLike, scores: ArrayLike) -> float:
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


def pearson(x: ArrayLike, y: ArrayLike) -> float:
    """Pearson correlation; ``nan`` when either side is constant."""
    from scipy.stats import pearsonr

    if np.std(np.asarray(x, dtype=float)) == 0 or np.std(np.asarray(y, dtype=float)) == 0:
        return float("nan")
    return float(pearsonr(x, y).statistic)


def spearman(x: ArrayLike, y: ArrayLike) -> float:
    """Spearman rank correlation; ``nan`` when either side is constant."""
    from scipy.stats import spearmanr

    if np.std(np.asarray(x, dtype=float)) == 0 or np.std(np.asarray(y, dtype=float)) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def bootstrap_statistic(
    statistic,
    *columns: ArrayLike,
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


def kendall(x: ArrayLike, y: ArrayLike) -> float:
    """Kendall's tau-b; ``nan`` when either side is constant."""
    from scipy.stats import kendalltau

    if np.std(np.asarray(x, dtype=float)) == 0 or np.std(np.asarray(y, dtype=float)) == 0:
        return float("nan")
    return float(kendalltau(x, y).statistic)


def confusion_matrix(a: Sequence[Any], b: Sequence[Any]) -> tuple[list[Any], np.ndarray]:
    """Categories (sorted) and the matrix of counts: rows ``a``, columns ``b``."""
    if len(a) != len(b):
        raise ValueError(f"the two raters rated {len(a)} and {len(b)} items")
    categories = sorted(set(a) | set(b))
    index = {c: i for i, c in enumerate(categories)}
    matrix = np.zeros((len(categories), len(categories)), dtype=int)
    for x, y in zip(a, b, strict=True):
        matrix[index[x], index[y]] += 1
    return categories, matrix


def cohens_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's kappa of two raters' categorical ratings: (p_o - p_e) / (1 - p_e), with p_o
    the observed agreement and p_e the agreement expected from the marginals; ``nan`` when
    p_e = 1 (both raters used one and the same category)."""
    _, matrix = confusion_matrix(list(a), list(b))
    total = matrix.sum()
    if total == 0:
        return float("nan")
    observed = np.trace(matrix) / total
    expected = float((matrix.sum(axis=1) * matrix.sum(axis=0)).sum()) / total**2
    if math.isclose(expected, 1.0):
        return float("nan")
    return float((observed - expected) / (1 - expected))


def accuracy(a: ArrayLike, b: ArrayLike) -> float:
    """Share of items both raters put in the same category."""
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape or x.size == 0:
        raise ValueError("accuracy needs two equally long, non-empty sequences")
    return float((x == y).mean())
