"""``ragmeter traces``: turn traces of a live application (``@ragmeter.trace``) and agent
transcripts into samples ``ragmeter eval`` can score, and keep traces in the run store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragmeter.cli.app import command, group
from ragmeter.cli.console import fail, say
from ragmeter.cli.issues import print_issues
from ragmeter.cli.options import check_json_lines_out, refuse_an_input
from ragmeter.cli.runs import DEFAULT_STORE, StoreOption, open_existing_store, open_store
from ragmeter.data.files import write_json_lines
from ragmeter.data.issues import InputIssue
from ragmeter.data.schema import Sample
from ragmeter.observe import SpanRecord, TraceFileError, TranscriptError, read_spans, read_transcripts, spans_to_samples
from ragmeter.observe.export import traces_between, utc_time
from ragmeter.run.outdir import OutputDirError, prepare

if TYPE_CHECKING:
    from ragmeter.store import RunStore

traces = group("traces", "Traces of a live application and agent transcripts: to samples, into the store.")

OutOption = Annotated[
    Path, typer.Option("--out", "-o", help="The samples file to write (JSON lines: .jsonl or .ndjson), for `ragmeter eval`.")
]
SinceOption = Annotated[
    str | None,
    typer.Option(help="Only requests that started at or after this time (ISO 8601: 2026-11-01 or 2026-11-01T12:00; UTC unless given)."),
]
UntilOption = Annotated[str | None, typer.Option(help="Only requests that started before this time (ISO 8601, as --since).")]
EmbedOption = Annotated[
    bool,
    typer.Option(
        "--embed/--no-embed", help="Store the vectors of the imported questions (the packaged encoder), so query drift only reads them."
    ),
]


def _write_samples(samples: list[Sample], out: Path) -> None:
    if not samples:
        raise fail("no sample to write: nothing had both a question and an answer")
    try:
        prepare(out.parent, f"--out {out}: its folder")  # check_json_lines_out said it can be made
        write_json_lines(out, (s.model_dump(exclude_none=True) for s in samples))
    except OutputDirError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"{out}: cannot write: {exc.strerror or exc}") from None
    say(f"Wrote {len(samples)} samples to {out}; score them with `ragmeter eval {out}`.")


@command("export", group=traces)
def export_command(
    files: Annotated[list[Path] | None, typer.Argument(help="Trace files written by ragmeter's tracing (JSON lines).")] = None,
    store: Annotated[
        str | None, typer.Option(help="Read the traces from this store (a SQLite file or postgresql://...) instead of files.")
    ] = None,
    out: OutOption = Path("traces-samples.jsonl"),
    since: SinceOption = None,
    until: UntilOption = None,
    include_errors: Annotated[bool, typer.Option(help="Keep requests that ended with an exception.")] = False,
) -> None:
    """Join each traced request's spans into one sample (question, retrieved contexts, response,
    latency, tokens, cost), from trace files or from a store. A line of a file that is no valid
    span (the short last line a killed application can leave) is named and skipped."""
    if bool(files) == (store is not None):
        raise fail("give trace files or --store, one of the two")
    check_json_lines_out(out)
    refuse_an_input("--out", out, files or [], "the samples")
    bounds = []
    for option, value in (("--since", since), ("--until", until)):
        try:
            bounds.append(utc_time(value) if value is not None else None)
        except ValueError as exc:
            raise fail(f"{option}: {exc}") from None
    if bounds[0] is not None and bounds[1] is not None and bounds[0] >= bounds[1]:
        raise fail(f"--since {since} is not before --until {until}: no request can fall between them")
    invalid: dict[str, str] = {}
    spans = _stored_spans(store, bounds[0], bounds[1], invalid) if store is not None else _file_spans(files or [], bounds[0], bounds[1])
    if not spans and not invalid:
        where = f"in {store}" if store is not None else f"in {', '.join(map(str, files or []))}"
        raise fail(f"no traced request {where}{_window(since, until)}: nothing to export")
    exported = spans_to_samples(spans, include_errors=include_errors)
    exported.skipped[:0] = invalid.items()
    if exported.repeated:
        say(
            (f"{exported.repeated} span(s) repeated", "yellow"),
            " (the same trace and span id: files given twice or overlapping), counted once",
        )
    if exported.skipped:
        say((f"{len(exported.skipped)} trace(s) left out", "yellow"), f", e.g. {exported.skipped[0][0]}: {exported.skipped[0][1]}")
    _write_samples(exported.samples, out)


def _window(since: str | None, until: str | None) -> str:
    """The time window of ``--since`` and ``--until`` (as given; ``None`` when not) in words."""
    parts = [f"at or after {since}" if since is not None else "", f"before {until}" if until is not None else ""]
    said = " and ".join(part for part in parts if part)
    return f" started {said}" if said else ""


def _file_spans(files: list[Path], since: str | None, until: str | None) -> list[SpanRecord]:
    """The spans of the trace files whose request started in [since, until); lines that are no
    valid span are named and skipped (an error when no line is one)."""
    spans: list[SpanRecord] = []
    issues: list[InputIssue] = []
    try:
        for path in files:
            spans += read_spans(path, issues)
    except TraceFileError as exc:
        raise fail(str(exc)) from None
    _say_skipped(issues)
    if issues and not spans:
        raise fail(f"no line of {', '.join(map(str, files))} is a valid span: nothing to export")
    return traces_between(spans, since, until) if since is not None or until is not None else spans


def _say_skipped(issues: list[InputIssue]) -> None:
    """Name the lines of trace files that were skipped (not a valid span), with their count."""
    if issues:
        say((f"{len(issues)} line(s) skipped, not a valid span:", "yellow"))
        print_issues(issues, written=False, unit="line")


def _stored_spans(store: str, since: str | None, until: str | None, invalid: dict[str, str]) -> list[SpanRecord]:
    """The spans of the stored traces whose request started in [since, until); the traces with a
    span that is not valid are left out and noted in ``invalid`` (trace id -> why)."""
    opened = open_existing_store(store)
    try:
        return opened.trace_spans(since=since, until=until, invalid=invalid)
    finally:
        opened.close()


@command("transcripts", group=traces)
def transcripts_command(
    files: Annotated[list[Path], typer.Argument(help="Agent transcripts in the OpenAI chat format (.jsonl or .json).")],
    out: OutOption = Path("transcript-samples.jsonl"),
    tools: Annotated[
        str | None, typer.Option(help="Comma-separated tool names whose results count as retrieved contexts (default: all).")
    ] = None,
) -> None:
    """One sample per answered user turn; the results of the agent's tool calls (search, grep,
    read...) are its retrieved contexts. A transcript that is malformed is named and skipped."""
    check_json_lines_out(out)
    refuse_an_input("--out", out, files, "the samples")
    chosen = {name.strip() for name in tools.split(",") if name.strip()} if tools is not None else None
    if chosen is not None and not chosen:
        raise fail(f"--tools {tools!r} names no tool")
    samples: list[Sample] = []
    issues: list[InputIssue] = []
    try:
        for path in files:
            samples += read_transcripts(path, tools=chosen, issues=issues)
    except TranscriptError as exc:
        raise fail(str(exc)) from None
    if issues:
        say((f"{len(issues)} transcript(s) skipped, malformed:", "yellow"))
        print_issues(issues, written=False, unit="transcript")
        if not samples:
            raise fail(f"no sample to write: no well-formed transcript of {', '.join(map(str, files))} has an answered user turn")
    _write_samples(samples, out)


@command("import", group=traces)
def import_command(
    files: Annotated[list[Path], typer.Argument(help="Trace files written by ragmeter's tracing (JSON lines).")],
    store: StoreOption = DEFAULT_STORE,
    embed: EmbedOption = True,
) -> None:
    """Copy traced spans into the store (spans stored already are skipped), with the vectors of
    their questions. A line that is no valid span (the short last line a killed application can
    leave) is named and skipped; so is a file that cannot be read, the others are stored (exit 2)."""
    opened = open_store(store)
    # SQLite stores an id of any length; PostgreSQL refuses one longer than its column, and with it the batch.
    checking = opened.engine.dialect.name != "sqlite"
    read, skipped, unreadable = 0, 0, 0
    try:
        for path in files:
            trace_ids: list[str] = []
            issues: list[InputIssue] = []
            try:
                added, present = opened.add_spans(_noting(read_spans(path, issues, to_store=checking), trace_ids))
            except TraceFileError as exc:  # the batches read before it are stored: running again adds the rest
                say((f"skipped: {exc}", "yellow"))
                unreadable += 1
                continue
            _say_skipped(issues)
            say(f"{path}: {added} span(s) stored" + (f", {present} were stored already" if present else ""))
            read, skipped = read + len(trace_ids), skipped + len(issues)
            if embed and trace_ids:
                _embed(opened, trace_ids)
    finally:
        opened.close()
    if unreadable:
        stored = "the others are stored" if unreadable < len(files) else "nothing was stored"
        raise fail(f"{unreadable} of {len(files)} trace file(s) could not be read; {stored}")
    if skipped and not read:
        raise fail(f"no line of {', '.join(map(str, files))} is a valid span: nothing stored")


def _noting(records: Iterator[SpanRecord], trace_ids: list[str]) -> Iterator[SpanRecord]:
    """``records`` as they are read, each one's trace id noted in ``trace_ids``."""
    for record in records:
        trace_ids.append(record.trace_id)
        yield record


@command("embed", group=traces)
def embed_command(store: StoreOption = DEFAULT_STORE) -> None:
    """Store the vectors of the stored questions that have none yet (traces stored before vectors
    were kept, or by the application's store sink without `ragmeter monitor`), so query drift only
    reads vectors. Resumable: run it again after an interruption."""
    opened = open_existing_store(store)
    try:
        _embed(opened, None)
    finally:
        opened.close()


def _embed(store: RunStore, trace_ids: list[str] | None) -> None:
    """Encode and store the questions without a vector (of ``trace_ids``, or all), saying how many."""
    from ragmeter.store import StoreError
    from ragmeter.store.vectors import embed_questions, packaged_encoder

    def progress(done: int, total: int) -> None:
        if total > 2000:
            say(f"  {done} of {total} question vectors stored")

    try:
        stored = embed_questions(store, packaged_encoder(), trace_ids=trace_ids, on_chunk=progress)
    except StoreError as exc:
        raise fail(str(exc)) from None
    say(f"{stored} question vector(s) stored" + (" (every stored question has one)" if trace_ids is None else ""))
