"""A run's result on the terminal: its scores, why samples failed, the judge's usage and the
diagnosis, after ``ragmeter eval`` (and the usage table of its ``--dry-run`` estimate)."""

from __future__ import annotations

from typing import Any

from ragmeter.cli.console import say, table
from ragmeter.judges.metering import Usage
from ragmeter.metrics import Needs
from ragmeter.report.formatting import format_number
from ragmeter.results import Result


def scores_table(result: Result) -> Any:
    """Each metric's mean, 95% CI and counts, as a terminal table."""
    rows = []
    for metric in result.metrics:
        a, unit = result.aggregates[metric["id"]], metric["unit"]
        interval = f"[{format_number(a['ci_low'], unit)}, {format_number(a['ci_high'], unit)}]" if a["ci_low"] is not None else "–"
        unscored = str(a["n_unscored"]) + (f" ({a['n_failed']} failed)" if a["n_failed"] else "")
        name = metric["id"] + (f" ({unit})" if unit else "")
        rows.append((name, format_number(a["mean"], unit), interval, a["n_scored"], unscored))
    columns = ["metric", ("mean", "right"), ("95% CI", "right"), ("scored", "right"), ("unscored", "right")]
    return table("Scores (mean with 95% bootstrap CI)", columns, rows)


def failure_lines(result: Result) -> list[str]:
    """Per metric that failed on some samples, why (its commonest failure): the scores table
    only counts them, and the reasons were in the report alone."""
    lines = []
    for metric in result.metrics:
        a = result.aggregates[metric["id"]]
        failures = [r for r in a.get("unscored_reasons", []) if r["failed"]]
        if failures:
            top, others = failures[0], a["n_failed"] - failures[0]["count"]
            rest = f" ({others} more for other reasons: see the report)" if others else ""
            lines.append(f"{metric['id']}: {top['count']} sample(s): {top['reason']}{rest}")
    return lines


def usage_rows(result: Result) -> list[tuple[str, Usage]]:
    """Each LLM metric's total judge usage."""
    return [
        (m["id"], Usage.from_dict(result.aggregates[m["id"]]["usage"]["total"])) for m in result.metrics if m["needs"] == Needs.LLM.value
    ]


def usage_table(title: str, rows: list[tuple[str, Usage]], local: bool) -> Any:
    """Calls, cache hits, tokens, retries and cost per metric, as a terminal table."""

    def cost(usage: Usage) -> str:
        if local:
            return "0 (local)"
        return "unknown price" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"

    columns = ["metric", *((c, "right") for c in ("calls", "cached", "prompt tok.", "output tok.", "retries", "cost"))]
    cells = [(name, u.calls, u.cached_calls, f"{u.prompt_tokens:,}", f"{u.completion_tokens:,}", u.retries, cost(u)) for name, u in rows]
    return table(title, columns, cells)


def print_diagnosis(diagnosis: dict[str, Any]) -> None:
    """The run's problem patterns (its summary's ``diagnosis``), each with a few of its samples."""
    problems = [p for p in diagnosis["patterns"] if p["name"] not in ("healthy", "correct_refusal", "inconclusive")]
    if not diagnosis["signals"]:
        return
    if not problems:
        say("Diagnosis: no problem pattern found.")
        return
    say("Diagnosis (see the report for the samples):")
    for pattern in problems:
        examples = ", ".join(pattern["samples"][:4]) + (", …" if len(pattern["samples"]) > 4 else "")
        say(f"  {pattern['count']:>4} × ", (pattern["title"], "bold"), f" ({examples})")
