"""``ragmeter report`` (re-render a run's reports) and ``ragmeter metrics`` (list the metrics)."""

import json
from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import fail, say, stdout
from ragmeter.data.files import write_problem
from ragmeter.metrics import FAMILIES, metric_classes
from ragmeter.report import REPORT_HTML, REPORT_MD, write_reports
from ragmeter.results import Result, RunDirError
from ragmeter.results.rundir import SUMMARY_FILE


@command("report")
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A directory written by `ragmeter eval`.")],
) -> None:
    """Re-render summary.json, report.md and report.html of an earlier run."""
    try:
        result = Result.load(run_dir)
    except RunDirError as exc:
        raise fail(f"cannot read run directory {run_dir}: {exc}") from None
    try:
        summary = write_reports(result, run_dir)
    except OSError as exc:  # a folder without write permission, a folder in a report's place, a full disk
        raise fail(f"cannot write the reports into {run_dir}: {write_problem(exc)}") from None
    for warning in summary["warnings"]:
        say(("warning", "bold yellow"), f": {warning}")
    say(f"Wrote {run_dir / SUMMARY_FILE}, {run_dir / REPORT_MD}, {run_dir / REPORT_HTML}")


@command("metrics")
def metrics_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List every metric: its family, what it needs, the fields it requires, and what it measures."""
    order = list(FAMILIES)
    infos = sorted((cls().info() for cls in metric_classes().values()), key=lambda info: order.index(info["family"]))
    if as_json:
        typer.echo(json.dumps(infos, ensure_ascii=False, indent=1))
        return
    for info in infos:
        unit = f"; unit {info['unit']}, lower is better" if info["unit"] and not info["higher_is_better"] else ""
        cutoff = "; takes @k" if "k" in info["config"] else ""
        say(
            (info["name"], "bold"),
            "  ",
            (f"({info['family']}; needs {info['needs']}; requires {', '.join(info['required'])}{cutoff}{unit})", "dim"),
            to=stdout,
        )
        say("    " + info["description"], to=stdout)
