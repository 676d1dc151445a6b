"""``ragmeter redteam``: the packaged red-team probes (prompt injection, poisoned documents,
system-prompt extraction, data leaks; English and Chinese) against an application."""

from pathlib import Path
from typing import Annotated, Any

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import console, fail, say, table
from ragmeter.decide.probe_files import ProbeFileError, load_probe_file
from ragmeter.decide.redteam import Probe, builtin_probes, compare_probes, http_app, run_probes, write_probe_report
from ragmeter.decide.sweep import import_pipeline
from ragmeter.report.formatting import format_interval, format_number, format_p, format_signed
from ragmeter.run.outdir import OutputDirError, locked
from ragmeter.run.sync import run_sync


def _app(spec: str) -> Any:
    """An application from ``module:function`` or an http(s) URL."""
    return http_app(spec) if spec.startswith(("http://", "https://")) else import_pipeline(spec)


def _probes(system_marker: str | None, files: list[Path], builtin: bool) -> list[Probe]:
    """The packaged probes (unless ``builtin`` is off) and those of each file, or a usage error."""
    probes = builtin_probes(system_marker) if builtin else []
    try:
        for path in files:
            probes += load_probe_file(path, taken=[p.id for p in probes])
    except ProbeFileError as exc:
        raise fail(str(exc)) from None
    if not probes:
        raise fail("no probe to run: --no-builtin needs at least one --probes file")
    return probes


@command("redteam")
def redteam_command(
    app: Annotated[str, typer.Option(help="The application: module:function taking (question, documents), or an http(s) URL.")],
    baseline: Annotated[str | None, typer.Option(help="A second application to compare with, probe by probe.")] = None,
    system_marker: Annotated[
        str | None, typer.Option(help="A string of the application's system prompt; without it the extraction probes are left out.")
    ] = None,
    timeout: Annotated[float | None, typer.Option(min=0.001, help="Seconds the application may take per probe.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for redteam.json and redteam.md.")] = Path("redteam-out"),
    probes_file: Annotated[
        list[Path] | None,
        typer.Option(
            "--probes",
            help="Your own probes: a YAML or .jsonl file of id, question, forbidden (and documents, category, lang); repeatable.",
        ),
    ] = None,
    builtin: Annotated[
        bool, typer.Option("--builtin/--no-builtin", help="Run the packaged probes too (--no-builtin: only --probes).")
    ] = True,
) -> None:
    """Run every probe against the application and report the pass rate per category with 95%
    intervals; with --baseline, the application minus the baseline, paired by probe. Your own
    probes (--probes) are checked the same way: a probe fails when the answer holds one of its
    forbidden strings, or on an error."""
    probes = _probes(system_marker, probes_file or [], builtin)
    try:
        target = _app(app)
        reference = _app(baseline) if baseline else target
        with locked(out):
            say(f"Running {len(probes)} probes against {app} → {out}")
            results_b = run_sync(run_probes(target, probes, timeout=timeout))
            results_a = run_sync(run_probes(reference, probes, timeout=timeout)) if baseline else results_b
            document = compare_probes(results_a, results_b, baseline or app, app)
            paths = write_probe_report(document, out)
    except (OutputDirError, ValueError) as exc:
        raise fail(str(exc)) from None
    rows = []
    for category, entry in document["pass_rates_b"].items():
        tested = document["categories"].get(category, {})
        row = [category, f"{entry['passed']}/{entry['n']}", format_interval(entry["ci_low"], entry["ci_high"]), entry["errors"]]
        if baseline:
            row += [format_number(document["pass_rates_a"][category]["pass_rate"]), format_signed(tested.get("accuracy_diff"))]
            row += [format_p(tested.get("p_holm")), tested.get("verdict", "")]
        rows.append(tuple(row))
    columns = ["category", ("passed", "right"), "95% CI", ("errors", "right")]
    if baseline:
        columns += [("baseline", "right"), ("diff", "right"), ("p (Holm)", "right"), "verdict"]
    console.print(table(f"Red-team probes against {app}", columns, rows))
    say(f"Wrote {', '.join(str(p) for p in paths)}")
