"""Spans as the ``spans`` table holds them: which spans its columns can hold, and their rows."""

from __future__ import annotations

import logging
from typing import Any

from ragmeter.data.files import jsonable
from ragmeter.data.issues import describe_briefly
from ragmeter.observe.record import SpanRecord, too_long
from ragmeter.store import schema

log = logging.getLogger("ragmeter.store")


def storable(batch: list[SpanRecord], *, checks_lengths: bool) -> list[SpanRecord]:
    """The spans of ``batch`` whose ids and kind the store's columns hold; the others are named
    in one warning (how many, and the first with its span, trace and key).

    Args:
        batch: Spans about to be stored.
        checks_lengths: The database refuses a value longer than its column (PostgreSQL; SQLite
            holds any length, and every span is kept).
    """
    if not checks_lengths:
        return batch
    problems = {id(r): problem for r in batch if (problem := too_long(r)) is not None}
    if problems:
        first = next(r for r in batch if id(r) in problems)
        log.warning(
            "%d span(s) not stored, an id or the kind too long for the store; e.g. span %s of trace %s: %s",
            len(problems),
            describe_briefly(first.span_id),
            describe_briefly(first.trace_id),
            problems[id(first)],
        )
    return [r for r in batch if id(r) not in problems]


def span_row(record: SpanRecord) -> dict[str, Any]:
    """The ``spans`` table's row of ``record``."""
    data = without_nul(jsonable(record.to_dict()))
    return {**{c.name: None for c in schema.spans.columns}, "contexts": [], "attributes": {}, **data}


def without_nul(value: Any) -> Any:
    """``value`` (JSON) with each NUL character of its strings, keys too, replaced by U+FFFD, the
    replacement character: PostgreSQL's text cannot hold one and refused the whole batch of spans
    for it (a file's import, or the application's store sink, 500 requests at a time)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_nul(v) for v in value]
    return value
