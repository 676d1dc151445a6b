"""Quality gate: pass or fail a run against thresholds and against a baseline run.

Thresholds (``--thresholds FILE``): the rules of :mod:`ragmeter.decide.thresholds`, checked
against the run's means and 95% intervals. A metric with no scored sample fails its
threshold.

Baseline (``--baseline DIR --max-drop X``): the run is compared with the baseline over their
matched samples (:mod:`ragmeter.decide.compare`). For each quality metric (a score in [0, 1])
present in both, with ``improvement_i = current_i - baseline_i`` (negated for metrics where
lower is better) over the pairs scored in both runs and ``drop = -mean(improvement)``:

    the check **fails when drop > max_drop and the paired permutation test says the drop is
    real**: its Holm-adjusted p-value (Holm across the metrics checked against the baseline)
    is below ``alpha``.

A drop within ``max_drop`` never fails, however certain; a larger drop that the test cannot
tell from noise does not fail either (the table shows it with its interval). Measurements
with a unit (ms, tokens, USD, rank) are not checked against the baseline (``max_drop`` is on
the [0, 1] scale): give them a threshold. A metric that the current run no longer scores on
matched samples that the baseline scored, leaving fewer than two pairs, fails.

Unscored samples leave the mean comparison, so a run that stops scoring samples (a judge
that fails, a field gone missing) could keep its mean. Each of these metrics therefore has a
second baseline check, on its **coverage**: the share of the matched samples that the metric
scored, ``coverage = n_scored / n_matched`` in each run (the same matched samples, so the same
denominator). It

    **fails when coverage_baseline - coverage_run > max_drop** (the same ``max_drop``; counts,
    not an estimate, so no test of significance),

and the message gives both shares with their counts and the commonest reasons the run gave
for the samples it did not score.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.decide.compare import Comparison, MetricComparison, compare_results
from ragmeter.decide.thresholds import GateInputError, Threshold, load_thresholds
from ragmeter.report.formatting import format_number, format_p_equals, format_signed
from ragmeter.report.junit import render_junit
from ragmeter.report.summary import run_warnings
from ragmeter.results import Aggregate, Result, SampleResult

PASS, FAIL, SKIPPED = "pass", "fail", "skipped"

#: Unscored reasons named in a failed coverage check, commonest first.
MAX_REASONS_SHOWN = 3


@dataclass
class Check:
    """One line of the gate: a rule on a metric, what was observed, and the verdict."""

    metric: str
    kind: str  # "threshold" or "baseline"
    rule: str
    observed: str
    verdict: str
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.metric}: {self.rule}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "kind": self.kind,
            "rule": self.rule,
            "observed": self.observed,
            "verdict": self.verdict,
            "message": self.message,
            "details": self.details,
        }


@dataclass
class GateReport:
    """Every check of a gate run."""

    run: str
    checks: list[Check]
    comparison: Comparison | None = None
    #: What makes the run's (or the baseline's) numbers doubtful: a results file that lost samples.
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == FAIL]

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "passed": self.passed,
            "n_checks": len(self.checks),
            "n_failed": len(self.failed),
            "checks": [c.to_dict() for c in self.checks],
            "baseline_matching": self.comparison.matching.to_dict() if self.comparison else None,
            "warnings": self.warnings,
        }

    def to_junit(self) -> str:
        """The checks as JUnit XML (see :func:`ragmeter.report.junit.render_junit`)."""
        return render_junit(self.to_dict())


def threshold_checks(result: Result, rules: list[Threshold]) -> list[Check]:
    """Check each rule against the run's aggregates (mean and 95% bootstrap CI)."""
    checks = []
    for rule in rules:
        info = result.metric(rule.metric)
        unit = info.get("unit")
        a = result.aggregates[rule.metric]
        rule_text = f"{rule.on} {'≥' if rule.bound == 'min' else '≤'} {format_number(rule.value, unit) if unit else f'{rule.value:g}'}"
        observed_value = {"mean": a["mean"], "ci_low": a["ci_low"], "ci_high": a["ci_high"]}[rule.on]
        shown = _aggregate_text(a, unit)
        details = {"bound": rule.bound, "threshold": rule.value, "on": rule.on, "observed": observed_value, "n_scored": a["n_scored"]}
        if observed_value is None:
            why = "no scored sample" if a["n_scored"] == 0 else "no interval (fewer than 2 scored samples)"
            checks.append(
                Check(rule.metric, "threshold", rule_text, shown, FAIL, f"{rule.metric}: {why}; the threshold cannot hold", details)
            )
            continue
        ok = rule.holds(observed_value)
        message = f"{rule.metric} {rule.on} {rule.versus(observed_value, unit)}"
        if a["n_unscored"]:
            message += f" ({a['n_unscored']} sample(s) unscored)"
        checks.append(Check(rule.metric, "threshold", rule_text, shown, PASS if ok else FAIL, message, details))
    return checks


