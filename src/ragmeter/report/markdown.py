"""``report.md``: the summary as Markdown, for pull requests and CI logs."""

from __future__ import annotations

import re
from typing import Any

from ragmeter.data.text import visible_controls
from ragmeter.metrics.base import FAMILIES
from ragmeter.report.formatting import format_number
from ragmeter.report.judge import judge_line, judge_warnings
from ragmeter.results import Result

#: Problem samples listed per diagnosis pattern.
SAMPLES_PER_PATTERN = 10


_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!~:])")


def _flatten(text: Any, limit: int) -> str:
    """``text`` on one line (whitespace collapsed, other controls as escapes: a report printed
    in a CI log cannot drive the terminal), cut to at most ``limit`` characters, ``…`` last.

    The cut falls between the text's characters, never inside the escape of one (``\\x1b`` is
    kept whole or left out: half of it, ``\\x1``, would read as other text)."""
    flat = " ".join(str(text).split())
    value = visible_controls(flat)
    if len(value) <= limit:
        return value
    kept: list[str] = []
    length = 0
    for shown in map(visible_controls, flat[:limit]):  # each character shows as one or more
        if length + len(shown) > limit - 1:
            break
        kept.append(shown)
        length += len(shown)
    return "".join(kept) + "…"


def md_text(text: Any, limit: int = 120) -> str:
    """Text from the data, made inert in Markdown: one line (whitespace collapsed), at most
    ``limit`` characters, HTML special characters as entities, and every Markdown punctuation
    character backslash-escaped, so that no emphasis, link, image, heading, table cell break
    or autolink (``http\\://``, ``www\\.``) can come from the data."""
    value = _flatten(text, limit)
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _PUNCTUATION.sub(r"\\\1", value).replace("|", "\\|")


def md_code(text: Any, limit: int = 120, *, cell: bool = False) -> str:
    """Text from the data as an inline code span (rendered literally): one line, at most
    ``limit`` characters, fenced with more backticks than it contains.

    Args:
        text: The value to show.
        limit: Most characters shown (``…`` last when cut).
        cell: The span goes into a table cell: each ``|`` is written ``\\|``, which a table
            reads as a ``|`` of the cell (unescaped, it would end the cell). Elsewhere a code
            span shows a backslash as it is, so a ``|`` is left alone (a path ``a|b`` in a
            sentence read ``a\\|b``).
    """
    value = _flatten(text, limit)
    if cell:
        value = value.replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value.strip() else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def render_markdown(summary: dict[str, Any], result: Result) -> str:
    """The Markdown report of a run from its summary (see :func:`build_summary`)."""
    run = summary["run"]
    # Code spans: a time, a version, a path read as they are, with no backslash before each '-', ':' and '.'
    started, version = md_code(run.get("started_at", "?")), md_code(run.get("ragmeter_version", "?"))
    lines = [
        "# ragmeter report",
        "",
        f"{run.get('n_samples', len(result.samples))} samples from {', '.join(md_code(s) for s in run.get('sources', []))}; "
        f"started {started}, {run.get('seconds', 0):.1f} s; ragmeter {version}.",
        "",
    ]
    lines += [line for warning in summary.get("warnings", []) for line in (f"> **Warning**: {md_text(warning, 1000)}", "")]
    lines += _judge_section(run.get("judge"))
    lines += _diagnosis_section(summary["diagnosis"], result)
    lines += _scores_section(summary)
    lines += _unscored_section(summary)
    lines += _issues_section(summary["input_issues"])
    return "\n".join(lines).rstrip() + "\n"


def _judge_section(judge: dict[str, Any] | None) -> list[str]:
    line = judge_line(judge, lambda value: md_code(value, 300))  # code spans: a model, URL or path read as it is
    if line is None:
        return []
    lines = [f"Judge: {line}.", ""]
    for warning in judge_warnings(judge):
        lines += [f"> **Warning**: {md_text(warning, 1000)}", ""]
    return lines


