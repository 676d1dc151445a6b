"""What the dashboard's pages show, read from the run store (SQLAlchemy Core, paginated)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from ragmeter.store import RunStore
from ragmeter.store.schema import spans, trace_scores

#: Traces per page of the trace browser.
PAGE = 50


@dataclass
class TracePage:
    """One page of the trace browser: the requests (root spans) newest first, with their scores.

    Attributes:
        rows: Each request: trace_id, started_at, name, question, response, latency_ms, error,
            and ``scores`` (metric id to value, explanation and reason).
        total: Requests in the store.
        page: This page's number (from 1).
        pages: Number of pages.
    """

    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int


def trace_page(store: RunStore, page: int) -> TracePage:
    """Requests of page ``page`` (newest first) with the monitor's scores of each."""
    roots = spans.c.parent_id.is_(None)
    with store.engine.connect() as connection:
        total = int(connection.scalar(select(func.count()).select_from(spans).where(roots)) or 0)
        pages = max(1, -(-total // PAGE))
        page = min(max(page, 1), pages)
        columns = [
            spans.c.trace_id,
            spans.c.started_at,
            spans.c.name,
            spans.c.question,
            spans.c.response,
            spans.c.latency_ms,
            spans.c.error,
        ]
        query = select(*columns).where(roots).order_by(spans.c.started_at.desc(), spans.c.trace_id).limit(PAGE).offset((page - 1) * PAGE)
        rows = [dict(r._mapping, scores={}) for r in connection.execute(query)]
        by_trace = {r["trace_id"]: r for r in rows}
        if by_trace:
            scored = select(trace_scores).where(trace_scores.c.trace_id.in_(list(by_trace)))
            for score in connection.execute(scored):
                by_trace[score.trace_id]["scores"][score.metric_id] = {
                    "value": score.value,
                    "explanation": score.explanation,
                    "reason": score.reason,
                }
    return TracePage(rows, total, page, pages)


def trace_detail(store: RunStore, trace_id: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every span of a trace (oldest first) and the monitor's scores of it (empty lists when unknown)."""
    with store.engine.connect() as connection:
        found = [
            dict(r._mapping) for r in connection.execute(select(spans).where(spans.c.trace_id == trace_id).order_by(spans.c.started_at))
        ]
        scores = {
            s.metric_id: {"value": s.value, "explanation": s.explanation, "reason": s.reason, "details": s.details}
            for s in connection.execute(select(trace_scores).where(trace_scores.c.trace_id == trace_id))
        }
    return found, scores


def monitored_metrics(store: RunStore) -> list[str]:
    """The metrics the monitor has scored traces with."""
    with store.engine.connect() as connection:
        return sorted(connection.scalars(select(trace_scores.c.metric_id).distinct()))
