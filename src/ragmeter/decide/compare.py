"""Compare two runs of ragmeter on the same samples: is B better than A, metric by metric?

Definitions (every random draw is seeded, so the same two runs always give the same report):

Matching
    By id, else by question; ambiguous and unmatched samples are listed, never dropped
    silently (:mod:`ragmeter.decide.matching`).

Per metric (present in both runs), over the matched pairs where both runs scored it
    ``d_i = b_i - a_i``. Pairs where either side is unscored are left out and counted
    (A only, B only, both).

    * mean difference: ``mean(d)``;
    * confidence interval: percentile paired bootstrap of ``mean(d)`` (pairs resampled with
      replacement; :func:`ragmeter.results.inference.paired_bootstrap_ci`);
    * p-value: two-sided paired sign-flip permutation test of ``mean(d) = 0``
      (:func:`ragmeter.results.inference.paired_permutation_pvalue`; exact up to 16 non-zero
      differences, else ``n_permutations`` random sign flips);
    * Holm-Bonferroni adjustment of those p-values across the metrics compared;
    * Wilcoxon signed-rank p-value, for information only (it decides nothing);
    * verdict: "B better" or "A better" when the Holm-adjusted p-value is below ``alpha``,
      the side being the one the mean difference favours given the metric's direction
      (``higher_is_better``); otherwise "no significant difference".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.decide.matching import Matching, pair_items
from ragmeter.report.summary import run_warnings
from ragmeter.results import Result, SampleResult
from ragmeter.results.inference import (
    EXACT_PERMUTATION_MAX_N,
    holm,
    paired_bootstrap_ci,
    paired_permutation_pvalue,
    wilcoxon_pvalue,
)

B_BETTER = "B better"
A_BETTER = "A better"
NO_DIFFERENCE = "no significant difference"
NOT_COMPARED = "not compared"

#: Samples listed per metric as the largest regressions.
TOP_REGRESSIONS = 5


def match_samples(a: Result, b: Result) -> Matching[SampleResult]:
    """Pair the samples of two runs (the rule of :mod:`ragmeter.decide.matching`)."""
    return pair_items(a.samples, b.samples, lambda s: s.sample, lambda s: s.key)


@dataclass
class MetricComparison:
    """The comparison of one metric over the matched samples (see the module docstring)."""

    metric: str
    unit: str | None
    higher_is_better: bool
    n_pairs: int
    excluded: dict[str, Any]
    mean_a: float | None = None
    mean_b: float | None = None
    mean_diff: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_permutation: float | None = None
    permutation: str = ""
    p_holm: float | None = None
    p_wilcoxon: float | None = None
    verdict: str = NOT_COMPARED
    note: str = ""
    top_regressions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def significant(self) -> bool:
        return self.verdict in (A_BETTER, B_BETTER)

    def improvement(self) -> float | None:
        """The mean difference in the direction of improvement (positive: B is better)."""
        if self.mean_diff is None:
            return None
        return self.mean_diff if self.higher_is_better else -self.mean_diff

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "n_pairs": self.n_pairs,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "mean_diff": self.mean_diff,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_permutation": self.p_permutation,
            "permutation": self.permutation,
            "p_holm": self.p_holm,
            "p_wilcoxon": self.p_wilcoxon,
            "significant": self.significant,
            "verdict": self.verdict,
            "note": self.note,
            "excluded": self.excluded,
            "top_regressions": self.top_regressions,
        }


@dataclass
class Comparison:
    """The outcome of comparing run B with run A."""

    label_a: str
    label_b: str
    run_a: dict[str, Any]
    run_b: dict[str, Any]
    matching: Matching
    metrics: list[MetricComparison]
    metrics_only_in_a: list[str]
    metrics_only_in_b: list[str]
    settings: dict[str, Any]
    #: What makes either run's numbers doubtful (:func:`~ragmeter.report.summary.run_warnings`), each said of its run.
    warnings: list[str] = field(default_factory=list)

    def metric(self, metric_id: str) -> MetricComparison:
        for m in self.metrics:
            if m.metric == metric_id:
                return m
        raise KeyError(f"metric '{metric_id}' was not compared; compared: {', '.join(m.metric for m in self.metrics)}")

    @property
    def counts(self) -> dict[str, int]:
        """How many metrics got each verdict."""
        out = {B_BETTER: 0, A_BETTER: 0, NO_DIFFERENCE: 0, NOT_COMPARED: 0}
        for m in self.metrics:
            out[m.verdict] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": {"label": self.label_a, "run": self.run_a},
            "b": {"label": self.label_b, "run": self.run_b},
            "settings": self.settings,
            "matching": self.matching.to_dict(),
            "metrics": [m.to_dict() for m in self.metrics],
            "metrics_only_in_a": self.metrics_only_in_a,
            "metrics_only_in_b": self.metrics_only_in_b,
            "verdicts": self.counts,
            "warnings": self.warnings,
        }


def _run_summary(result: Result) -> dict[str, Any]:
    run = result.run
    summary: dict[str, Any] = {key: run[key] for key in ("sources", "started_at", "n_samples", "ragmeter_version", "judge") if key in run}
    return summary | {"n_samples": len(result.samples)}


def compare_results(
    a: Result,
    b: Result,
    *,
    metrics: list[str] | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_permutations: int = 10_000,
    n_resamples: int = 10_000,
    seed: int = 0,
    label_a: str = "A",
    label_b: str = "B",
    top: int = TOP_REGRESSIONS,
) -> Comparison:
    """Compare run ``b`` with run ``a``, metric by metric, over their matched samples.

    Args:
        a, b: The two runs (B is the candidate; differences are B - A).
        metrics: Metric ids to compare (each must be in both runs); default: every metric
            present in both, in A's order. The Holm correction is over these.
        alpha: Family-wise significance level for the verdicts.
        confidence: Coverage of the bootstrap interval of the mean difference.
        n_permutations: Random sign flips of the permutation test (when not exact).
        n_resamples: Bootstrap resamples of the interval.
        seed: Seed of every random draw.
        label_a, label_b: Names of the runs in reports (their directories, say).
        top: Largest regressions listed per metric.

    Raises:
        ValueError: ``alpha`` or ``confidence`` outside (0, 1), or a metric asked for that
            is not in both runs.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    settings = {
        "alpha": alpha,
        "confidence": confidence,
        "n_permutations": n_permutations,
        "exact_permutation_max_n": EXACT_PERMUTATION_MAX_N,
        "n_resamples": n_resamples,
        "seed": seed,
        "correction": "holm",
        "top_regressions": top,
    }
    matching = match_samples(a, b)
    compared = [_compare_metric(m, a.metric(m), b.metric(m), matching, settings) for m in _common_metrics(a, b, metrics)]
    _decide(compared, alpha)
    return Comparison(
        label_a=label_a,
        label_b=label_b,
        run_a=_run_summary(a),
        run_b=_run_summary(b),
        matching=matching,
        metrics=compared,
        metrics_only_in_a=[m for m in a.metric_ids if m not in b.metric_ids],
        metrics_only_in_b=[m for m in b.metric_ids if m not in a.metric_ids],
        settings=settings,
        warnings=[f"{side} ({label}): {w}" for side, label, run in (("A", label_a, a), ("B", label_b, b)) for w in run_warnings(run)],
    )