def _diagnosis_section(diagnosis: dict[str, Any], result: Result) -> list[str]:
    lines = ["## Diagnosis", ""]
    signals = diagnosis["signals"]
    if not signals:
        return [*lines, "No retrieval, correctness or groundedness metric was run, so there is no diagnosis.", ""]
    used = ", ".join(f"{s}: {md_code(v['metric'])} (low < {v['low_below']}, high ≥ {v['high_from']})" for s, v in signals.items())
    lines += [f"Signals: {used}.", ""]
    questions = dict(zip(result.table.keys, result.table.questions, strict=True))
    lines += ["| pattern | samples | share | what it means |", "|---|---:|---:|---|"]
    for pattern in diagnosis["patterns"]:
        lines.append(
            f"| **{md_text(pattern['title'])}** | {pattern['count']} | {pattern['share']:.0%} | {md_text(pattern['advice'], 400)} |"
        )
    lines.append("")
    for pattern in diagnosis["patterns"]:
        if pattern["name"] in ("healthy", "correct_refusal") or not pattern["samples"]:
            continue
        lines.append(f"**{md_text(pattern['title'])}**:")
        for key in pattern["samples"][:SAMPLES_PER_PATTERN]:
            lines.append(f"- {md_code(key)} {md_text(questions.get(key, ''), 100)}")
        if len(pattern["samples"]) > SAMPLES_PER_PATTERN:
            lines.append(f"- … and {len(pattern['samples']) - SAMPLES_PER_PATTERN} more")
        lines.append("")
    return lines


def _scores_section(summary: dict[str, Any]) -> list[str]:
    lines = ["## Scores", "", "Means with 95% bootstrap confidence intervals.", ""]
    for family, description in FAMILIES.items():
        metrics = [m for m in summary["metrics"] if m["family"] == family]
        if not metrics:
            continue
        lines += [f"### {description}", ""]
        lines += [
            "| metric | mean | 95% CI | median | std | p95 | scored | unscored | failed |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|",
        ]
        for metric in metrics:
            a, unit = metric["aggregate"], metric["unit"]
            interval = f"[{format_number(a['ci_low'], unit)}, {format_number(a['ci_high'], unit)}]" if a["ci_low"] is not None else "–"
            name = md_code(metric["id"], cell=True) + (
                f" ({md_text(unit)}, lower is better)" if unit and not metric["higher_is_better"] else ""
            )
            lines.append(
                f"| {name} | {format_number(a['mean'], unit)} | {interval} | {format_number(a['median'], unit)} | "
                f"{format_number(a['std'], unit)} | {format_number(a['p95'], unit)} | {a['n_scored']} | {a['n_unscored']} | {a['n_failed']} |"
            )
        lines.append("")
    return lines


def _unscored_section(summary: dict[str, Any]) -> list[str]:
    rows = [
        f"| {md_code(m['id'], cell=True)} | {r['count']} | {'**error**: ' if r['failed'] else ''}{md_text(r['reason'], 300)} |"
        for m in summary["metrics"]
        for r in m["aggregate"]["unscored_reasons"]
    ]
    if not rows:
        return []
    return ["## Why samples went unscored", "", "| metric | samples | reason |", "|---|---:|---|", *rows, ""]


def _issues_section(issues: dict[str, Any]) -> list[str]:
    if not issues["count"]:
        return []
    lines = [
        "## Input issues",
        "",
        f"{issues['count']} issue(s); {issues['rows_skipped']} row(s) skipped. All of them are in `input_issues.jsonl`.",
        "",
    ]
    for issue in issues["listed"]:
        field = f", field {md_code(issue['field'])}" if issue["field"] else ""
        lines.append(f"- {md_text(issue['source'])}, {md_text(issue['location'])}{field}: {md_text(issue['message'], 300)}")
    return [*lines, ""]
