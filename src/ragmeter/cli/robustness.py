"""``ragmeter robustness``: a generator under RGB's conditions (noise, negative rejection,
counterfactual, integration), alone or against a second one, with per-condition statistics."""

from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import console, fail, say, table
from ragmeter.decide.robustness_suite import compare_suites, load_rgb, rgb_cases, run_suite, write_suite_report
from ragmeter.decide.sweep import import_pipeline
from ragmeter.report.formatting import format_interval, format_number, format_p, format_signed
from ragmeter.run.outdir import OutputDirError, locked
from ragmeter.run.sync import run_sync


@command("robustness")
def robustness_command(
    data: Annotated[Path, typer.Argument(help="RGB-format questions (JSON lines: query, answer, positive, negative).")],
    generator: Annotated[str, typer.Option(help="module:function taking (question, passages) and returning the answer.")],
    baseline: Annotated[
        str | None, typer.Option(help="A second generator (module:function) to compare with, question by question.")
    ] = None,
    questions: Annotated[int | None, typer.Option(min=1, help="Use only the first N questions.")] = None,
    passages: Annotated[int, typer.Option(min=3, help="Passages per question.")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the passage draws.")] = 0,
    timeout: Annotated[float | None, typer.Option(min=0.001, help="Seconds a generator may take per question.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for robustness.json and robustness.md.")] = Path("robustness-out"),
) -> None:
    """Ask the generator every question under RGB's conditions and report, per condition,
    accuracy, refusal and misled rates with 95% intervals; with --baseline, the generator
    minus the baseline, paired by question (permutation test, Holm across conditions)."""
    try:
        rows = load_rgb(data)[:questions]
        cases = rgb_cases(rows, passages=passages, seed=seed)
        candidate = import_pipeline(generator)
        reference = import_pipeline(baseline) if baseline else candidate
        with locked(out):
            say(f"Asking {len(cases)} cases ({len(rows)} questions) → {out}")
            outcomes_b = run_sync(run_suite(candidate, cases, timeout=timeout))
            outcomes_a = run_sync(run_suite(reference, cases, timeout=timeout)) if baseline else outcomes_b
            comparison = compare_suites(outcomes_a, outcomes_b, label_a=baseline or generator, label_b=generator)
            paths = write_suite_report(comparison, out, f"{data.name}, {len(rows)} questions, {len(cases)} cases, seed {seed}")
    except (OutputDirError, ValueError, OSError) as exc:
        raise fail(str(exc)) from None
    rows_shown = []
    for condition, summary in comparison.summary_b.items():
        tested = comparison.conditions.get(condition, {})
        accuracy = summary["accuracy"]
        shown = [condition, summary["n"], f"{format_number(accuracy['rate'])} {format_interval(accuracy['ci_low'], accuracy['ci_high'])}"]
        shown += [format_number(summary["refusal"]["rate"]), format_number(summary["misled"]["rate"]), summary["errors"]]
        if baseline:
            shown += [format_signed(tested.get("accuracy_diff")), format_p(tested.get("p_holm")), tested.get("verdict", "")]
        rows_shown.append(tuple(shown))
    columns = ["condition", ("n", "right"), "accuracy", ("refusals", "right"), ("misled", "right"), ("errors", "right")]
    if baseline:
        columns += [("vs baseline", "right"), ("p (Holm)", "right"), "verdict"]
    console.print(table(f"Robustness of {generator}", columns, rows_shown))
    say(f"Wrote {', '.join(str(p) for p in paths)}")