def _aggregate_text(a: Aggregate, unit: str | None) -> str:
    if a.get("mean") is None:
        return f"no scored sample ({a['n_unscored']} unscored)"
    text = f"{format_number(a['mean'], unit)}"
    if a.get("ci_low") is not None:
        text += f" [{format_number(a['ci_low'], unit)}, {format_number(a['ci_high'], unit)}]"
    text += f", n={a['n_scored']}"
    if a["n_unscored"]:
        text += f", {a['n_unscored']} unscored"
    return text


def baseline_checks(
    result: Result,
    baseline: Result,
    max_drop: float,
    *,
    alpha: float = 0.05,
    n_permutations: int = 10_000,
    seed: int = 0,
    run_label: str = "current",
    baseline_label: str = "baseline",
) -> tuple[list[Check], Comparison]:
    """Check each quality metric present in both runs against the baseline: its mean, then
    its coverage (two checks per metric; see the module docstring for the rules). Returns the
    checks and the comparison (baseline = A, run = B).

    Raises:
        GateInputError: ``max_drop`` is negative, or no sample of the run matches one of
            the baseline.
    """
    if not (math.isfinite(max_drop) and max_drop >= 0):
        raise GateInputError(f"--max-drop must be a number >= 0, got {max_drop}")
    common = [m for m in baseline.metric_ids if m in result.metric_ids]
    quality = [m for m in common if result.metric(m).get("unit") is None]
    comparison = compare_results(
        baseline,
        result,
        metrics=quality,
        alpha=alpha,
        n_permutations=n_permutations,
        seed=seed,
        label_a=baseline_label,
        label_b=run_label,
    )
    if not comparison.matching.pairs:
        raise GateInputError(
            f"no sample of {run_label} matches one of the baseline {baseline_label} (by id or question): is it the same dataset?"
        )
    rule = f"drop ≤ {max_drop:g}, or not significant (Holm, α={alpha:g})"
    checks = [
        check for m in comparison.metrics for check in (_mean_check(m, rule, max_drop, alpha), _coverage_check(m, comparison, max_drop))
    ]
    return checks + _skipped(result, baseline, quality), comparison


def _skipped(result: Result, baseline: Result, quality: list[str]) -> list[Check]:
    """The baseline checks that do not apply: measurements with a unit, metrics missing now."""
    skipped = []
    for metric in baseline.metric_ids:
        if metric not in result.metric_ids:
            message = f"{metric} is in the baseline but was not evaluated in this run"
        elif metric not in quality:
            unit = result.metric(metric).get("unit")
            message = f"{metric} is a measurement in {unit}: --max-drop applies to [0, 1] scores; set a threshold instead"
        else:
            continue
        skipped.append(Check(metric, "baseline", "drop vs baseline", "–", SKIPPED, message))
    return skipped


def _mean_check(m: MetricComparison, rule: str, max_drop: float, alpha: float) -> Check:
    """The baseline check of one metric's mean over the pairs scored in both runs."""
    excluded = m.excluded
    details = {**m.to_dict(), "check": "mean", "max_drop": max_drop, "alpha": alpha}
    details.pop("top_regressions", None)
    if m.mean_diff is None or m.n_pairs < 2:
        lost = excluded["unscored_in_b"]
        observed = f"{m.n_pairs} scored pair(s); {lost} matched sample(s) scored by the baseline are unscored now"
        if lost:
            message = f"{m.metric}: the run no longer scores {lost} matched sample(s) the baseline scored; nothing left to compare"
            return Check(m.metric, "baseline", rule, observed, FAIL, message, details)
        return Check(m.metric, "baseline", rule, observed, SKIPPED, f"{m.metric}: fewer than 2 samples scored in both runs", details)
    improvement = m.improvement() or 0.0
    drop = -improvement
    observed = (
        f"{format_signed(m.mean_diff, None)} [{format_signed(m.ci_low, None)}, {format_signed(m.ci_high, None)}], "
        f"{format_p_equals(m.p_permutation)}, Holm {format_p_equals(m.p_holm)}, n={m.n_pairs}"
    )
    if excluded["count"]:
        observed += f", {excluded['count']} pair(s) unscored"
    significant = m.p_holm is not None and m.p_holm < alpha
    failed = drop > max_drop and significant
    if failed:
        message = (
            f"{m.metric} dropped by {drop:.3f} (> {max_drop:g}) versus the baseline "
            f"({m.mean_a:.3f} → {m.mean_b:.3f}); significant: Holm-adjusted {format_p_equals(m.p_holm)} < α = {alpha:g}"
        )
    elif drop > max_drop:
        message = f"{m.metric} dropped by {drop:.3f} (> {max_drop:g}) but not significantly (Holm-adjusted {format_p_equals(m.p_holm)} ≥ α = {alpha:g})"
    elif drop > 0:
        message = f"{m.metric} dropped by {drop:.3f}, within {max_drop:g}"
    else:
        message = f"{m.metric} changed by {format_signed(improvement, None)} (no drop)"
    if m.note:  # the comparison's caveats (settings or units that differ) beside the verdict, which stands on the numbers
        message += f"; note: {m.note}"
    return Check(m.metric, "baseline", rule, observed, FAIL if failed else PASS, message, details)


