"""Calibration of a metric with a few human labels: agreement, and the true mean by PPI.

Given a run's scores of one metric (the "judge", on all N scored samples) and human labels
(``{"id": ..., "label": number}``, 0/1 or a score in [0, 1]) for a small subset of n of
them, this module reports:

- **Agreement** on the labelled subset, each with a 95% percentile bootstrap interval over
  the labelled samples: accuracy and Cohen's kappa after thresholding both sides at 0.5
  (judge >= 0.5 is a pass; with 0/1 labels the labels are unchanged), Pearson, Spearman
  and Kendall's tau-b (scipy) on the raw values
  (:mod:`ragmeter.results.stats`).
- **Prediction-powered inference** (Angelopoulos et al., "Prediction-powered inference",
  Science 2023) of the mean human label over the whole run::

      theta_PP = mean(judge on all N) - mean(judge - human on the n labelled)
      se       = sqrt(var(judge on all N) / N + var(judge - human on the n labelled) / n)
      interval = theta_PP -/+ z * se           (normal; z = 1.96 for 95%)

  The second term (the rectifier) removes the judge's bias, so the interval is valid
  however biased the judge is; it is narrow when the judge tracks the labels
  (var(judge - human) small). Variances use ddof = 1. All N scored samples, the labelled
  ones included, form the first term, as the brief of this tool asks; with n much smaller
  than N the dependence this adds is negligible. The labelled samples must be a random
  subset of the run for the interval to hold.
- **Classical** interval from the labels alone: mean(human) -/+ z * sd(human) / sqrt(n).
- Both estimates and intervals are cut to [0, 1], where a mean of the labels lies.
- **Effective sample size gain**: se_classical^2 / se_PP^2, the factor by which PPI
  multiplies the worth of the labels (n labels with PPI are as good as n * gain labels
  alone).

Labels for samples not in the run, labelled samples the metric did not score, unscored
samples of the run and bad label lines are all reported, never dropped silently.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ragmeter.data.issues import describe_briefly
from ragmeter.decide.labels import read_labels, score
from ragmeter.decide.matching import label_of
from ragmeter.results import Result
from ragmeter.results.inference import MeanCI, classical_mean_ci, ppi_mean_ci
from ragmeter.results.stats import accuracy, bootstrap_statistic, cohens_kappa, kendall, pearson, spearman

THRESHOLD = 0.5
#: Below this many labels the numbers are reported with a warning.
FEW_LABELS = 30


def passes(values: Any, threshold: float = THRESHOLD) -> np.ndarray:
    """1 where a value is at least ``threshold``, else 0."""
    return (np.asarray(values, dtype=float) >= threshold).astype(int)


def agreement(
    judge: ArrayLike, human: ArrayLike, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """Accuracy and Cohen's kappa (both sides thresholded at 0.5), Pearson, Spearman and
    Kendall's tau-b, each ``{"value", "ci_low", "ci_high"}`` with a percentile bootstrap
    interval over the labelled samples (``value`` is ``None`` where a side is constant)."""
    statistics: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
        "accuracy": lambda x, y: accuracy(passes(x), passes(y)),
        "cohens_kappa": lambda x, y: cohens_kappa(passes(x).tolist(), passes(y).tolist()),
        "pearson": pearson,
        "spearman": spearman,
        "kendall_tau": kendall,
    }
    table = {}
    for name, statistic in statistics.items():
        entry = bootstrap_statistic(statistic, judge, human, confidence=confidence, n_resamples=n_resamples, seed=seed)
        value = entry["value"]
        table[name] = {
            "value": value if value is not None and np.isfinite(value) else None,
            "ci_low": entry["ci_low"],
            "ci_high": entry["ci_high"],
        }
    return table


@dataclass
class CalibrationReport:
    """Agreement of one metric with human labels, and the PPI and classical means."""

    metric: str
    n_samples: int
    n_scored: int
    n_labels: int
    n_used: int
    binary_labels: bool
    agreement: dict[str, dict[str, Any]]
    judge_mean_all: float
    judge_mean_labelled: float
    human_mean_labelled: float
    rectifier: float
    ppi: MeanCI
    classical: MeanCI
    variance_ratio: float | None
    confidence: float
    labels_not_in_run: list[str] = field(default_factory=list)
    labelled_unscored: list[dict[str, str]] = field(default_factory=list)
    unscored_reasons: dict[str, int] = field(default_factory=dict)
    label_issues: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    run_dir: str | None = None
    labels_file: str | None = None

    @property
    def effective_labels(self) -> float | None:
        return None if self.variance_ratio is None else self.n_used * self.variance_ratio

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "run_dir": self.run_dir,
            "labels_file": self.labels_file,
            "confidence": self.confidence,
            "n_samples": self.n_samples,
            "n_scored": self.n_scored,
            "n_labels": self.n_labels,
            "n_used": self.n_used,
            "binary_labels": self.binary_labels,
            "threshold": THRESHOLD,
            "agreement": self.agreement,
            "mean": {
                "judge_mean_all": self.judge_mean_all,
                "judge_mean_labelled": self.judge_mean_labelled,
                "human_mean_labelled": self.human_mean_labelled,
                "rectifier": self.rectifier,
                "ppi": self.ppi.to_dict(),
                "classical": self.classical.to_dict(),
                "variance_ratio": self.variance_ratio,
                "effective_labels": self.effective_labels,
                "formula": "theta_PP = mean(judge, all N) - mean(judge - human, n labelled); "
                "se = sqrt(var(judge, all N)/N + var(judge - human, labelled)/n); normal interval",
            },
            "missing": {
                "labels_not_in_run": self.labels_not_in_run,
                "labelled_unscored": self.labelled_unscored,
                "unscored_samples": self.unscored_reasons,
                "label_issues": self.label_issues,
            },
            "warnings": self.warnings,
        }


@dataclass
class _Labelled:
    judge: np.ndarray
    human: np.ndarray
    judge_all: list[float]
    not_in_run: list[str]
    unscored_labelled: list[dict[str, str]]
    unscored_reasons: Counter[str]


def _labelled(result: Result, metric: str, labels: Mapping[str, float]) -> _Labelled:
    """The metric's scores next to their labels, and everything that could not be paired."""
    judge_all: list[float] = []
    unscored: Counter[str] = Counter()
    pairs: list[tuple[float, float]] = []
    used: set[str] = set()
    unscored_labelled: list[dict[str, str]] = []
    for sample in result.samples:
        found = sample.scores.get(metric)
        value = found.value if found is not None else None
        if value is not None:
            judge_all.append(float(value))
        else:
            unscored[found.reason if found is not None and found.reason else "not evaluated"] += 1
        label = label_of(labels, sample.sample, sample.key)
        if label is None:
            continue
        used.add(sample.sample.id if sample.sample.id is not None else sample.key)
        if value is None:
            reason = (found.reason if found is not None else None) or "not evaluated"
            unscored_labelled.append({"id": sample.sample.id or sample.key, "reason": reason})
        else:
            pairs.append((float(value), label))
    return _Labelled(
        judge=np.array([p[0] for p in pairs]),
        human=np.array([p[1] for p in pairs]),
        judge_all=judge_all,
        not_in_run=[key for key in labels if key not in used],
        unscored_labelled=unscored_labelled,
        unscored_reasons=unscored,
    )


