"""``ragmeter runs``: keep runs in a database (SQLite file or PostgreSQL) and look them up.

The store is named by ``--store`` (or the ``RAGMETER_STORE`` environment variable): a file
path (SQLite, the default ``ragmeter-runs.db``) or ``postgresql://user@host/db`` (needs
``pip install 'ragmeter[postgres]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragmeter.cli.app import command, group
from ragmeter.cli.console import fail, say, stdout, table
from ragmeter.report.formatting import format_number
from ragmeter.results import Result
from ragmeter.results.rundir import RunDirError

if TYPE_CHECKING:  # SQLAlchemy is imported only by the commands that use the store
    from ragmeter.store import RunStore

StoreOption = Annotated[
    str,
    typer.Option(
        "--store",
        envvar="RAGMETER_STORE",
        help="The store: a SQLite file path or a database URL (postgresql://user@host/db; needs ragmeter[postgres]).",
    ),
]
DEFAULT_STORE = "ragmeter-runs.db"

runs = group("runs", "Keep runs in a database (SQLite or PostgreSQL): import, list, show, delete.")


def open_store(store: str) -> RunStore:
    """The store named by ``--store``, or a one-line usage error."""
    from ragmeter.store import RunStore, StoreError

    try:
        return RunStore.open(store)
    except StoreError as exc:
        raise fail(str(exc)) from None


def open_existing_store(store: str) -> RunStore:
    """The store named by ``--store``, for a command that reads what is stored, or a one-line
    usage error when it names a SQLite file that does not exist: opening that would make an
    empty store at a misspelt path and report on nothing, with exit code 0.

    Args:
        store: The ``--store`` value: a SQLite file path, or a database URL (opened as it is).
    """
    if "://" not in store and not Path(store).expanduser().exists():
        raise fail(f"--store {store}: no such store (`eval --store`, `runs import` and the tracer make one)")
    return open_store(store)


def save_run(store: RunStore, result: Result, source: Path | None, tags: list[str] | None = None) -> str:
    """Store ``result`` and say so; a one-line error when the store refuses it."""
    from ragmeter.store import StoreError

    try:
        run_id = store.save(result, tags=tags or [], source=str(source) if source is not None else None)
    except StoreError as exc:
        raise fail(str(exc)) from None
    say(f"Stored run {run_id} ({len(result.samples)} samples) in {store.engine.url.render_as_string(hide_password=True)}")
    return run_id


@command("import", group=runs)
def import_command(
    directories: Annotated[list[Path], typer.Argument(help="Run directories written by `ragmeter eval`.")],
    store: StoreOption = DEFAULT_STORE,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="A label for the runs (repeatable).")] = None,
) -> None:
    """Copy existing run directories into the store; a directory that cannot be read is
    named and skipped, the others are stored (exit 2 when any was skipped)."""
    opened = open_store(store)
    skipped = 0
    try:
        for directory in directories:
            try:  # the samples are read while they are stored: a damaged line surfaces there
                save_run(opened, Result.load(directory), directory, tag)
            except RunDirError as exc:
                say((f"skipped {directory}: {exc}", "yellow"))
                skipped += 1
    finally:
        opened.close()
    if skipped:
        stored = "the others are stored" if skipped < len(directories) else "nothing was stored"
        raise fail(f"{skipped} of {len(directories)} run directories could not be read; {stored}")


@command("list", group=runs)
def list_command(
    store: StoreOption = DEFAULT_STORE,
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many runs.")] = 50,
    tag: Annotated[str | None, typer.Option("--tag", "-t", help="Only runs with this label.")] = None,
) -> None:
    """The stored runs, newest first, with each metric's mean."""
    opened = open_existing_store(store)
    try:
        rows = opened.runs(limit=limit, tag=tag)
    finally:
        opened.close()
    if not rows:
        say("No run is stored" + (f" with the tag {tag!r}." if tag else "."))
        return
    cells = [
        (
            row["id"],
            (row["started_at"] or "–")[:16].replace("T", " "),
            row["n_samples"],
            (row["commit"] or "–")[:10],
            ", ".join(row["tags"] or []) or "–",
            "; ".join(f"{m} {format_number(v, row['units'][m])}" for m, v in row["means"].items()),
        )
        for row in rows
    ]
    columns = ["run", "started", ("samples", "right"), "commit", "tags", "means"]
    stdout.print(table(f"{len(rows)} stored run(s)", columns, cells))


@command("show", group=runs)
def show_command(
    run_id: Annotated[str, typer.Argument(help="The run's id (or the start of it).")],
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """One stored run: its settings and each metric's mean, 95% CI and counts."""
    from ragmeter.store import StoreError

    opened = open_existing_store(store)
    try:
        row = opened.run(run_id)
    except StoreError as exc:
        raise fail(str(exc)) from None
    finally:
        opened.close()
    judge = row["judge"] or {}
    say(("run ", "bold"), row["id"], f": {row['n_samples']} samples, started {row['started_at'] or 'unknown'}")
    say(f"source: {row['source'] or '–'}; commit: {row['commit'] or '–'}; tags: {', '.join(row['tags']) or '–'}")
    if judge:
        say(f"judge: {judge.get('backend', '?')} {judge.get('model', '')}")
    cells = []
    for metric in row["metrics"]:
        aggregate, unit = row["aggregates"].get(metric["id"], {}), metric.get("unit")
        low, high = aggregate.get("ci_low"), aggregate.get("ci_high")
        interval = f"[{format_number(low, unit)}, {format_number(high, unit)}]" if low is not None else "–"
        cells.append(
            (
                metric["id"],
                format_number(aggregate.get("mean"), unit),
                interval,
                aggregate.get("n_scored", 0),
                aggregate.get("n_unscored", 0),
            )
        )
    columns = ["metric", ("mean", "right"), ("95% CI", "right"), ("scored", "right"), ("unscored", "right")]
    stdout.print(table("Scores", columns, cells))


@command("delete", group=runs)
def delete_command(
    run_id: Annotated[str, typer.Argument(help="The run's id (or the start of it).")],
    store: StoreOption = DEFAULT_STORE,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a stored run with its samples and scores (run directories are not touched)."""
    from ragmeter.store import StoreError

    opened = open_existing_store(store)
    try:
        full = opened.resolve(run_id)
        if not yes and not _confirm(f"Delete run {full} from the store?"):
            raise fail("nothing deleted (pass --yes to delete without being asked)")
        opened.delete(full)
    except StoreError as exc:
        raise fail(str(exc)) from None
    finally:
        opened.close()
    say(f"Deleted run {full}.")


def _confirm(question: str) -> bool:
    """Ask on the terminal; no answer (no terminal, end of input) is no."""
    try:
        return typer.confirm(question, default=False, err=True)
    except typer.Abort:
        return False
