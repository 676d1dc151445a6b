"""The ``ragmeter`` command line.

Exit codes: 0 success; 2 usage or input errors (the message names file, line and field);
130 interrupted (the journal keeps what was finished: re-run the same command to resume).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragmeter.engine import DEFAULT_CONCURRENCY, Evaluator, applicable_metrics, resolve_metrics
from ragmeter.io import InputError, InputIssue, load_dataset
from ragmeter.metrics.base import Needs, metric_classes
from ragmeter.report import REPORT_HTML, REPORT_MD, write_reports
from ragmeter.result import RESULTS_FILE, SUMMARY_FILE, Result

app = typer.Typer(
    name="ragmeter",
    help="Evaluate retrieval-augmented generation systems: retrieval, generation, and both together.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# soft_wrap: messages naming a file and line stay on one line, for grep and copy-paste.
console = Console(stderr=True, soft_wrap=True)
USAGE_ERROR = 2


def _fail(message: str) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(USAGE_ERROR)


def _print_issues(issues: list[InputIssue], limit: int = 12) -> None:
    """Issues grouped by source, field and message, with the first locations of each."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for issue in issues:
        groups[(issue.source, issue.field, issue.message, issue.skipped)].append(issue.location)
    for shown, ((source, field, message, skipped), locations) in enumerate(groups.items()):
        if shown == limit:
            console.print(f"  … and {len(groups) - limit} more kinds of issue (see input_issues.jsonl)")
            break
        where = ", ".join(locations[:5]) + (f" and {len(locations) - 5} more" if len(locations) > 5 else "")
        field_text = f", field '{field}'" if field else ""
        action = "row skipped" if skipped else "sample kept"
        console.print(f"  {source}, {where}{field_text}: {message} [dim]({action})[/]", highlight=False, markup=True)


def _choose_metrics(spec: str, dataset) -> list:
    if spec == "auto":
        chosen = applicable_metrics(dataset)
        if not chosen:
            raise _fail("no metric applies: the samples lack the fields every metric requires (see `ragmeter metrics`)")
        return chosen
    if spec == "all":
        return [cls() for cls in metric_classes().values() if cls.needs in (Needs.NOTHING, Needs.EMBEDDINGS)]
    try:
        return resolve_metrics(name for name in spec.split(",") if name.strip())
    except ValueError as exc:
        raise _fail(str(exc)) from None


