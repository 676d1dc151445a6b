"""The online monitor's reads and writes in the run store: traces not yet decided about, their
spans, the judge cost of the last hour, and each batch's decisions and scores (one transaction);
and the score series read back for drift: control charts over the stored runs and over the
monitor's days.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import exists, func, insert, select

from ragmeter.data.files import jsonable
from ragmeter.monitor.control import ControlChart, Point, control_chart, window_point
from ragmeter.observe.record import SpanRecord
from ragmeter.results import SampleResult
from ragmeter.store import RunStore
from ragmeter.store.schema import monitor_seen, runs, spans, trace_scores
from ragmeter.store.store import span_records

#: What the monitor decided about a trace.
SCORED, NOT_SAMPLED, UNSCORABLE = "scored", "not_sampled", "unscorable"


@dataclass
class Decision:
    """What the monitor decided about one trace.

    Attributes:
        trace_id: The trace.
        decision: :data:`SCORED`, :data:`NOT_SAMPLED` or :data:`UNSCORABLE`.
        reason: Why it is unscorable (no question, the request failed...).
        result: Its scores, when scored.
    """

    trace_id: str
    decision: str
    reason: str | None = None
    result: SampleResult | None = None


def undecided_traces(store: RunStore, limit: int) -> list[str]:
    """Up to ``limit`` traces (oldest first) with a root span and no decision yet."""
    query = (
        select(spans.c.trace_id)
        .where(spans.c.parent_id.is_(None), ~exists().where(monitor_seen.c.trace_id == spans.c.trace_id))
        .group_by(spans.c.trace_id)
        .order_by(func.min(spans.c.started_at))
        .limit(limit)
    )
    with store.engine.connect() as connection:
        return list(connection.scalars(query))


def spans_of(store: RunStore, trace_ids: Sequence[str], invalid: dict[str, str]) -> list[SpanRecord]:
    """Every stored span of these traces but those of the traces with a span that is not valid,
    noted in ``invalid`` as trace id -> why (see :func:`~ragmeter.store.store.span_records`)."""
    with store.engine.connect() as connection:
        rows = connection.execute(select(spans).where(spans.c.trace_id.in_(list(trace_ids))))
        return span_records(rows, invalid)


def cost_since(store: RunStore, since: str) -> float:
    """Judge cost (US dollars, known prices only) of the scores written since ``since`` (ISO time)."""
    query = select(func.coalesce(func.sum(trace_scores.c.cost_usd), 0.0)).where(trace_scores.c.scored_at >= since)
    with store.engine.connect() as connection:
        return float(connection.scalar(query) or 0.0)


def calls_since(store: RunStore, since: str) -> int:
    """Judge model calls (every judge, the local one and unpriced ones included; cache hits not
    counted) of the scores written since ``since`` (ISO time)."""
    query = select(trace_scores.c.usage).where(trace_scores.c.scored_at >= since, trace_scores.c.usage.is_not(None))
    with store.engine.connect() as connection:
        return sum(int(u.get("calls") or 0) for u in connection.scalars(query) if isinstance(u, dict))


def record(store: RunStore, decisions: Sequence[Decision], at: str, settings: Mapping[str, dict[str, Any]]) -> None:
    """Write a batch's decisions and scores in one transaction: all of it, or none (a kill in
    between leaves the batch undecided, to be scored again, never twice).

    Args:
        store: The run store.
        decisions: The batch's decisions.
        at: When they were made (ISO 8601, UTC).
        settings: Metric id -> the parameters it scored with (``Metric.config()``), stored
            with each score.
    """
    seen_rows = [{"trace_id": d.trace_id, "decision": d.decision, "reason": d.reason, "decided_at": at} for d in decisions]
    score_rows = [
        _score_row(d.trace_id, metric_id, d.result, at, settings.get(metric_id))
        for d in decisions
        if d.result is not None
        for metric_id in d.result.scores
    ]
    with store.engine.begin() as connection:
        if seen_rows:
            connection.execute(insert(monitor_seen), seen_rows)
        if score_rows:
            connection.execute(insert(trace_scores), score_rows)


def _score_row(trace_id: str, metric_id: str, result: SampleResult | None, at: str, settings: dict[str, Any] | None) -> dict[str, Any]:
    assert result is not None
    score, usage = result.scores[metric_id], result.usage.get(metric_id)
    return {
        "trace_id": trace_id,
        "metric_id": metric_id,
        "value": score.value,
        "explanation": score.explanation,
        "reason": score.reason,
        "failed": score.failed,
        "details": jsonable(score.details),
        "scored_at": at,
        "cost_usd": usage.cost_usd if usage else None,
        "usage": jsonable(usage.to_dict()) if usage else None,
        "settings": jsonable(settings) if settings is not None else None,
    }


def trace_score_rows(store: RunStore) -> list[dict[str, Any]]:
    """Every monitor score, oldest first (for reports and tests)."""
    with store.engine.connect() as connection:
        rows = connection.execute(select(trace_scores).order_by(trace_scores.c.scored_at, trace_scores.c.trace_id))
        return [dict(r._mapping) for r in rows]


def decision_counts(store: RunStore) -> dict[str, int]:
    """How many traces got each decision."""
    query = select(monitor_seen.c.decision, func.count()).group_by(monitor_seen.c.decision)
    with store.engine.connect() as connection:
        return {decision: int(count) for decision, count in connection.execute(query)}


def run_series(store: RunStore, metric_id: str, tag: str | None = None) -> list[tuple[str, str, dict[str, Any], dict[str, Any] | None]]:
    """``(run id, started_at, aggregate, settings)`` of every stored run that has the metric,
    oldest first; ``settings`` are the metric's parameters in that run (``None`` when the run
    did not record them).

    Args:
        store: The run store.
        metric_id: The metric.
        tag: Only runs with this tag.
    """
    query = select(runs.c.id, runs.c.started_at, runs.c.stored_at, runs.c.tags, runs.c.metrics, runs.c.aggregates).order_by(
        runs.c.started_at, runs.c.stored_at
    )
    with store.engine.connect() as connection:
        rows = list(connection.execute(query))
    return [
        (row.id, row.started_at or row.stored_at, row.aggregates[metric_id], _settings(row.metrics, metric_id))
        for row in rows
        if metric_id in (row.aggregates or {}) and (tag is None or tag in (row.tags or []))
    ]


def _settings(metrics: list[dict[str, Any]] | None, metric_id: str) -> dict[str, Any] | None:
    """A run's parameters of one metric, from its stored metric descriptions."""
    return next((m.get("config") for m in metrics or [] if m.get("id") == metric_id), None)


