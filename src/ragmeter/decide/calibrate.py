"""Calibration of a metric with a few human labels: agreement, and the true mean by PPI.

Given a run's scores of one metric (the "judge", on all N scored samples) and human labels
(``{"id": ..., "label": number}``, 0/1 or a score in [0, 1]) for a small subset of n of
them, this module reports:

- **Agreement** on the labelled subset, each with a 95% percentile bootstrap interval over
  the labelled samples: accuracy and Cohen's kappa after thresholding both sides at 0.5
  (judge >= 0.5 is a pass; with 0/1 labels the labels are unchanged), Pearson, Spearman
  and Kendall's tau-b (scipy) on the raw values.
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
- **Effective sample size gain**: se_classical^2 / se_PP^2, the factor by which PPI
  multiplies the worth of the labels (n labels with PPI are as good as n * gain labels
  alone).

Labels for samples not in the run, labelled samples the metric did not score, unscored
samples of the run and bad label lines are all reported, never dropped silently.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.report import write_json_and_markdown
from ragmeter.results import Result

THRESHOLD = 0.5
JSON_FILE = "calibration.json"
MARKDOWN_FILE = "calibration.md"
#: Below this many labels the numbers are reported with a warning.
FEW_LABELS = 30


# ---- pure statistics -----------------------------------------------------------------------


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


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    from scipy.stats import norm

    return float(norm.ppf(1 - (1 - confidence) / 2))


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
    return _result(y.mean(axis=-1), np.sqrt(y.var(axis=-1, ddof=1) / n), _z(confidence), n)


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
    return _result(estimate, se, _z(confidence), n)


def confusion_matrix(a: Sequence[Any], b: Sequence[Any]) -> tuple[list[Any], np.ndarray]:
    """Categories (sorted) and the matrix of counts: rows ``a``, columns ``b``."""
    if len(a) != len(b):
        raise ValueError(f"the two raters rated {len(a)} and {len(b)} items")
    categories = sorted(set(a) | set(b))
    index = {c: i for i, c in enumerate(categories)}
    matrix = np.zeros((len(categories), len(categories)), dtype=int)
    for x, y in zip(a, b):
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


def accuracy(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Share of items both raters put in the same category."""
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape or x.size == 0:
        raise ValueError("accuracy needs two equally long, non-empty sequences")
    return float((x == y).mean())


def _correlation(kind: str) -> Callable[[np.ndarray, np.ndarray], float]:
    from scipy import stats

    def statistic(x: np.ndarray, y: np.ndarray) -> float:
        if np.all(x == x[0]) or np.all(y == y[0]):
            return float("nan")  # undefined for a constant side
        if kind == "pearson":
            return float(stats.pearsonr(x, y).statistic)
        if kind == "spearman":
            return float(stats.spearmanr(x, y).statistic)
        return float(stats.kendalltau(x, y).statistic)

    return statistic


def passes(values: Any, threshold: float = THRESHOLD) -> np.ndarray:
    """1 where a value is at least ``threshold``, else 0."""
    return (np.asarray(values, dtype=float) >= threshold).astype(int)


def bootstrap_paired(
    statistic: Callable[[np.ndarray, np.ndarray], float],
    x: Sequence[float],
    y: Sequence[float],
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """``statistic(x, y)`` with a percentile bootstrap interval over the (x, y) pairs.

    Resamples where the statistic is undefined (``nan``: a constant side) are skipped; the
    interval is ``None`` when fewer than half of them gave a value. The value itself is
    ``None`` when undefined on the data.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    value = statistic(x, y)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(x), size=(n_resamples, len(x)))
    estimates = np.array([statistic(x[d], y[d]) for d in draws])
    estimates = estimates[np.isfinite(estimates)]
    alpha = (1 - confidence) / 2
    enough = len(estimates) >= n_resamples / 2
    low, high = (float(v) for v in np.quantile(estimates, [alpha, 1 - alpha])) if enough else (None, None)
    return {"value": float(value) if math.isfinite(value) else None, "ci_low": low, "ci_high": high}


def agreement(judge: Sequence[float], human: Sequence[float], confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Accuracy and Cohen's kappa (both sides thresholded at 0.5), Pearson, Spearman and
    Kendall's tau-b, each ``{"value", "ci_low", "ci_high"}`` with a bootstrap interval."""
    statistics: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
        "accuracy": lambda x, y: accuracy(passes(x), passes(y)),
        "cohens_kappa": lambda x, y: cohens_kappa(passes(x).tolist(), passes(y).tolist()),
        "pearson": _correlation("pearson"),
        "spearman": _correlation("spearman"),
        "kendall_tau": _correlation("kendall"),
    }
    return {
        name: bootstrap_paired(statistic, judge, human, confidence, n_resamples, seed)
        for name, statistic in statistics.items()
    }


