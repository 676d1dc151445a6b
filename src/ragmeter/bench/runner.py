"""Run benchmark tasks and measure agreement with the human labels.

For each unit a task compares, the metric's result gives a continuous score (for ROC-AUC
and correlations) and a decision (for balanced accuracy):

- a whole sample: the metric's value; decision ``value >= 0.5``;
- faithfulness: the mean p(yes) of the claims as the continuous score;
- a chunk (``part``): that chunk's p(yes) and the metric's own decision for it;
- negative rejection: the judge's p(the contexts contain the answer), kept in the details
  even when the sample itself is unscored.

Units whose score is missing are left out of the statistics and counted, with reasons.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ragmeter.bench.task import Task
from ragmeter.judges import Judges
from ragmeter.metrics.base import Score
from ragmeter.metrics.details import answerable_probability, claim_probabilities, claims_calibrated, context_verdict
from ragmeter.metrics.registry import create_metric
from ragmeter.results import Result
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic, pearson, roc_auc, spearman
from ragmeter.run.engine import Evaluator


@dataclass
class TaskResult:
    """Agreement of one task's metric with the human labels, and what it cost."""

    task: Task
    statistics: dict[str, dict[str, Any]]
    n_units: int
    n_unscored: int
    unscored_reasons: dict[str, int]
    cost_per_sample: dict[str, float]
    n_samples: int
    units: list[dict[str, Any]] = field(default_factory=list)
    """The compared units: ``{"score", "decision", "label", "group"}`` (``group``: a number)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task.name,
            "metric": self.task.metric,
            "kind": self.task.kind,
            "reference": self.task.reference,
            "params": self.task.params,
            "rating": self.task.rating,
            "n_samples": self.n_samples,
            "n_units": self.n_units,
            "n_unscored": self.n_unscored,
            "unscored_reasons": self.unscored_reasons,
            "statistics": self.statistics,
            "cost_per_sample": self.cost_per_sample,
            "units": self.units,
        }


def unit_score(metric: str, score: Score | None, part: int | None) -> tuple[float | None, int | None, str | None]:
    """Continuous score, decision and (when missing) the reason, for one unit."""
    if score is None:
        return None, None, "not evaluated"
    details = score.details or {}
    if part is not None:
        verdict = context_verdict(details, part)
        if verdict is None:
            return None, None, score.reason or "no verdict for this context"
        return verdict[0], verdict[1], None
    if metric == "negative_rejection":
        answerable = answerable_probability(details)
        if answerable is None:
            return None, None, score.reason or "no answerability verdict"
        p, threshold = answerable
        return p, int(p >= threshold), None
    if score.value is None:
        return None, None, score.reason
    # Uncalibrated faithfulness (a share of claims) ranks by the mean claim P(yes) instead.
    p_values = claim_probabilities(details) if metric == "faithfulness" and not claims_calibrated(details) else []
    if p_values:
        return sum(p_values) / len(p_values), int(score.value >= 0.5), None
    return float(score.value), int(score.value >= 0.5), None


def measure(task: Task, result: Result) -> TaskResult:
    """Compare a task's evaluated result with its labels."""
    by_key = {s.key: s for s in result.samples}
    metric_id = result.metric_ids[0]
    scores, decisions, labels, groups = [], [], [], []
    reasons: Counter[str] = Counter()
    for unit in task.units:
        own = by_key.get(unit["sample"])
        value, decision, reason = unit_score(task.metric, own.scores.get(metric_id) if own else None, unit["part"])
        if "versus" in unit and value is not None:
            other = by_key.get(unit["versus"])
            other_value, _, reason = unit_score(task.metric, other.scores.get(metric_id) if other else None, None)
            value = None if other_value is None else value - other_value
        if value is None:
            reasons[reason or "unscored"] += 1
            continue
        scores.append(value)
        decisions.append(decision)
        labels.append(unit["label"])
        groups.append(unit["group"])
    statistics: dict[str, dict[str, Any]] = {}
    if task.kind == "binary" and len(set(labels)) == 2:
        statistics["roc_auc"] = bootstrap_statistic(roc_auc, labels, scores, groups=groups)
        decided = [d for d in decisions if d is not None]
        if len(decided) == len(decisions):
            statistics["balanced_accuracy"] = bootstrap_statistic(balanced_accuracy, labels, decided, groups=groups)
    elif task.kind in ("graded", "preference") and len(scores) > 2:
        statistics["pearson"] = bootstrap_statistic(pearson, scores, labels, groups=groups)
        statistics["spearman"] = bootstrap_statistic(spearman, scores, labels, groups=groups)
    group_index: dict[str, int] = {}  # groups are written as numbers: no text of the data in the results
    usage = result.aggregates[metric_id]["usage"]
    n = max(1, len(result.samples))
    cost = {
        "calls": usage["per_sample"]["calls"],
        "prompt_tokens": usage["per_sample"]["prompt_tokens"],
        "completion_tokens": usage["per_sample"]["completion_tokens"],
        # The judge's own compute time: a sample's wall time also counts the time it queued
        # behind the other samples in flight. Metrics without a judge have only wall time.
        "seconds": usage["total"]["seconds"] / n if usage["total"]["calls"] else usage["per_sample"]["seconds"],
        "cached_calls": usage["total"]["cached_calls"] / n,
    }
    return TaskResult(
        task=task,
        statistics={k: v for k, v in statistics.items() if not math.isnan(v["value"])},
        n_units=len(task.units),
        n_unscored=sum(reasons.values()),
        unscored_reasons=dict(reasons.most_common(5)),
        cost_per_sample=cost,
        n_samples=len(result.samples),
        units=[
            {"score": s, "decision": d, "label": y, "group": group_index.setdefault(g, len(group_index))}
            for s, d, y, g in zip(scores, decisions, labels, groups, strict=True)
        ],
    )


def run_task(task: Task, judges: Judges, concurrency: int = 8, progress: bool | None = None) -> TaskResult:
    """Evaluate a task's samples with its metric and measure the agreement."""
    metric = create_metric(task.metric, **task.params)
    result = Evaluator([metric], judges=judges, concurrency=concurrency, progress=progress).run(task.dataset)
    return measure(task, result)
