"""One table of every LLM metric's agreement with human labels, with a leave-one-set-out line.

The per-task results (:meth:`ragmeter.bench.runner.TaskResult.to_dict`, or the same dicts read
back from a results JSON) become one row per metric and labelled set, in the metric's own
units of agreement, and for binary tasks a *leave-one-set-out* balanced accuracy: the
decision threshold on the metric's score is fitted on the metric's other labelled sets
(the one that maximises their mean balanced accuracy) and measured on this one. That is
what a user who tunes the line on data like ours, but not on theirs, can expect; the
default line (a score of 0.5) is reported beside it.

Parts of the default settings that were themselves fitted on labelled data (the
faithfulness claim-support head, the lines of answer relevancy, context relevance and the
answerable verdict) are named with the sets they saw, so a row measured on a
set the default was fitted on is never mistaken for a held-out figure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any

import numpy as np

from ragmeter.metrics import Needs, create_metric, metric_classes
from ragmeter.report.formatting import format_estimate
from ragmeter.results.stats import balanced_accuracy, bootstrap_statistic

# Parameters that only choose which of a metric's scores it gives, and are named in its id.
_NAMING_PARAMS = {"mode"}

# Which statistic leads a row, per kind of task.
_LEAD = {"binary": ("roc_auc", "ROC-AUC"), "graded": ("pearson", "Pearson"), "preference": ("pearson", "Pearson")}


def task_set(task: Mapping[str, Any]) -> str:
    """The labelled set a task measures on: ``qags/faithfulness`` -> ``qags``; SummEdits'
    domains count as sets of their own (``summedits/news_faithfulness`` -> ``summedits/news``),
    and so do the minimal-edit sets built from a file (``rgb/faithfulness_edits`` -> ``rgb/edits``)
    and each rating of a set rated several ways (RAGChecker's ``ragchecker/completeness``)."""
    suite, _, rest = task["task"].partition("/")
    if task.get("rating"):
        return f"{suite}/{task['rating']}"
    if suite == "summedits":
        return f"summedits/{rest.removesuffix('_' + task['metric'])}"
    return f"{suite}/edits" if rest.endswith("_edits") else suite


def _source(task: Mapping[str, Any]) -> str:
    """The labelled data a task's set comes from: a minimal-edit set shares its file's questions
    and passages, so a line fitted for one never uses the other."""
    return task_set(task).removesuffix("/edits")


def shown_metric(task: Mapping[str, Any]) -> str | None:
    """The metric as the table names it (its id: ``factual_correctness(recall)``), or ``None``
    for a task run with settings other than the default (``counting`` decided): such a task is
    a comparison of settings, not a row of the table."""
    params = dict(task.get("params") or {})
    if set(params) - _NAMING_PARAMS:
        return None
    return create_metric(task["metric"], **params).id


def llm_metric_names() -> list[str]:
    """The registered metrics that need an LLM judge."""
    return sorted(name for name, cls in metric_classes().items() if cls.needs == Needs.LLM)


def fitted_sets() -> dict[str, set[str]]:
    """Per metric, the labelled sets (named as :func:`task_set` names them) that the fitted parts of its
    default settings were fitted on."""
    head = json.loads(resources.files("ragmeter.resources").joinpath("claim_support_head.json").read_text(encoding="utf-8"))
    seen = {source.replace("-", "/", 1) if source.startswith("summedits-") else source.split("-", 1)[0] for source in head["fitted_on"]}
    # The answerable verdict's line (ANSWERABLE_LINE) was fitted on RGB zh passages; context
    # relevance's default line (RELEVANT_LINE) on MS MARCO and RGB zh; answer relevancy's
    # (RELEVANCE_LINE) on ClapNQ and RAGChecker answers.
    return {
        "faithfulness": seen,
        "negative_rejection": {"rgb"},
        "context_relevance": {"msmarco", "rgb"},
        "answer_relevancy": {"clapnq", "ragchecker"},
    }


def best_threshold(units_by_set: Sequence[Sequence[Mapping[str, Any]]]) -> float | None:
    """The score threshold (``score >= t`` decides 1) with the highest mean balanced accuracy
    over the given sets; ``None`` when no set has both classes."""
    usable = [units for units in units_by_set if len({u["label"] for u in units}) == 2]
    if not usable:
        return None
    scores = np.unique(np.concatenate([[u["score"] for u in units] for units in usable]))
    candidates = np.concatenate([[scores[0] - 1e-9], (scores[:-1] + scores[1:]) / 2, [scores[-1] + 1e-9]])
    best, best_value = None, -1.0
    for threshold in candidates:
        value = float(np.mean([_balanced_accuracy_at(units, float(threshold)) for units in usable]))
        if value > best_value + 1e-12:
            best, best_value = float(threshold), value
    return best


def _balanced_accuracy_at(units: Sequence[Mapping[str, Any]], threshold: float) -> float:
    return balanced_accuracy([u["label"] for u in units], [int(u["score"] >= threshold) for u in units])


def leave_one_set_out(tasks: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per binary task whose metric was measured on other binary sets too (from other data: see
    :func:`_source`): the threshold fitted on those others, the sets it was fitted on, and this set's balanced accuracy at it
    (``{"threshold", "fitted_on", "balanced_accuracy"}``, the last with its bootstrap interval)."""
    binary = [t for t in tasks if t["kind"] == "binary" and t.get("units") and not t.get("params")]
    out: dict[str, dict[str, Any]] = {}
    for task in binary:
        others = [t for t in binary if t["metric"] == task["metric"] and _source(t) != _source(task)]
        threshold = best_threshold([t["units"] for t in others])
        units = task["units"]
        if threshold is None or len({u["label"] for u in units}) < 2:
            continue
        estimate = bootstrap_statistic(
            balanced_accuracy,
            [u["label"] for u in units],
            [int(u["score"] >= threshold) for u in units],
            groups=[u.get("group", n) for n, u in enumerate(units)],
        )
        out[task["task"]] = {"threshold": threshold, "fitted_on": sorted(task_set(t) for t in others), "balanced_accuracy": estimate}
    return out


def _seconds(cost: Mapping[str, float]) -> str:
    """Judge seconds per sample; a task whose every call another task of the run already made
    (the same prompt) cost nothing here, and says so."""
    if not cost.get("calls") and cost.get("cached_calls"):
        return "0 (cached)"
    return f"{cost['seconds']:.1f}"


def summary_lines(tasks: Sequence[Mapping[str, Any]], llm_metrics: Iterable[str]) -> list[str]:
    """Markdown lines: the table of every LLM metric's agreement on every set it was measured
    on, the leave-one-set-out line, and the LLM metrics no labelled set measures.

    Args:
        tasks: Task results as dicts (``TaskResult.to_dict()`` or read from a results JSON).
        llm_metrics: Names of all the metrics that need an LLM judge.
    """
    llm = set(llm_metrics)
    names = {t["task"]: shown_metric(t) for t in tasks if t["metric"] in llm}
    rows = sorted((t for t in tasks if names.get(t["task"])), key=lambda t: (names[t["task"]], t["task"]))
    loso, seen = leave_one_set_out(rows), fitted_sets()
    lines = [
        "| metric | set | units | agreement [95% CI] | BA at the default line | BA, line fitted on the other sets | s / sample |",
        "|---|---|---:|---|---|---|---:|",
    ]
    for task in rows:
        key, label = _LEAD[task["kind"]]
        statistics = task["statistics"]
        lead = f"{label} {format_estimate(statistics[key])}" if key in statistics else "–"
        default_ba = format_estimate(statistics["balanced_accuracy"]) if "balanced_accuracy" in statistics else "–"
        held_out = loso.get(task["task"])
        loso_text = f"{format_estimate(held_out['balanced_accuracy'])} (line {held_out['threshold']:.3f})" if held_out else "–"
        set_name = task_set(task)
        if set_name in seen.get(task["metric"], set()):
            set_name += " *"
        lines.append(
            f"| {names[task['task']]} | {set_name} | {task['n_units'] - task['n_unscored']} | {lead} | {default_ba} | "
            f"{loso_text} | {_seconds(task['cost_per_sample'])} |"
        )
    notes = [
        "",
        "Agreement: ROC-AUC for yes/no labels; Pearson for graded labels and for preferences "
        "(the score difference of two responses against the human preference). BA: balanced accuracy. "
        "BA at the default line: each unit decided as the metric decides it by default, at 0.5 but for "
        "context_relevance (a context is relevant from its `threshold`, 0.8 from 2026-11-27) and "
        "negative_rejection (its unit is the answerability verdict, decided at `answered`, 0.66 from 2026-11-27). "
        "The leave-one-set-out line is the score threshold that maximises the mean balanced accuracy on "
        "the metric's other labelled sets, measured on this one.",
    ]
    if any(" *" in line for line in lines):
        fitted = "; ".join(f"{metric}: {', '.join(sorted(sets))}" for metric, sets in seen.items())
        notes.append(f"\n\\* A fitted part of the default settings saw this set ({fitted}): not a held-out figure.")
    missing = sorted(llm - {t["metric"] for t in rows})
    if missing:
        notes.append(f"\nLLM metrics no labelled set here measures: {', '.join(missing)}.")
    return lines + notes
