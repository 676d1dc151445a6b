"""Traces to samples: read a trace file and join each request's spans into one
:class:`~ragmeter.data.schema.Sample`, so that ``ragmeter eval`` can score live traffic.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ragmeter.data.encodings import file_hint, invalid_utf8, unicode_bom, unmarked_utf16_file
from ragmeter.data.files import json_object
from ragmeter.data.issues import InputIssue, describe_briefly
from ragmeter.data.schema import Sample
from ragmeter.observe.record import SpanRecord, too_long


class TraceFileError(ValueError):
    """A trace file that cannot be read; the message names the file and the line."""


def read_spans(path: str | Path, issues: list[InputIssue] | None = None, *, to_store: bool = False) -> Iterator[SpanRecord]:
    """The spans of a JSON-lines trace file, in file order.

    Args:
        path: The trace file.
        issues: Where to note each line that is not a valid span (not UTF-8 or JSON, like the
            short last line a killed application can leave, or an object that is no span) as
            an :class:`~ragmeter.data.issues.InputIssue`, the line skipped and the rest read.
            Without it, the first such line raises.
        to_store: The spans go to a store that holds its columns to their lengths (PostgreSQL;
            SQLite does not): an id or kind longer than its column holds
            (:data:`~ragmeter.observe.record.STORED_LENGTHS`, a UUID's 36 characters as trace
            id) makes the line no valid span too.

    Raises:
        TraceFileError: The file is missing or cannot be read, is UTF-16 or UTF-32 (with a
            byte-order mark, or UTF-16 without one: :func:`~ragmeter.data.encodings.unmarked_utf16`;
            a UTF-8 mark is dropped), or (without ``issues``) a line is not a valid span (the
            message names the file, the line and the key).
    """
    path = Path(path)
    try:
        unmarked = unmarked_utf16_file(path)
        if unmarked:
            raise TraceFileError(f"{path}: {unmarked}")
        with path.open("rb") as handle:
            if unicode_bom(handle.read(4)) in ("utf-16", "utf-32"):
                raise TraceFileError(f"{path}: {file_hint(path).removeprefix('; ')}")
            handle.seek(0)
            for number, raw in enumerate(handle, start=1):  # a binary file splits on b"\n" only
                raw = raw.removeprefix(codecs.BOM_UTF8) if number == 1 else raw  # Notepad opens a file with one
                if not raw.strip():
                    continue
                try:
                    span = _span_of(raw)
                    if to_store:
                        _check_lengths(span)
                except ValueError as exc:
                    if issues is None:
                        raise TraceFileError(f"{path}, line {number}: {exc}") from None
                    issues.append(InputIssue(str(path), f"line {number}", None, str(exc)))
                    continue
                yield span
    except FileNotFoundError:
        raise TraceFileError(f"{path} not found") from None
    except OSError as exc:
        raise TraceFileError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _span_of(raw: bytes) -> SpanRecord:
    """The span on one line of a trace file.

    Raises:
        ValueError: The line is not UTF-8, not a JSON object, or not a valid span (a key missing
            or of the wrong type, or a ``started_at`` that is no ISO 8601 date or time); the
            message says why and names the key, the caller adds the file and line.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(invalid_utf8(raw, exc, "")) from None
    data = json_object(text.removesuffix("\n"))  # without its "\n", an error at the end is at a column, not "line 2"
    try:
        span = SpanRecord.from_dict(data)
    except ValueError as exc:
        raise ValueError(f"not a valid span: {exc}") from None
    try:
        # In UTC, as ragmeter's own spans record it: the store, --since and --until compare it as
        # text, so "10:00+05:00" kept as written sorted after "06:00Z", which it precedes.
        span.started_at = utc_time(span.started_at)
    except ValueError as exc:
        raise ValueError(f"not a valid span: 'started_at': {exc}") from None
    return span


def _check_lengths(span: SpanRecord) -> None:
    """Raise ValueError (naming the key) when an id or the kind of ``span`` is longer than the
    store's column holds."""
    problem = too_long(span)
    if problem is not None:
        raise ValueError(f"not a valid span: {problem}")


def utc_time(text: str) -> str:
    """An ISO 8601 date or time in the form spans record times: UTC, milliseconds
    (``2026-11-01`` is ``2026-11-01T00:00:00.000+00:00``; a time without an offset is UTC).

    Raises:
        ValueError: ``text`` is not an ISO 8601 date or time, or is one before year 1 or after
            9999 in UTC.
    """
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.astimezone(timezone.utc).isoformat(timespec="milliseconds")
    except (ValueError, OverflowError):  # OverflowError: in UTC it falls before year 1 or after 9999
        raise ValueError(
            f"{describe_briefly(text)} is not an ISO 8601 date or time (e.g. 2026-11-01 or 2026-11-01T12:00:00+00:00)"
        ) from None


