"""``ragmeter drift``: has the traffic or the knowledge base changed? Exit code 1 when it has
(for CI or a scheduler), 0 when not; ``--json`` writes the findings for the next step."""

from pathlib import Path
from typing import Annotated, Any

import typer

from ragmeter.cli.app import command, group
from ragmeter.cli.console import fail, say
from ragmeter.cli.options import check_file_out, refuse_an_input
from ragmeter.cli.runs import DEFAULT_STORE, StoreOption, open_existing_store
from ragmeter.data import InputError, load_dataset
from ragmeter.data.files import json_value, write_json
from ragmeter.run.outdir import OutputDirError, prepare

CHANGED = 1

drift = group("drift", "Has the traffic or the knowledge base changed since a reference? Exit code 1 when it has.")

JsonOption = Annotated[Path | None, typer.Option("--json", help="Write the findings to this JSON file (also when nothing changed).")]


def _questions(path: Path) -> list[str]:
    """The questions (``user_input``) of a samples file (any format ``ragmeter eval`` reads)."""
    try:
        dataset = load_dataset(path)
    except InputError as exc:
        first = exc.issues[0] if exc.issues else None
        raise fail(f"{path}: not usable: {first.message if first else exc}") from None
    questions = [s.sample.user_input for s in dataset.samples if s.sample.user_input]
    if not questions:
        raise fail(f"{path}: no sample has a question (user_input)")
    return questions


#: Largest file at ``drift kb --json`` inside the knowledge base read to tell whether it is an earlier report.
_REPORT_BYTES = 16 << 20


def _refuse_a_document(json_out: Path | None, folder: Path) -> None:
    """A usage error when ``--json`` names a file inside the knowledge base ``folder`` that is not
    an earlier ``drift kb`` report: the findings would replace a document (and call it removed).

    Args:
        json_out: The ``--json`` path, or ``None``.
        folder: The knowledge base's folder.
    """
    if json_out is None or not json_out.is_file() or not json_out.resolve().is_relative_to(folder.resolve()):
        return
    try:
        earlier = json_value(json_out.read_bytes()) if json_out.stat().st_size <= _REPORT_BYTES else None
    except (OSError, ValueError):
        earlier = None
    if not (isinstance(earlier, dict) and earlier.get("kind") == "knowledge_base_change"):
        raise fail(f"--json {json_out} is a document of the knowledge base {folder}: the findings would replace it; choose another path")


def _check_json(json_out: Path | None, inputs: list[str | Path | None]) -> None:
    """A usage error, before any work, when the ``--json`` file could not be written: it is one of
    the ``inputs`` (:func:`~ragmeter.cli.options.refuse_an_input`), a folder, or in a folder that
    cannot be made or written. The findings were computed, then lost with 'cannot write'."""
    if json_out is None:
        return
    refuse_an_input("--json", json_out, inputs, "the findings")
    check_file_out("--json", json_out)


def _write(path: Path | None, document: dict[str, Any]) -> None:
    """Write the findings ``document`` to ``path`` (``None``: nowhere), making its folder."""
    if path is not None:
        try:
            prepare(path.parent, f"--json {path}: its folder")
            write_json(path, document)
        except OutputDirError as exc:
            raise fail(str(exc)) from None
        except OSError as exc:
            raise fail(f"{path}: cannot write: {exc.strerror or exc}") from None


