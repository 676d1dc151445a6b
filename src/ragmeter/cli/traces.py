"""``ragmeter traces``: turn traces of a live application (``@ragmeter.trace``) and agent
transcripts into samples ``ragmeter eval`` can score, and keep traces in the run store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli.app import command, group
from ragmeter.cli.console import fail, say
from ragmeter.cli.runs import DEFAULT_STORE, StoreOption, open_store
from ragmeter.data.files import write_json_lines
from ragmeter.data.schema import Sample
from ragmeter.observe import TraceFileError, TranscriptError, read_spans, read_transcripts, spans_to_samples

traces = group("traces", "Traces of a live application and agent transcripts: to samples, into the store.")

OutOption = Annotated[Path, typer.Option("--out", "-o", help="The samples file to write (JSON lines), for `ragmeter eval`.")]


def _write_samples(samples: list[Sample], out: Path) -> None:
    if not samples:
        raise fail("no sample to write: nothing had both a question and an answer")
    try:
        write_json_lines(out, (s.model_dump(exclude_none=True) for s in samples))
    except OSError as exc:
        raise fail(f"{out}: cannot write: {exc.strerror or exc}") from None
    say(f"Wrote {len(samples)} samples to {out}; score them with `ragmeter eval {out}`.")


@command("export", group=traces)
def export_command(
    files: Annotated[list[Path], typer.Argument(help="Trace files written by ragmeter's tracing (JSON lines).")],
    out: OutOption = Path("traces-samples.jsonl"),
    include_errors: Annotated[bool, typer.Option(help="Keep requests that ended with an exception.")] = False,
) -> None:
    """Join each traced request's spans into one sample (question, retrieved contexts, response,
    latency, tokens, cost)."""
    spans = []
    try:
        for path in files:
            spans += list(read_spans(path))
    except TraceFileError as exc:
        raise fail(str(exc)) from None
    exported = spans_to_samples(spans, include_errors=include_errors)
    if exported.skipped:
        say((f"{len(exported.skipped)} trace(s) left out", "yellow"), f", e.g. {exported.skipped[0][0]}: {exported.skipped[0][1]}")
    _write_samples(exported.samples, out)


@command("transcripts", group=traces)
def transcripts_command(
    files: Annotated[list[Path], typer.Argument(help="Agent transcripts in the OpenAI chat format (.jsonl or .json).")],
    out: OutOption = Path("transcript-samples.jsonl"),
    tools: Annotated[
        str | None, typer.Option(help="Comma-separated tool names whose results count as retrieved contexts (default: all).")
    ] = None,
) -> None:
    """One sample per answered user turn; the results of the agent's tool calls (search, grep,
    read...) are its retrieved contexts."""
    chosen = {name.strip() for name in tools.split(",") if name.strip()} if tools is not None else None
    if chosen is not None and not chosen:
        raise fail(f"--tools {tools!r} names no tool")
    samples: list[Sample] = []
    try:
        for path in files:
            samples += read_transcripts(path, tools=chosen)
    except TranscriptError as exc:
        raise fail(str(exc)) from None
    _write_samples(samples, out)


@command("import", group=traces)
def import_command(
    files: Annotated[list[Path], typer.Argument(help="Trace files written by ragmeter's tracing (JSON lines).")],
    store: StoreOption = DEFAULT_STORE,
) -> None:
    """Copy traced spans into the store (spans stored already are skipped)."""
    opened = open_store(store)
    try:
        for path in files:
            try:
                added, present = opened.add_spans(read_spans(path))
            except TraceFileError as exc:
                raise fail(str(exc)) from None
            say(f"{path}: {added} span(s) stored" + (f", {present} were stored already" if present else ""))
    finally:
        opened.close()