def traces_between(spans: Iterable[SpanRecord], since: str | None = None, until: str | None = None) -> list[SpanRecord]:
    """The spans of the traces whose request started at or after ``since`` and before ``until``
    (both as :func:`utc_time` gives them; ``None``: no bound). A trace's start is its earliest span's.

    Args:
        spans: Spans as :func:`read_spans` gives them: ``started_at`` in UTC, so times compare as text.
        since: The earliest start kept.
        until: The first start no longer kept.
    """
    traces: dict[str, list[SpanRecord]] = {}
    for record in spans:
        traces.setdefault(record.trace_id, []).append(record)
    kept = []
    for records in traces.values():
        started = min(r.started_at for r in records)
        if (since is None or started >= since) and (until is None or started < until):
            kept += records
    return kept


@dataclass
class Export:
    """Samples built from traces, and the traces left out.

    Attributes:
        samples: One sample per request that has a question, in the order requests began.
        skipped: ``(trace_id, reason)`` for each trace left out.
        repeated: How many spans were given again (same trace and span id: a file given twice,
            files that overlap) and counted once.
    """

    samples: list[Sample]
    skipped: list[tuple[str, str]]
    repeated: int = 0


def spans_to_samples(spans: Iterable[SpanRecord], *, include_errors: bool = False) -> Export:
    """Join the spans of each trace into one sample.

    The question and response come from the outermost span that has them; the retrieved
    contexts from the spans that retrieved something (the outermost first); tokens and cost are
    summed over the trace's spans; the latency is the root span's. The sample's id is the trace
    id; ``metadata`` holds ``latency_ms``, ``tokens``, ``cost_usd``, ``model``, ``trace_id``,
    ``name`` and ``started_at``, so the efficiency metrics can score them.

    Args:
        spans: Spans in any order (several traces mixed); a span given again (same trace and
            span id) counts once, the first, as the store keeps it: its tokens, cost and
            contexts were counted twice.
        include_errors: Keep requests that ended with an exception (their error goes into
            ``metadata.error``); by default they are skipped.
    """
    traces: dict[str, dict[str, SpanRecord]] = {}
    repeated = 0
    for record in spans:
        trace = traces.setdefault(record.trace_id, {})
        repeated += record.span_id in trace
        trace.setdefault(record.span_id, record)
    samples, skipped = [], []
    for trace_id, records in sorted(traces.items(), key=lambda item: min(r.started_at for r in item[1].values())):
        sample, reason = _sample_of(trace_id, list(records.values()), include_errors)
        if sample is None:
            skipped.append((trace_id, reason))
        else:
            samples.append(sample)
    return Export(samples, skipped, repeated)


def _depths(records: list[SpanRecord]) -> dict[str, int]:
    """Each span's depth below the trace's root (unknown parents count as roots)."""
    parents = {r.span_id: r.parent_id for r in records}
    depths: dict[str, int] = {}
    for span_id in parents:
        depth, current, seen = 0, parents[span_id], {span_id}
        while current in parents and current not in seen:
            seen.add(current)
            depth, current = depth + 1, parents[current]
        depths[span_id] = depth
    return depths


def _sample_of(trace_id: str, records: list[SpanRecord], include_errors: bool) -> tuple[Sample | None, str]:
    depths = _depths(records)
    ordered = sorted(records, key=lambda r: (depths[r.span_id], r.started_at))
    root = ordered[0]
    errors = [r.error for r in ordered if r.error]
    if errors and not include_errors:
        return None, f"the request failed: {errors[0]}"
    question = next((r.question for r in ordered if r.question), None)
    if question is None:
        return None, "no span recorded a question"
    contexts = [c for r in ordered for c in r.contexts]
    metadata: dict[str, Any] = {"trace_id": trace_id, "name": root.name, "started_at": root.started_at}
    if root.latency_ms is not None:
        metadata["latency_ms"] = round(root.latency_ms, 3)
    prompt = [r.prompt_tokens for r in ordered if r.prompt_tokens is not None]
    completion = [r.completion_tokens for r in ordered if r.completion_tokens is not None]
    if prompt or completion:
        metadata["tokens"] = {"prompt": sum(prompt), "completion": sum(completion)}
    costs = [r.cost_usd for r in ordered if r.cost_usd is not None]
    if costs:
        metadata["cost_usd"] = sum(costs)
    model = next((r.model for r in ordered if r.model), None)
    if model:
        metadata["model"] = model
    if errors:
        metadata["error"] = errors[0]
    for r in ordered[::-1]:
        metadata.update({k: v for k, v in r.attributes.items() if k not in metadata})
    sample = Sample(
        id=trace_id,
        user_input=question,
        retrieved_contexts=[c.text for c in contexts] if contexts else None,
        retrieved_context_ids=[str(c.id) for c in contexts] if contexts and all(c.id is not None for c in contexts) else None,
        response=next((r.response for r in ordered if r.response is not None), None),
        metadata=metadata,
    )
    return sample, ""
