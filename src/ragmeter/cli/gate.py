"""``ragmeter gate``: pass or fail a run against thresholds and a baseline (exit 0 / 1 / 2)."""

from pathlib import Path
from typing import Annotated, Any

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import console, fail, say, table
from ragmeter.data.files import write_text
from ragmeter.decide.gate import FAIL, PASS, SKIPPED, GateReport, run_gate
from ragmeter.decide.thresholds import GateInputError


@command("gate")
def gate_command(
    run_dir: Annotated[Path, typer.Argument(help="The run to check: a directory written by `ragmeter eval`.")],
    thresholds: Annotated[
        Path | None, typer.Option("--thresholds", "-t", help="YAML: metric id -> minimum mean, or {min|max: x, on: mean|ci_low|ci_high}.")
    ] = None,
    baseline: Annotated[
        Path | None, typer.Option(help="A baseline run directory to check against (e.g. the main branch's last run).")
    ] = None,
    max_drop: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="With --baseline: fail a [0, 1] metric whose mean drops by more than this and significantly, "
            "or whose share of matched samples scored (coverage) drops by more than this.",
        ),
    ] = 0.02,
    alpha: Annotated[
        float, typer.Option(min=0.0001, max=0.5, help="Significance level of the baseline test (Holm across metrics).")
    ] = 0.05,
    junit: Annotated[Path | None, typer.Option(help="Write the checks as JUnit XML to this file.")] = None,
    permutations: Annotated[int, typer.Option(min=100, help="Random sign flips of the baseline permutation test.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the permutations and of the bootstrap.")] = 0,
) -> None:
    """Fail (exit 1) when the run misses a threshold or drops significantly below a baseline.

    A baseline check fails when the mean drop over matched samples exceeds --max-drop and the
    paired permutation test (Holm-adjusted across metrics) says the drop is real. A second
    baseline check per metric fails when the share of matched samples it scored is lower than
    the baseline's by more than --max-drop. Exit codes: 0 every check passed, 1 a check
    failed, 2 usage or input error (also any error while checking: a crash is never a pass or a fail).
    """
    try:
        report = run_gate(
            run_dir, thresholds=thresholds, baseline=baseline, max_drop=max_drop, alpha=alpha, n_permutations=permutations, seed=seed
        )
    except GateInputError as exc:
        raise fail(str(exc)) from None
    console.print(checks_table(report))
    for warning in report.warnings:  # a cut-short run must not pass its thresholds unremarked
        say(("warning", "bold yellow"), f": {warning}")
    for line in summary_lines(report):
        say(line)
    if junit is not None:
        try:
            junit.parent.mkdir(parents=True, exist_ok=True)
            write_text(junit, report.to_junit())
        except OSError as exc:
            raise fail(f"cannot write --junit {junit}: {exc.strerror or exc}") from None
        say(f"Wrote {junit}")
    raise typer.Exit(report.exit_code)


def checks_table(report: GateReport) -> Any:
    """Every check as a terminal table."""
    verdicts = {PASS: ("pass", "green"), FAIL: ("FAIL", "bold red"), SKIPPED: ("skipped", "yellow")}
    rows = [(c.metric, c.kind, c.rule, c.observed, verdicts[c.verdict]) for c in report.checks]
    return table(f"Quality gate: {report.run}", ["metric", "check", "rule", "observed", "verdict"], rows)


def summary_lines(report: GateReport) -> list[str]:
    """Each failure and skip with its message, then the outcome."""
    lines = [f"FAIL {c.metric} ({c.kind}): {c.message}" for c in report.failed]
    lines += [f"skipped {c.metric} ({c.kind}): {c.message}" for c in report.checks if c.verdict == SKIPPED]
    if report.comparison is not None:
        match = report.comparison.matching.to_dict()
        lines.append(
            f"Baseline: {match['n_matched']} samples matched by {match['by']}; {match['n_unmatched_b']} of the run and "
            f"{match['n_unmatched_a']} of the baseline unmatched; "
            f"{match['n_duplicate_samples_b'] + match['n_duplicate_samples_a']} duplicates left out."
        )
    n_failed = len(report.failed)
    n_skipped = sum(1 for c in report.checks if c.verdict == SKIPPED)
    lines.append(f"Gate {'FAILED' if n_failed else 'passed'}: {len(report.checks)} check(s), {n_failed} failed, {n_skipped} skipped.")
    return lines