@command("queries", group=drift)
def queries_command(
    reference: Annotated[
        Path | None, typer.Argument(help="Samples of the reference window (their user_input), e.g. from `ragmeter traces export`.")
    ] = None,
    current: Annotated[Path | None, typer.Argument(help="Samples of the recent window.")] = None,
    store: Annotated[
        str | None,
        typer.Option(help="Instead of files: the stored requests of this store, the last --days against the --days before."),
    ] = None,
    days: Annotated[int, typer.Option(min=1, max=366, help="With --store: the length of each window in days.")] = 7,
    limit: Annotated[int, typer.Option(min=10, max=5000, help="With --store: most questions of each window (the newest).")] = 1000,
    alpha: Annotated[float, typer.Option(min=0.0, max=0.5, help="Significance level of the alarm.")] = 0.01,
    permutations: Annotated[int, typer.Option(min=99, max=100_000, help="Random relabellings behind the p-value.")] = 500,
    json_out: JsonOption = None,
) -> None:
    """Query drift: do the recent questions come from another distribution (a new topic)?"""
    from ragmeter.judges.embeddings import USEEncoder
    from ragmeter.monitor.drift import query_drift

    _check_json(json_out, [reference, current, store])
    if store is not None and (reference is not None or current is not None):
        raise fail("give two samples files or --store, not both")
    if store is not None:
        found = _stored_drift(store, days, limit, alpha, permutations)
    elif reference is None or current is None:
        raise fail("give two samples files (reference and recent) or --store")
    else:
        try:
            found = query_drift(_questions(reference), _questions(current), USEEncoder().encode, alpha=alpha, permutations=permutations)
        except ValueError as exc:
            raise fail(str(exc)) from None
    _write(json_out, {"kind": "query_drift", **found.to_dict()})
    verdict = ("drift", "bold red") if found.drift else ("no drift", "green")
    say(verdict, f": p = {found.p_value:.4f} (alpha {alpha}), {found.n_reference} reference and {found.n_current} recent questions")
    for topic in found.grown_topics:
        say(
            f"  grown topic: {topic.reference_share:.0%} → {topic.current_share:.0%} (p = {topic.p_value:.3g}), e.g. ",
            (topic.examples[0], "bold"),
        )
    if found.drift:
        raise typer.Exit(CHANGED)


def _stored_drift(store: str, days: int, limit: int, alpha: float, permutations: int) -> Any:
    """Query drift of the stored requests (:func:`ragmeter.monitor.query_windows.stored_query_drift`),
    saying which windows were compared and how many questions had no stored vector."""
    from ragmeter.monitor.query_windows import stored_query_drift
    from ragmeter.store.vectors import packaged_encoder

    opened = open_existing_store(store)
    try:
        found = stored_query_drift(opened, packaged_encoder(), days, limit, alpha=alpha, permutations=permutations)
    finally:
        opened.close()
    if found.newest is None:
        raise fail("no stored request has a question: trace the application with configure(store=...) or `ragmeter traces import`")
    say(
        f"Recent window: after {found.current_from} up to {found.newest}; reference: the {days} day(s) before, after {found.reference_from}."
    )
    if found.result is None:
        raise fail(
            f"query drift needs at least 10 questions per window; got {len(found.reference)} reference and {len(found.current)} recent"
        )
    if found.encoded_now:
        say(
            ("note", "yellow"),
            f": {found.encoded_now} question(s) had no stored vector and were encoded now; "
            "`ragmeter traces embed --store ...` stores them once.",
        )
    return found.result


@command("kb", group=drift)
def kb_command(
    folder: Annotated[Path, typer.Argument(help="The knowledge base's folder.")],
    baseline: Annotated[Path, typer.Option(help="The snapshot to compare with (written when missing).")],
    update: Annotated[bool, typer.Option(help="After comparing, make the current state the baseline.")] = False,
    json_out: JsonOption = None,
) -> None:
    """Knowledge-base change: documents added, removed or edited since the baseline snapshot."""
    from ragmeter.monitor.kb import SnapshotError, compare_snapshots, read_snapshot, snapshot, write_snapshot

    _check_json(json_out, [baseline])
    _refuse_a_document(json_out, folder)
    try:
        current = snapshot(folder, leave_out=[baseline, json_out])
        if not baseline.exists():
            write_snapshot(baseline, current)
            say(f"No baseline yet: wrote {baseline} ({len(current)} documents).")
            return
        change = compare_snapshots(read_snapshot(baseline), current)
    except SnapshotError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"{baseline}: cannot write: {exc.strerror or exc}") from None
    _write(json_out, {"kind": "knowledge_base_change", **change.to_dict()})  # first: a change is never lost with the old baseline
    if update:
        try:
            write_snapshot(baseline, current)
        except OSError as exc:
            raise fail(f"{baseline}: cannot write: {exc.strerror or exc}") from None
    say(f"{len(change.added)} added, {len(change.removed)} removed, {len(change.edited)} edited, {change.unchanged} unchanged.")
    for label, paths in (("added", change.added), ("removed", change.removed), ("edited", change.edited)):
        for path in paths[:20]:
            say(f"  {label}: ", (path, "bold"))
    if change.changed:
        raise typer.Exit(CHANGED)