def _common_metrics(a: Result, b: Result, wanted: list[str] | None) -> list[str]:
    """The metrics in both runs, in A's order (only those ``wanted``, which must all be there)."""
    common = [m for m in a.metric_ids if m in b.metric_ids]
    if wanted is None:
        return common
    missing = [m for m in wanted if m not in common]
    if missing:
        raise ValueError(f"metric(s) {', '.join(missing)} not in both runs; common: {', '.join(common) or 'none'}")
    return [m for m in common if m in wanted]


def _decide(compared: list[MetricComparison], alpha: float) -> None:
    """Holm-adjust the permutation p-values across the metrics and give each its verdict."""
    tested = [(m, m.p_permutation) for m in compared if m.p_permutation is not None]
    for (m, _), adjusted in zip(tested, holm([p for _, p in tested]), strict=True):
        m.p_holm = adjusted
        if adjusted < alpha and m.mean_diff != 0:
            m.verdict = B_BETTER if (m.improvement() or 0) > 0 else A_BETTER
        else:
            m.verdict = NO_DIFFERENCE


Row = tuple[SampleResult, SampleResult, float, float]


def _compare_metric(
    metric_id: str, info_a: dict[str, Any], info_b: dict[str, Any], matching: Matching[SampleResult], settings: dict[str, Any]
) -> MetricComparison:
    """One metric over the pairs scored in both runs (see the module docstring)."""
    higher_is_better = bool(info_b.get("higher_is_better", True))
    unit = info_b.get("unit")
    notes = []
    if info_a.get("config") != info_b.get("config"):
        notes.append(
            f"settings differ between the runs (A: {info_a.get('config')}, B: {info_b.get('config')}): the difference "
            "may come from them, not from the system; compare runs made with the same settings"
        )
    if bool(info_a.get("higher_is_better", True)) != higher_is_better or info_a.get("unit") != unit:
        notes.append("unit or direction differ between the runs; B's are used")
    rows, excluded = _scored_pairs(matching, metric_id)
    comparison = MetricComparison(metric_id, unit, higher_is_better, len(rows), excluded, note="; ".join(notes))
    if not rows:
        comparison.note = "; ".join([*notes, "no matched sample is scored in both runs"])
        return comparison
    _test(comparison, [vb - va for _, _, va, vb in rows], rows, settings)
    return comparison