def calibrate(
    result: Result,
    metric: str,
    labels: Mapping[str, float],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    label_issues: Sequence[str] = (),
) -> CalibrationReport:
    """Compare ``metric``'s scores in ``result`` with human ``labels`` (sample id -> label).

    Raises:
        KeyError: The run has no such metric.
        ValueError: The metric is not a score in [0, 1], or fewer than 2 labelled samples
            are scored.
    """
    info = result.metric(metric)
    if info.get("unit"):
        raise ValueError(f"metric '{metric}' is in {info['unit']}, not a score in [0, 1]: it cannot be compared with labels in [0, 1]")
    found = _labelled(result, metric, labels)
    judge, human, n = found.judge, found.human, len(found.judge)
    if n < 2:
        unusable = f"; {len(label_issues)} label line(s) could not be used: " + "; ".join(label_issues[:3]) if label_issues else ""
        raise ValueError(
            f"only {n} labelled sample(s) have a '{metric}' score ({len(found.not_in_run)} label(s) for samples not in "
            f"the run, {len(found.unscored_labelled)} for unscored samples): at least 2 are needed{unusable}"
        )
    ppi = _within_labels(ppi_mean_ci(found.judge_all, judge, human, confidence))
    classical = _within_labels(classical_mean_ci(human, confidence))
    return CalibrationReport(
        metric=metric,
        n_samples=len(result.samples),
        n_scored=len(found.judge_all),
        n_labels=len(labels),
        n_used=n,
        binary_labels=bool(np.isin(human, (0.0, 1.0)).all()),
        agreement=agreement(judge, human, confidence, n_resamples, seed),
        judge_mean_all=float(np.mean(found.judge_all)),
        judge_mean_labelled=float(judge.mean()),
        human_mean_labelled=float(human.mean()),
        rectifier=float((judge - human).mean()),
        ppi=ppi,
        classical=classical,
        variance_ratio=float(classical.se**2 / ppi.se**2) if ppi.se > 0 else None,
        confidence=confidence,
        labels_not_in_run=found.not_in_run,
        labelled_unscored=found.unscored_labelled,
        unscored_reasons=dict(found.unscored_reasons.most_common()),
        label_issues=list(label_issues),
        warnings=_warnings(metric, info, n, found, label_issues),
    )