# ---- labels and the run --------------------------------------------------------------------


def read_labels(path: str | Path) -> tuple[dict[str, float], list[str]]:
    """Labels by sample id from JSONL lines ``{"id": ..., "label": number in [0, 1]}``, and
    the problems found (each naming the file and line): bad JSON, a missing field, a label
    that is not a number in [0, 1], a repeated id (the first label is kept)."""
    labels: dict[str, float] = {}
    problems: list[str] = []
    text = Path(path).read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: invalid JSON ({exc.msg})")
            continue
        if not isinstance(row, dict) or "id" not in row or "label" not in row:
            problems.append(f'{where}: expected {{"id": ..., "label": number}}')
            continue
        key, label = str(row["id"]), row["label"]
        if isinstance(label, bool) or not isinstance(label, (int, float)) or not math.isfinite(label) or not 0 <= label <= 1:
            problems.append(f"{where}: label of '{key}' must be a number in [0, 1], got {label!r}")
            continue
        if key in labels:
            problems.append(f"{where}: id '{key}' labelled again; the first label is kept")
            continue
        labels[key] = float(label)
    return labels, problems


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

    def to_markdown(self) -> str:
        return render_markdown(self)


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
    by_key: dict[str, Any] = {}
    for sample in result.samples:
        by_key[sample.key] = sample
        if sample.sample.id is not None:
            by_key.setdefault(sample.sample.id, sample)
    judge_all: list[float] = []
    unscored: Counter[str] = Counter()
    for sample in result.samples:
        score = sample.scores.get(metric)
        if score is not None and score.value is not None:
            judge_all.append(float(score.value))
        else:
            unscored[score.reason if score is not None and score.reason else "not evaluated"] += 1
    not_in_run, labelled_unscored, pairs = [], [], []
    for key, label in labels.items():
        sample = by_key.get(key)
        if sample is None:
            not_in_run.append(key)
            continue
        score = sample.scores.get(metric)
        if score is None or score.value is None:
            labelled_unscored.append({"id": key, "reason": (score.reason if score is not None else None) or "not evaluated"})
            continue
        pairs.append((float(score.value), label))
    if len(pairs) < 2:
        raise ValueError(
            f"only {len(pairs)} labelled sample(s) have a '{metric}' score ({len(not_in_run)} label(s) for samples not in "
            f"the run, {len(labelled_unscored)} for unscored samples): at least 2 are needed"
        )
    judge = np.array([p[0] for p in pairs])
    human = np.array([p[1] for p in pairs])
    ppi = ppi_mean_ci(judge_all, judge, human, confidence)
    classical = classical_mean_ci(human, confidence)
    ratio = float(classical.se**2 / ppi.se**2) if ppi.se > 0 else None
    warnings = []
    if len(pairs) < FEW_LABELS:
        warnings.append(f"only {len(pairs)} labelled samples: the intervals are rough (normal approximation)")
    if not info.get("higher_is_better", True):
        warnings.append(f"'{metric}' is lower-is-better: the labels should be on the metric's scale for the agreement to mean much")
    if not_in_run:
        warnings.append(f"{len(not_in_run)} label(s) name samples that are not in the run")
    if labelled_unscored:
        warnings.append(f"{len(labelled_unscored)} labelled sample(s) have no '{metric}' score and are left out")
    if label_issues:
        warnings.append(f"{len(label_issues)} label line(s) could not be used")
    return CalibrationReport(
        metric=metric,
        n_samples=len(result.samples),
        n_scored=len(judge_all),
        n_labels=len(labels),
        n_used=len(pairs),
        binary_labels=bool(np.isin(human, (0.0, 1.0)).all()),
        agreement=agreement(judge, human, confidence, n_resamples, seed),
        judge_mean_all=float(np.mean(judge_all)),
        judge_mean_labelled=float(judge.mean()),
        human_mean_labelled=float(human.mean()),
        rectifier=float((judge - human).mean()),
        ppi=ppi,
        classical=classical,
        variance_ratio=ratio,
        confidence=confidence,
        labels_not_in_run=not_in_run,
        labelled_unscored=labelled_unscored,
        unscored_reasons=dict(unscored.most_common()),
        label_issues=list(label_issues),
        warnings=warnings,
    )