@command("scores", group=drift)
def scores_command(
    metric: Annotated[list[str], typer.Option("--metric", "-m", help="A metric to chart (repeatable).")],
    store: StoreOption = DEFAULT_STORE,
    source: Annotated[str, typer.Option(help="'runs': the stored runs in time order; 'traces': the monitor's scores per day.")] = "runs",
    baseline: Annotated[int, typer.Option(min=1, help="How many leading points (runs or days) set the centre line.")] = 5,
    tag: Annotated[str | None, typer.Option("--tag", "-t", help="With --source runs: only runs with this tag.")] = None,
    json_out: JsonOption = None,
) -> None:
    """Score drift: each metric on a control chart (limits from the bootstrap intervals); exit 1
    when the latest point of a metric is out of control. Runs that scored a metric with other
    settings than the latest run (another threshold, a changed default) are left out, and named."""
    from ragmeter.monitor.ledger import day_chart, run_chart

    _check_json(json_out, [store])
    if source not in ("runs", "traces"):
        raise fail(f"--source {source!r} is not known: choose 'runs' or 'traces'")
    opened = open_existing_store(store)
    charts = []
    try:
        for metric_id in metric:
            chart = run_chart(opened, metric_id, baseline, tag) if source == "runs" else day_chart(opened, metric_id, baseline)
            if not chart.points and not chart.left_out:  # a misspelt metric passed a CI check
                which = (
                    f"no stored run{' tagged ' + repr(tag) if tag else ''} scored it"
                    if source == "runs"
                    else "the monitor scored no trace with it"
                )
                raise fail(f"{metric_id}: {which}: is the name right?")
            if len(chart.points) <= baseline:
                say(
                    ("too few points", "yellow"),
                    f": {metric_id} has {len(chart.points)} {source} point(s); the baseline takes {baseline}, nothing is checked",
                )
            charts.append(chart)
    finally:
        opened.close()
    _write(json_out, {"kind": "score_drift", "source": source, "charts": [c.to_dict() for c in charts]})
    for chart in charts:
        _print_chart(chart)
    if any(chart.alarm for chart in charts):
        raise typer.Exit(CHANGED)


def _print_chart(chart: Any) -> None:
    """One line per checked point; the out-of-control ones marked; the runs left out named."""
    if chart.left_out:
        shown = ", ".join(chart.left_out[:5]) + (f" and {len(chart.left_out) - 5} more" if len(chart.left_out) > 5 else "")
        say(
            ("settings changed", "yellow"),
            f": {chart.metric}: {len(chart.left_out)} earlier {chart.left_out_of}(s) were scored with other settings than "
            f"the latest {chart.left_out_of} and are left out of the chart ({shown})",
        )
    if chart.centre is None:
        say(f"{chart.metric}: no point")
        return
    say((chart.metric, "bold"), f": centre {chart.centre:.4f}" + (" — the latest point is out of control" if chart.alarm else ""))
    for checked in chart.points:
        if checked.lower is None:
            continue
        mark = ("out of control", "bold red") if checked.out_of_control else ("ok", "green")
        say(
            f"  {checked.point.label} ({checked.point.at[:10]}): {checked.point.mean:.4f}, limits [{checked.lower:.4f}, {checked.upper:.4f}] ",
            mark,
        )