def _scored_pairs(matching: Matching[SampleResult], metric_id: str) -> tuple[list[Row], dict[str, Any]]:
    """The matched pairs scored in both runs, and the count and keys of those left out."""
    rows: list[Row] = []
    excluded: dict[str, Any] = {"unscored_in_a": 0, "unscored_in_b": 0, "unscored_in_both": 0, "keys": []}
    for sa, sb in matching.pairs:
        va, vb = _value(sa, metric_id), _value(sb, metric_id)
        if va is None or vb is None:
            which = "unscored_in_both" if va is None and vb is None else "unscored_in_a" if va is None else "unscored_in_b"
            excluded[which] += 1
            excluded["keys"].append(sb.key)
            continue
        rows.append((sa, sb, va, vb))
    excluded["count"] = len(excluded["keys"])
    return rows, excluded


def _test(comparison: MetricComparison, diffs: list[float], rows: list[Row], settings: dict[str, Any]) -> None:
    """Means, the paired bootstrap interval, the permutation and Wilcoxon p-values, and
    the largest regressions (B - A in the bad direction, worst first)."""
    n = len(diffs)
    comparison.mean_a = sum(va for _, _, va, _ in rows) / n
    comparison.mean_b = sum(vb for _, _, _, vb in rows) / n
    comparison.mean_diff = sum(diffs) / n
    seed, n_permutations = settings["seed"], settings["n_permutations"]
    interval = paired_bootstrap_ci(diffs, confidence=settings["confidence"], n_resamples=settings["n_resamples"], seed=seed)
    if interval is not None:
        comparison.ci_low, comparison.ci_high = interval
    comparison.p_permutation = paired_permutation_pvalue(diffs, n_permutations=n_permutations, seed=seed)
    nonzero = sum(1 for d in diffs if d != 0)
    comparison.permutation = (
        f"exact ({2**nonzero} sign assignments)" if nonzero <= EXACT_PERMUTATION_MAX_N else f"{n_permutations} random sign flips"
    )
    comparison.p_wilcoxon = wilcoxon_pvalue(diffs)
    sign = 1.0 if comparison.higher_is_better else -1.0
    worse = sorted((r for r in rows if sign * (r[3] - r[2]) < 0), key=lambda r: sign * (r[3] - r[2]))
    comparison.top_regressions = [
        {"key": sb.key, "key_a": sa.key, "question": sb.sample.user_input or sa.sample.user_input or "", "a": va, "b": vb, "diff": vb - va}
        for sa, sb, va, vb in worse[: settings["top_regressions"]]
    ]


def _value(sample_result: SampleResult, metric_id: str) -> float | None:
    score = sample_result.scores.get(metric_id)
    if score is None or score.value is None or not math.isfinite(score.value):
        return None
    return float(score.value)


def compare_runs(dir_a: str | Path, dir_b: str | Path, **options: Any) -> Comparison:
    """Load two run directories written by ``ragmeter eval`` and compare them
    (see :func:`compare_results`; the labels default to the directories)."""
    options.setdefault("label_a", str(dir_a))
    options.setdefault("label_b", str(dir_b))
    return compare_results(Result.load(dir_a), Result.load(dir_b), **options)