def run_chart(store: RunStore, metric_id: str, baseline: int, tag: str | None = None) -> ControlChart:
    """A metric's control chart over the stored runs that scored it with the latest run's
    settings. Runs that scored it with other settings (a threshold set by hand, a default that
    changed with an upgrade) measure something else: they are left out, and the chart lists
    them in ``left_out``.

    Args:
        store: The run store.
        metric_id: The metric.
        baseline: How many leading runs set the centre line.
        tag: Only runs with this tag.
    """
    series = [entry for entry in run_series(store, metric_id, tag) if entry[2].get("mean") is not None]
    latest = series[-1][3] if series else None
    points = [
        Point(run_id, at, a["mean"], a.get("ci_low"), a.get("ci_high"), a.get("n_scored", 0))
        for run_id, at, a, settings in series
        if settings == latest
    ]
    chart = control_chart(metric_id, points, baseline)
    chart.left_out = [run_id for run_id, _, _, settings in series if settings != latest]
    return chart


def day_chart(store: RunStore, metric_id: str, baseline: int) -> ControlChart:
    """A metric's control chart over the days of the monitor's scores made with the settings
    of its latest score; the traces scored with other settings are left out and listed in
    ``left_out`` (as :func:`run_chart` does for runs).

    Args:
        store: The run store.
        metric_id: The metric.
        baseline: How many leading days set the centre line.
    """
    by_day, left_out = trace_values_by_day(store, metric_id)
    found = [window_point(day, day, values) for day, values in by_day.items()]
    chart = control_chart(metric_id, [p for p in found if p is not None], baseline)
    chart.left_out, chart.left_out_of = left_out, "trace"
    return chart


def trace_values_by_day(store: RunStore, metric_id: str, chunk: int = 10_000) -> tuple[dict[str, list[float]], list[str]]:
    """The monitor's scores of a metric made with the settings of its latest score that
    recorded them, grouped by the day (UTC) their request started; and the ids of the traces
    whose score was made with other settings (a threshold changed, an upgrade's new default).
    Scores stored before schema 0004 recorded no settings: they are charted, as they were
    before (nothing tells them apart), so that upgrading keeps a chart's history.

    The scores are read first and their requests' start times looked up by trace id, a chunk at
    a time (index lookups whatever the database's statistics; a join here was planned badly by
    PostgreSQL before its first ANALYZE of freshly loaded tables).
    """
    values_query = (
        select(trace_scores.c.trace_id, trace_scores.c.value, trace_scores.c.settings)
        .where(trace_scores.c.metric_id == metric_id, trace_scores.c.value.is_not(None))
        .order_by(trace_scores.c.scored_at, trace_scores.c.trace_id)
    )
    days: dict[str, list[float]] = {}
    with store.engine.connect() as connection:
        rows = list(connection.execute(values_query))
        latest = next((row.settings for row in reversed(rows) if row.settings is not None), None)
        values: dict[str, float] = {}
        left_out: list[str] = []
        for row in rows:
            if row.settings is None or row.settings == latest:
                values[row.trace_id] = float(row.value)
            else:
                left_out.append(row.trace_id)
        ids = list(values)
        for start in range(0, len(ids), chunk):
            batch = ids[start : start + chunk]
            roots = select(spans.c.trace_id, spans.c.started_at).where(spans.c.trace_id.in_(batch), spans.c.parent_id.is_(None))
            for trace_id, started_at in connection.execute(roots):
                days.setdefault(started_at[:10], []).append(values[trace_id])
    return dict(sorted(days.items())), left_out