def _within_labels(ci: MeanCI) -> MeanCI:
    """``ci`` cut to [0, 1], where the mean of labels in [0, 1] lies: the normal interval of a
    few labels reaches past it ("0.500 [-0.066, 1.066]"), and the PPI estimate can too when
    the rectifier is large; cutting loses no coverage, since the true mean is inside [0, 1]."""
    return replace(ci, estimate=float(np.clip(ci.estimate, 0.0, 1.0)), low=float(max(ci.low, 0.0)), high=float(min(ci.high, 1.0)))


def _warnings(metric: str, info: dict[str, Any], n: int, found: _Labelled, label_issues: Sequence[str]) -> list[str]:
    warnings = []
    if n < FEW_LABELS:
        warnings.append(f"only {n} labelled samples: the intervals are rough (normal approximation)")
    if not info.get("higher_is_better", True):
        warnings.append(f"'{metric}' is lower-is-better: the labels should be on the metric's scale for the agreement to mean much")
    if found.not_in_run:
        named = ", ".join(describe_briefly(k) for k in found.not_in_run[:5]) + (" …" if len(found.not_in_run) > 5 else "")
        warnings.append(f"{len(found.not_in_run)} label(s) name samples that are not in the run: {named}")
    if found.unscored_labelled:
        warnings.append(f"{len(found.unscored_labelled)} labelled sample(s) have no '{metric}' score and are left out")
    if label_issues:  # the first named, so that the console says which line and why (the report lists them all)
        warnings.append(f"{len(label_issues)} label line(s) could not be used; the first: {label_issues[0]}")
    return warnings


def calibrate_run(run_dir: str | Path, labels_file: str | Path, metric: str, **options: Any) -> CalibrationReport:
    """:func:`calibrate` on a run directory and a labels file (``{"id": ..., "label": 0/1 or
    a score in [0, 1]}`` per line; see :mod:`ragmeter.decide.labels`)."""
    labels = read_labels(labels_file, "label", score)
    report = calibrate(Result.load(run_dir), metric, labels.by_id, label_issues=labels.problems, **options)
    report.run_dir, report.labels_file = str(run_dir), str(labels_file)
    return report


def default_out(run_dir: str | Path, metric: str) -> Path:
    """``<run_dir>/calibration_<metric>`` (characters unsafe in a file name replaced)."""
    return Path(run_dir) / f"calibration_{re.sub(r'[^A-Za-z0-9_.@-]+', '_', metric).strip('_')}"
