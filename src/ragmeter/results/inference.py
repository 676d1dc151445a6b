"""Statistical inference: paired tests between two runs, multiple-comparison correction, and
intervals for a proportion (Wilson) and for a mean from few labels (classical and
prediction-powered).

Every random draw is seeded, so the same inputs always give the same answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.results.stats import MAX_DRAWS_PER_BLOCK, bootstrap_ci


def normal_quantile(confidence: float) -> float:
    """z such that a standard normal falls within [-z, z] with probability ``confidence``.

    Raises:
        ValueError: ``confidence`` outside (0, 1).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - confidence) / 2))


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion (``successes`` may be fractional: ties count
    half); ``None`` when ``n`` is 0."""
    if n <= 0:
        return None
    z = normal_quantile(confidence)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * float(np.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0))) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class MeanCI:
    """An estimate of a mean with its normal confidence interval.

    Fields are floats, or arrays when the inputs were 2-D (one dataset per row).
    """

    estimate: Any
    low: Any
    high: Any
    se: Any
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"estimate": float(self.estimate), "ci_low": float(self.low), "ci_high": float(self.high), "se": float(self.se), "n": self.n}


def _floats(values: Any, name: str, at_least: int = 2) -> np.ndarray:
    data = np.asarray(values, dtype=float)
    if data.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D (one dataset) or 2-D (one dataset per row)")
    if data.shape[-1] < at_least:
        raise ValueError(f"{name} needs at least {at_least} values, got {data.shape[-1]}")
    if not np.isfinite(data).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return data


def _result(estimate, se, z, n) -> MeanCI:
    if np.ndim(estimate) == 0:
        estimate, se = float(estimate), float(se)
    return MeanCI(estimate, estimate - z * se, estimate + z * se, se, n)


def classical_mean_ci(human_labelled: Any, confidence: float = 0.95) -> MeanCI:
    """Mean of the labels with the normal interval mean -/+ z * sd / sqrt(n) (sd with ddof 1).

    Accepts 1-D values, or a 2-D array with one dataset per row (computed along the rows).
    """
    y = _floats(human_labelled, "human_labelled")
    n = y.shape[-1]
    return _result(y.mean(axis=-1), np.sqrt(y.var(axis=-1, ddof=1) / n), normal_quantile(confidence), n)


def ppi_mean_ci(judge_all: Any, judge_labelled: Any, human_labelled: Any, confidence: float = 0.95) -> MeanCI:
    """Prediction-powered estimate of the mean human label, with its normal interval.

    ``theta = mean(judge_all) - mean(judge_labelled - human_labelled)``,
    ``se = sqrt(var(judge_all) / N + var(judge_labelled - human_labelled) / n)`` (ddof 1).

    Args:
        judge_all: Judge scores of all N samples (labelled ones included).
        judge_labelled: Judge scores of the n labelled samples, aligned with...
        human_labelled: ...their human labels.
        confidence: Coverage of the interval.

    Inputs may be 2-D (one simulated dataset per row): every field is then an array.
    """
    f_all = _floats(judge_all, "judge_all")
    f = _floats(judge_labelled, "judge_labelled")
    y = _floats(human_labelled, "human_labelled")
    if f.shape != y.shape:
        raise ValueError(f"judge_labelled and human_labelled differ in shape: {f.shape} vs {y.shape}")
    if f_all.ndim != f.ndim or (f.ndim == 2 and f_all.shape[0] != f.shape[0]):
        raise ValueError("judge_all and the labelled arrays must hold the same number of datasets")
    big_n, n = f_all.shape[-1], f.shape[-1]
    rectifier = f - y
    estimate = f_all.mean(axis=-1) - rectifier.mean(axis=-1)
    se = np.sqrt(f_all.var(axis=-1, ddof=1) / big_n + rectifier.var(axis=-1, ddof=1) / n)
    return _result(estimate, se, normal_quantile(confidence), n)


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
    block = max(1, MAX_DRAWS_PER_BLOCK // n)
    for start in range(0, n_permutations, block):
        size = min(block, n_permutations - start)
        flips = np.unpackbits(rng.integers(0, 256, size=(size, width), dtype=np.uint8), axis=1)[:, :n]
        sums = 2.0 * (flips @ d) - total
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