def _print_scores(result: Result) -> None:
    table = Table(title="Scores (mean with 95% bootstrap CI)", title_justify="left")
    for column in ("metric", "mean", "95% CI", "scored", "unscored"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for metric in result.metrics:
        a = result.aggregates[metric["id"]]
        if a["mean"] is None:
            mean, interval = "–", "–"
        else:
            digits = 3 if metric["unit"] is None else (5 if metric["unit"] == "USD" else 1)
            mean = f"{a['mean']:.{digits}f}"
            interval = f"[{a['ci_low']:.{digits}f}, {a['ci_high']:.{digits}f}]" if a["ci_low"] is not None else "–"
        unscored = str(a["n_unscored"]) + (f" ({a['n_failed']} failed)" if a["n_failed"] else "")
        table.add_row(metric["id"] + (f" ({metric['unit']})" if metric["unit"] else ""), mean, interval, str(a["n_scored"]), unscored)
    console.print(table)


def _print_diagnosis(diagnosis: dict) -> None:
    problems = [p for p in diagnosis["patterns"] if p["name"] not in ("healthy", "correct_refusal", "inconclusive")]
    if not diagnosis["signals"]:
        return
    if not problems:
        console.print("Diagnosis: no problem pattern found.")
        return
    console.print("Diagnosis (see the report for the samples):")
    for pattern in problems:
        examples = ", ".join(pattern["samples"][:4]) + (", …" if len(pattern["samples"]) > 4 else "")
        console.print(f"  {pattern['count']:>4} × [bold]{escape(pattern['title'])}[/] ({escape(examples)})", highlight=False)


def _written(out: Path) -> str:
    return ", ".join(str(out / name) for name in (RESULTS_FILE, SUMMARY_FILE, REPORT_MD, REPORT_HTML))


@app.command("eval")
def eval_command(
    data: Annotated[list[Path], typer.Argument(help="Sample files: .jsonl, .json, .csv or .parquet (several allowed).")],
    metrics: Annotated[
        str,
        typer.Option(
            "--metrics",
            "-m",
            help="Comma-separated metric names (`ragmeter metrics` lists them; add @k to rank metrics: ndcg@5). "
            "'auto': every model-free metric the data has fields for; 'all': every model-free metric.",
        ),
    ] = "auto",
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory for results, journal and reports.")] = Path("ragmeter-out"),
    concurrency: Annotated[int, typer.Option(min=1, help="Most (sample, metric) pairs scored at once.")] = DEFAULT_CONCURRENCY,
    strict: Annotated[bool, typer.Option(help="Stop on the first bad row or missing field instead of skipping it.")] = False,
    fresh: Annotated[bool, typer.Option(help="Ignore scores journalled by an earlier run in --out; recompute all.")] = False,
    progress: Annotated[
        Optional[bool], typer.Option("--progress/--no-progress", help="Progress bar (default: on when stderr is a terminal).")
    ] = None,
) -> None:
    """Evaluate samples and write results.jsonl, summary.json, report.md and report.html to --out.

    Re-running the same command after an interruption (even a kill) resumes: scores already
    journalled in --out are reused; only missing or failed ones are computed.
    """
    try:
        dataset = load_dataset(*data, strict=strict)
    except InputError as exc:
        _print_issues(exc.issues)
        raise _fail("input is not usable; nothing was evaluated") from None
    if dataset.issues:
        console.print(f"[yellow]{len(dataset.issues)} input issue(s):[/]")
        _print_issues(dataset.issues)
    if not dataset.samples:
        raise _fail("no valid samples to evaluate")
    chosen = _choose_metrics(metrics, dataset)
    evaluator = Evaluator(chosen, concurrency=concurrency, out_dir=out, resume=not fresh, progress=progress, strict=strict)
    console.print(f"Evaluating {len(dataset)} samples with {len(evaluator.metrics)} metrics → {out}", highlight=False)
    try:
        result = evaluator.run(dataset)
    except InputError as exc:
        _print_issues(exc.issues)
        raise _fail("samples lack fields the chosen metrics require (--strict)") from None
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted[/]: finished scores are journalled in {out}; run the same command again to resume.")
        raise typer.Exit(130) from None
    field_issues = [i for i in result.issues if not i.skipped]
    if field_issues:
        console.print(f"[yellow]{len(field_issues)} missing field(s); the metrics that need them leave those samples unscored:[/]")
        _print_issues(field_issues)
    result.save(out)
    summary = write_reports(result, out)
    _print_scores(result)
    _print_diagnosis(summary["diagnosis"])
    run = result.run
    console.print(
        f"{run['pairs_computed']} scores computed, {run['pairs_resumed']} resumed from the journal, {run['seconds']:.1f} s.",
        highlight=False,
    )
    console.print(f"Wrote {_written(out)}; open {out / REPORT_HTML} for the full report.", highlight=False)


@app.command("metrics")
def metrics_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List every metric: its family, what it needs, the fields it requires, and what it measures."""
    infos = [cls().info() for cls in metric_classes().values()]
    if as_json:
        typer.echo(json.dumps(infos, ensure_ascii=False, indent=1))
        return
    out = Console()
    for info in infos:
        unit = f"; unit {info['unit']}, lower is better" if info["unit"] and not info["higher_is_better"] else ""
        cutoff = "; takes @k" if "k" in info["config"] else ""
        out.print(
            f"[bold]{info['name']}[/]  [dim]({info['family']}; needs {info['needs']}; "
            f"requires {', '.join(info['required'])}{cutoff}{unit})[/]",
            highlight=False,
        )
        out.print("    " + escape(info["description"]), highlight=False)


@app.command("report")
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A directory written by `ragmeter eval`.")],
) -> None:
    """Re-render summary.json, report.md and report.html of an earlier run."""
    try:
        result = Result.load(run_dir)
    except (FileNotFoundError, json.JSONDecodeError, KeyError, ValueError) as exc:
        raise _fail(f"cannot read run directory {run_dir}: {exc}") from None
    write_reports(result, run_dir)
    console.print(f"Wrote {run_dir / SUMMARY_FILE}, {run_dir / REPORT_MD}, {run_dir / REPORT_HTML}", highlight=False)


if __name__ == "__main__":
    app()
