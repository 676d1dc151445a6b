"""Benchmark results as JSON and Markdown, with the date, commit, judge and settings."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragmeter.bench.runner import TaskResult
from ragmeter.bench.summary import llm_metric_names, summary_lines
from ragmeter.data.files import write_json, write_text
from ragmeter.report.formatting import format_estimate
from ragmeter.report.markdown import md_code, md_text

#: Most characters of the command shown (a code span is one line; the JSON keeps it whole).
COMMAND_LIMIT = 1000

_STATISTIC_NAMES = {
    "balanced_accuracy": "balanced acc.",
    "roc_auc": "ROC-AUC",
    "pearson": "Pearson",
    "spearman": "Spearman",
}


def git_commit() -> str:
    """The checkout's short commit, or ``"unknown"``."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write(results: list[TaskResult], settings: dict[str, Any], out_dir: Path, name: str) -> tuple[Path, Path]:
    """Write ``<name>.json`` and ``<name>.md`` into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    document = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "settings": settings,
        "tasks": [r.to_dict() for r in results],
    }
    json_path, md_path = out_dir / f"{name}.json", out_dir / f"{name}.md"
    write_json(json_path, document)
    judge = settings.get("judge") or {}
    lines = [
        f"# Agreement with human labels: {name}",
        "",
        f"{document['date']}, commit {document['commit']}; judge {md_text(judge.get('backend', '-'))} {md_code(judge.get('model', '-'))}; "
        f"limit {settings.get('limit')} per set, seed {settings.get('seed')}.",
        f"Command: {md_code(settings.get('command', ''), COMMAND_LIMIT)}",
        "",
        "Intervals are 95% bootstrap intervals over the compared units (clustered by article or question). "
        "Seconds per sample are the judge's compute time (wall time for metrics without a judge). "
        "Calls answered from the disk cache (a verdict another task of the run already asked for) are shown "
        "apart: they cost no tokens or seconds here, but would on their own.",
        "",
        "| task | units (unscored) | agreement | calls / sample | prompt tok. / sample | output tok. / sample | s / sample | reference |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for result in results:
        agreement = "<br>".join(f"{_STATISTIC_NAMES[k]} {format_estimate(v)}" for k, v in result.statistics.items()) or "–"
        cost = result.cost_per_sample
        calls = f"{cost['calls']:.1f}" + (f" (+{cost['cached_calls']:.1f} cached)" if cost.get("cached_calls") else "")
        lines.append(
            f"| {result.task.name} | {result.n_units} ({result.n_unscored}) | {agreement} | {calls} | "
            f"{cost['prompt_tokens']:.0f} | {cost['completion_tokens']:.0f} | {cost['seconds']:.1f} | {result.task.reference} |"
        )
    left_out = settings.get("left_out") or []
    if left_out:
        lines += ["", f"{len(left_out)} sample(s) left out, without a usable label:", ""]
        lines += [f"- {md_text(line, 300)}" for line in left_out]
    unscored = [r for r in results if r.unscored_reasons]
    if unscored:
        lines += ["", "Unscored units:", ""]
        for result in unscored:
            for reason, count in result.unscored_reasons.items():
                lines.append(f"- {result.task.name}: {count} × {md_text(reason, 300)}")
    if any(r.task.metric in llm_metric_names() for r in results):
        tasks = [r.to_dict() for r in results]
        lines += ["", "## Every LLM metric on every labelled set", "", *summary_lines(tasks, llm_metric_names())]
    write_text(md_path, "\n".join(lines) + "\n")
    return json_path, md_path
