"""The summary of a run that every report format renders: ``summary.json``.

Layout::

    run          settings and bookkeeping of the run
    metrics      one entry per metric: its description and ``aggregate`` (mean, 95% CI...)
    families     per metric family: the mean of its quality metrics' means (radar chart)
    input_issues counts and the first issues
    diagnosis    see :mod:`ragmeter.report.diagnosis`
    warnings     what makes the numbers doubtful (a results file that lost samples)
"""

from __future__ import annotations

from typing import Any

from ragmeter.metrics.base import FAMILIES
from ragmeter.report.diagnosis import diagnose
from ragmeter.results import Result

#: Issues listed in full in the summary; all of them are in input_issues.jsonl.
MAX_LISTED_ISSUES = 50


def family_scores(result: Result) -> dict[str, dict[str, Any]]:
    """Mean over a family's quality metrics (in [0, 1], higher is better) of their means."""
    families: dict[str, dict[str, Any]] = {}
    for family, description in FAMILIES.items():
        members = [
            m["id"]
            for m in result.metrics
            if m["family"] == family and m["unit"] is None and m["higher_is_better"] and result.aggregates[m["id"]]["mean"] is not None
        ]
        means = [mean for m in members if (mean := result.aggregates[m]["mean"]) is not None]
        if means:
            families[family] = {"description": description, "mean": sum(means) / len(means), "metrics": members}
    return families


def run_warnings(result: Result) -> list[str]:
    """What makes a run's numbers doubtful: a results file holding another number of samples
    than the run had (``n_samples``), cut short or edited since; its scores are of what it holds."""
    expected, held = result.run.get("n_samples"), len(result.samples)
    if not isinstance(expected, int) or isinstance(expected, bool) or expected == held:
        return []
    return [
        f"the results hold {held} sample(s) but the run had {expected}: results.jsonl was cut short or edited; "
        f"every score, mean and count here is of the {held} it holds"
    ]


def build_summary(result: Result) -> dict[str, Any]:
    """Everything the reports show, as plain JSON-ready data."""
    skipped = sum(1 for i in result.issues if i.skipped)
    return {
        "run": result.run,
        "metrics": [{**m, "aggregate": result.aggregates[m["id"]]} for m in result.metrics],
        "families": family_scores(result),
        "input_issues": {
            "count": len(result.issues),
            "rows_skipped": skipped,
            "listed": [i.to_dict() for i in result.issues[:MAX_LISTED_ISSUES]],
        },
        "diagnosis": diagnose(result),
        "warnings": run_warnings(result),
    }
