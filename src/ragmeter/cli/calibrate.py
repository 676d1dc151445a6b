"""``ragmeter calibrate``: a metric against a few human labels, and its true mean by PPI."""

from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import console, fail, say, table
from ragmeter.decide.calibrate import calibrate_run, default_out
from ragmeter.report.calibration import summary_rows, write_report
from ragmeter.run.outdir import OutputDirError


@command("calibrate")
def calibrate_command(
    run_dir: Annotated[Path, typer.Argument(help="A directory written by `ragmeter eval`.")],
    labels: Annotated[Path, typer.Option(help='Human labels, JSONL: {"id": ..., "label": 0/1 or a score in [0, 1]}.')],
    metric: Annotated[str, typer.Option(help="The metric to calibrate (its id in the run, e.g. faithfulness).")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Folder for calibration.json and .md (default: RUN_DIR/calibration_<metric>).")
    ] = None,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="Coverage of the intervals.")] = 0.95,
) -> None:
    """Agreement of a metric with a few human labels, and the true mean by prediction-powered inference.

    Accuracy, Cohen's kappa, Pearson, Spearman and Kendall tau with bootstrap intervals on the
    labelled samples; the PPI mean over the whole run next to the labels-only mean.
    """
    try:
        report = calibrate_run(run_dir, labels, metric, confidence=confidence)
    except KeyError as exc:
        raise fail(str(exc.args[0] if exc.args else exc)) from None
    except (ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    try:
        json_path, md_path = write_report(report, out or default_out(run_dir, metric))
    except OutputDirError as exc:
        raise fail(str(exc)) from None
    title = f"{metric}: {report.n_used} labelled of {report.n_scored} scored samples"
    console.print(table(title, ["measure", ("value", "right")], summary_rows(report.to_dict())))
    for warning in report.warnings:
        say(("warning: ", "yellow"), warning)
    say(f"Wrote {json_path} and {md_path}")