def calibrate_run(run_dir: str | Path, labels_file: str | Path, metric: str, **options: Any) -> CalibrationReport:
    """:func:`calibrate` on a run directory and a labels file (see :func:`read_labels`)."""
    labels, problems = read_labels(labels_file)
    report = calibrate(Result.load(run_dir), metric, labels, label_issues=problems, **options)
    report.run_dir, report.labels_file = str(run_dir), str(labels_file)
    return report


# ---- output --------------------------------------------------------------------------------


def _number(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _with_ci(entry: Mapping[str, Any]) -> str:
    if entry["value"] is None:
        return "undefined (a constant side)"
    if entry["ci_low"] is None:
        return _number(entry["value"])
    return f"{entry['value']:.3f} [{entry['ci_low']:.3f}, {entry['ci_high']:.3f}]"


AGREEMENT_NAMES = {
    "accuracy": "accuracy (both at 0.5)",
    "cohens_kappa": "Cohen's kappa (both at 0.5)",
    "pearson": "Pearson",
    "spearman": "Spearman",
    "kendall_tau": "Kendall tau-b",
}


def summary_rows(report: CalibrationReport) -> list[tuple[str, str]]:
    """The headline numbers as (label, text) rows, for the terminal and the Markdown."""
    level = f"{round(100 * report.confidence)}%"
    rows = [(f"{AGREEMENT_NAMES[name]}", _with_ci(entry)) for name, entry in report.agreement.items()]
    rows += [
        (f"mean by PPI ({level} CI)", f"{report.ppi.estimate:.3f} [{report.ppi.low:.3f}, {report.ppi.high:.3f}]"),
        (f"mean of the labels alone ({level} CI)", f"{report.classical.estimate:.3f} [{report.classical.low:.3f}, {report.classical.high:.3f}]"),
        ("metric's own mean (all scored)", f"{report.judge_mean_all:.3f}"),
        ("metric minus label, mean (bias removed)", f"{report.rectifier:+.3f}"),
        (
            "effective sample size gain",
            "–" if report.variance_ratio is None else f"×{report.variance_ratio:.2f} ({report.n_used} labels worth {report.effective_labels:.0f})",
        ),
    ]
    return rows


def render_markdown(report: CalibrationReport) -> str:
    lines = [
        f"# Calibration of `{report.metric}` with human labels",
        "",
        f"Run: `{report.run_dir}`; labels: `{report.labels_file}`.",
        f"{report.n_samples} samples, {report.n_scored} scored; {report.n_labels} labels, {report.n_used} used "
        f"({'0/1 labels' if report.binary_labels else 'scores in [0, 1]'}).",
        "",
        "| measure | value |",
        "|---|---|",
        *[f"| {label} | {value} |" for label, value in summary_rows(report)],
        "",
        f"Agreement intervals: percentile bootstrap over the {report.n_used} labelled samples. PPI (prediction-powered "
        "inference, Angelopoulos et al. 2023): mean of the metric over all scored samples minus the mean of "
        "(metric - label) over the labelled ones; its normal interval adds both variances. It assumes the labelled "
        "samples are a random subset of the run.",
        "",
    ]
    if report.warnings:
        lines += ["Warnings:", "", *[f"- {w}" for w in report.warnings], ""]
    missing = [
        ("labels for samples not in the run", report.labels_not_in_run),
        ("labelled samples without a score", [f"{u['id']} ({u['reason']})" for u in report.labelled_unscored]),
        ("bad label lines", report.label_issues),
    ]
    for title, items in missing:
        if items:
            lines += [f"{title.capitalize()} ({len(items)}):", "", *[f"- {i}" for i in items[:50]]]
            if len(items) > 50:
                lines.append(f"- … and {len(items) - 50} more (see {JSON_FILE})")
            lines.append("")
    if report.unscored_reasons:
        lines += ["Unscored samples of the run (left out of the metric's mean):", ""]
        lines += [f"- {count} × {reason}" for reason, count in report.unscored_reasons.items()]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def default_out(run_dir: str | Path, metric: str) -> Path:
    """``<run_dir>/calibration_<metric>`` (characters unsafe in a file name replaced)."""
    return Path(run_dir) / f"calibration_{re.sub(r'[^A-Za-z0-9_.@-]+', '_', metric).strip('_')}"


def write_report(report: CalibrationReport, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``calibration.json`` and ``calibration.md`` into ``out_dir``; return their paths."""
    return write_json_and_markdown(out_dir, JSON_FILE, report.to_dict(), MARKDOWN_FILE, render_markdown(report))