def _coverage_check(m: MetricComparison, comparison: Comparison, max_drop: float) -> Check:
    """The baseline check of one metric's coverage: the share of the matched samples it
    scored, in the run against the baseline (see the module docstring)."""
    n = len(comparison.matching.pairs)
    excluded = m.excluded
    # Every matched pair is scored in both runs (m.n_pairs) or excluded for one side or both.
    n_baseline = m.n_pairs + excluded["unscored_in_b"]
    n_run = m.n_pairs + excluded["unscored_in_a"]
    share_baseline, share_run = n_baseline / n, n_run / n
    drop = (n_baseline - n_run) / n  # one division, so a drop of exactly max_drop is not above it
    reasons: Counter[tuple[str, bool]] = Counter()
    for _, sample_result in comparison.matching.pairs:
        reason, failed_to_score = _unscored_reason(sample_result, m.metric)
        if reason is not None:
            reasons[reason, failed_to_score] += 1
    unscored_reasons = [{"reason": r, "count": c, "failed": f} for (r, f), c in reasons.most_common(MAX_REASONS_SHOWN)]
    rule = f"coverage ≥ baseline's − {max_drop:g}"
    observed = f"{share_run:.1%} ({n_run}/{n}); baseline {share_baseline:.1%} ({n_baseline}/{n})"
    details = {
        "check": "coverage",
        "n_matched": n,
        "n_scored_baseline": n_baseline,
        "n_scored_run": n_run,
        "coverage_baseline": share_baseline,
        "coverage_run": share_run,
        "drop": drop,
        "max_drop": max_drop,
        "unscored_reasons_run": unscored_reasons,
    }
    shares = (
        f"{m.metric} scored {n_run} of {n} matched samples ({share_run:.1%}) vs {n_baseline} of {n} ({share_baseline:.1%}) in the baseline"
    )
    failed = drop > max_drop
    if failed:
        message = f"{shares}: coverage dropped by {drop:.3f} (> {max_drop:g})"
        if unscored_reasons:
            message += "; commonest reason(s) unscored in the run: " + ", ".join(
                f'"{r["reason"]}" ({r["count"]})' for r in unscored_reasons
            )
    elif drop > 0:
        message = f"{shares}: coverage dropped by {drop:.3f}, within {max_drop:g}"
    else:
        message = f"{shares}: no coverage drop"
    return Check(m.metric, "baseline", rule, observed, FAIL if failed else PASS, message, details)


def _unscored_reason(sample_result: SampleResult, metric: str) -> tuple[str | None, bool]:
    """Why ``metric`` has no usable value for this sample, and whether scoring failed;
    ``(None, False)`` when it has one (no score, or no value: a :class:`Score` never holds
    a value that is not finite)."""
    score = sample_result.scores.get(metric)
    if score is None:
        return "not evaluated", False
    if score.value is None:
        return score.reason or "no reason given", score.failed
    return None, False


def run_gate(
    run_dir: str | Path,
    *,
    thresholds: str | Path | None = None,
    baseline: str | Path | None = None,
    max_drop: float = 0.02,
    alpha: float = 0.05,
    n_permutations: int = 10_000,
    seed: int = 0,
) -> GateReport:
    """Load the run (and baseline) and perform every check asked for.

    Raises:
        GateInputError: Nothing to check, an unreadable run directory, or a bad
            thresholds file (the message names the file and key).
    """
    if thresholds is None and baseline is None:
        raise GateInputError("nothing to check: give --thresholds FILE and/or --baseline DIR")
    if not 0 < alpha < 1:
        raise GateInputError(f"--alpha must be between 0 and 1, got {alpha}")
    result = _load(run_dir)
    checks: list[Check] = []
    if thresholds is not None:
        checks += threshold_checks(result, load_thresholds(thresholds, result))
    comparison, warnings = None, run_warnings(result)
    if baseline is not None:
        reference = _load(baseline)
        warnings += [f"baseline {baseline}: {w}" for w in run_warnings(reference)]
        baseline_checks_, comparison = baseline_checks(
            result,
            reference,
            max_drop,
            alpha=alpha,
            n_permutations=n_permutations,
            seed=seed,
            run_label=str(run_dir),
            baseline_label=str(baseline),
        )
        checks += baseline_checks_
    return GateReport(str(run_dir), checks, comparison, warnings)


def _load(directory: str | Path) -> Result:
    import json

    try:
        return Result.load(directory)
    except (FileNotFoundError, json.JSONDecodeError, KeyError, ValueError) as exc:
        raise GateInputError(f"cannot read run directory {directory}: {exc}") from None
