"""The run store: runs, their samples and scores, and traced requests in a database.

store = RunStore.open("runs.db")            # or "postgresql://user@host/ragmeter"
run_id = store.save(result, tags=["nightly"])
store.runs()                                 # newest first
store.load(run_id)                           # the Result again
"""

from __future__ import annotations

import hashlib
import json
import os
import reprlib
import subprocess
import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone
from itertools import islice
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, select
from sqlalchemy.exc import DatabaseError, IntegrityError

from ragmeter.data.files import jsonable
from ragmeter.data.schema import Sample
from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Score
from ragmeter.observe.record import SpanRecord
from ragmeter.results import Result, SampleResult
from ragmeter.store import schema
from ragmeter.store.database import StoreError, open_engine
from ragmeter.store.span_rows import span_row, storable

#: Rows written per statement.
BATCH = 1000
#: The length of the runs table's id column: a longer id names no run.
_RUN_ID_LENGTH = 32


class RunStore:
    """Runs and traces in a database (see :mod:`ragmeter.store.schema`).

    Args:
        engine: An engine on a migrated database (use :meth:`open`).
    """

    def __init__(self, engine: Engine):
        self.engine = engine
        #: Whether spans are checked against the columns' lengths before storing: PostgreSQL
        #: refuses a longer value, SQLite does not.
        self.checks_lengths = engine.dialect.name != "sqlite"

    @classmethod
    def open(cls, store: str) -> RunStore:
        """Open (and migrate) the store named by a ``--store`` value: a URL or a SQLite file path.

        Raises:
            StoreError: It cannot be opened (the message says why and what to install).
        """
        try:
            return cls(open_engine(store))
        except DatabaseError as exc:  # OperationalError (unreachable, unwritable) or a file that is no database
            reason = " ".join(str(exc.orig or exc).split())
            named = f" {store}" if "://" not in store else ""  # a file is named; a URL may hold a password
            raise StoreError(f"cannot open the store{named}: {reason}") from None

    def close(self) -> None:
        """Release the store's connections."""
        self.engine.dispose()

    def save(self, result: Result, *, tags: Sequence[str] = (), commit: str | None = None, source: str | None = None) -> str:
        """Store a run in one transaction; return its id.

        Args:
            result: The run.
            tags: Labels to find it by (``nightly``, ``model=gpt-4o``).
            commit: The code's git commit (default: detected, see :func:`detect_commit`).
            source: The run directory it was read from, if any.

        Raises:
            StoreError: The same run (same settings and start time) is stored already.
        """
        run_id = uuid.uuid4().hex[:12]
        settings = jsonable(result.run)
        fingerprint = hashlib.sha256(json.dumps([settings, jsonable(result.metrics)], sort_keys=True).encode()).hexdigest()
        row = {
            "id": run_id,
            "started_at": settings.get("started_at"),
            "stored_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "source": jsonable(source),
            "fingerprint": fingerprint,
            "n_samples": len(result.samples),
            "commit": commit if commit is not None else detect_commit(),
            "tags": jsonable(list(tags)),
            "judge": settings.get("judge"),
            "settings": settings,
            "metrics": jsonable(result.metrics),
            "aggregates": jsonable(result.aggregates),
        }
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(schema.runs), [row])
                for batch in _batches(enumerate(result.samples), BATCH):
                    _insert_samples(connection, run_id, batch)
        except IntegrityError:
            existing = self._run_with_fingerprint(fingerprint)
            raise StoreError(f"this run is stored already, as {existing}") from None
        return run_id

    def _run_with_fingerprint(self, fingerprint: str) -> str | None:
        with self.engine.connect() as connection:
            return connection.scalar(select(schema.runs.c.id).where(schema.runs.c.fingerprint == fingerprint))

    def runs(self, *, limit: int | None = None, tag: str | None = None) -> list[dict[str, Any]]:
        """Stored runs, newest first: id, started_at, source, commit, tags, n_samples, and
        ``means`` (each metric's mean) and ``units`` (each metric's unit, ``None`` for scores).

        Args:
            limit: At most this many.
            tag: Only runs with this tag.
        """
        columns = schema.runs.c
        query = select(
            columns.id,
            columns.started_at,
            columns.source,
            columns.commit,
            columns.tags,
            columns.n_samples,
            columns.metrics,
            columns.aggregates,
        ).order_by(columns.started_at.desc(), columns.stored_at.desc())
        with self.engine.connect() as connection:
            rows = [dict(r._mapping) for r in connection.execute(query)]
        if tag is not None:
            rows = [r for r in rows if tag in (r["tags"] or [])]
        for row in rows:
            aggregates, metrics = row.pop("aggregates") or {}, row.pop("metrics") or []
            row["means"] = {m["id"]: (aggregates.get(m["id"]) or {}).get("mean") for m in metrics}
            row["units"] = {m["id"]: m.get("unit") for m in metrics}
        return rows[:limit] if limit is not None else rows

    def resolve(self, run_id: str) -> str:
        """The full id of the run whose id is or starts with ``run_id``.

        Raises:
            StoreError: No run, or several, match; or ``run_id`` is blank (every id starts
                with it: ``runs delete ""`` deleted a store's only run).
        """
        if not run_id.strip():
            raise StoreError("give a run id, or its first characters (see `ragmeter runs list`)")
        found: list[str] = []
        if len(run_id) <= _RUN_ID_LENGTH:  # a longer one is no id (and SQLite refuses a pattern too long)
            query = select(schema.runs.c.id).where(schema.runs.c.id.startswith(run_id, autoescape=True)).limit(2)
            with self.engine.connect() as connection:
                found = list(connection.scalars(query))
        if not found:
            raise StoreError(f"no stored run has the id {reprlib.repr(run_id)} (see `ragmeter runs list`)")
        if len(found) > 1:
            raise StoreError(f"several stored runs start with {run_id!r}; give more of the id")
        return found[0]

    def run(self, run_id: str) -> dict[str, Any]:
        """One run's row (settings, metrics, aggregates, tags...) by id or unique id prefix.

        Raises:
            StoreError: See :meth:`resolve`.
        """
        full = self.resolve(run_id)
        with self.engine.connect() as connection:
            row = connection.execute(select(schema.runs).where(schema.runs.c.id == full)).one()
        return dict(row._mapping)

    def load(self, run_id: str) -> Result:
        """A stored run as a :class:`Result` (all its samples in memory).

        Raises:
            StoreError: See :meth:`resolve`.
        """
        header = self.run(run_id)
        by_position: dict[int, SampleResult] = {}
        with self.engine.connect() as connection:
            query = select(schema.samples).where(schema.samples.c.run_id == header["id"]).order_by(schema.samples.c.position)
            for row in connection.execute(query):
                by_position[row.position] = SampleResult(
                    key=row.key,
                    sample=Sample.model_validate(row.sample),
                    source=row.source,
                    location=row.location,
                    fingerprint=row.fingerprint,
                    configs=row.configs,
                )
            for row in connection.execute(select(schema.scores).where(schema.scores.c.run_id == header["id"])):
                _attach_score(by_position[row.position], row)
        order = {m["id"]: i for i, m in enumerate(header["metrics"])}
        for item in by_position.values():
            item.scores = dict(sorted(item.scores.items(), key=lambda pair: order.get(pair[0], len(order))))
        return Result(samples=list(by_position.values()), metrics=header["metrics"], run=header["settings"])

    def delete(self, run_id: str) -> str:
        """Delete a run with its samples and scores, in one transaction; return its full id.

        Raises:
            StoreError: See :meth:`resolve`.
        """
        full = self.resolve(run_id)
        with self.engine.begin() as connection:
            connection.execute(delete(schema.scores).where(schema.scores.c.run_id == full))
            connection.execute(delete(schema.samples).where(schema.samples.c.run_id == full))
            connection.execute(delete(schema.runs).where(schema.runs.c.id == full))
        return full

    def add_spans(self, records: Iterable[SpanRecord]) -> tuple[int, int]:
        """Store traced spans; a span stored already (same trace and span id) is skipped. Each
        batch of :data:`BATCH` spans is its own transaction: an import of a large file that is
        interrupted keeps what it stored (run again, the rest is added), and the store's other
        writers (the application's store sink, the monitor) wait for one batch, not the file.
        On PostgreSQL, a span with an id or kind longer than its column holds
        (:data:`~ragmeter.observe.record.STORED_LENGTHS`) is skipped with a warning naming it and
        the key (the database refused the whole batch for it); SQLite holds any length.

        Returns:
            How many were added and how many were already there.
        """
        added = present = 0
        columns = schema.spans.c
        for batch in _batches(iter(records), BATCH):
            batch = storable(batch, checks_lengths=self.checks_lengths)
            with self.engine.begin() as connection:
                keys = {(r.trace_id, r.span_id) for r in batch}
                query = select(columns.trace_id, columns.span_id).where(columns.trace_id.in_({k[0] for k in keys}))
                stored = {tuple(r) for r in connection.execute(query)}
                fresh = {(r.trace_id, r.span_id): r for r in batch if (r.trace_id, r.span_id) not in stored}
                if fresh:
                    connection.execute(insert(schema.spans), [span_row(r) for r in fresh.values()])
            added += len(fresh)
            present += len(batch) - len(fresh)
        return added, present

    def spans(self, *, limit: int | None = None) -> list[SpanRecord]:
        """Stored spans, newest first."""
        query = select(schema.spans).order_by(schema.spans.c.started_at.desc()).limit(limit)
        with self.engine.connect() as connection:
            return span_records(connection.execute(query))

    def trace_spans(self, *, since: str | None = None, until: str | None = None, invalid: dict[str, str] | None = None) -> list[SpanRecord]:
        """Every span of the traces whose request (root span) started at or after ``since`` and
        before ``until`` (ISO 8601 in UTC with milliseconds, as spans record times; ``None``: no
        bound), oldest request first.

        Args:
            since: The earliest start kept.
            until: The first start no longer kept.
            invalid: Where to note the traces with a stored span that is no valid span, which
                are left out (see :func:`span_records`); without it, such a span raises.
        """
        columns = schema.spans.c
        query = select(columns.trace_id).where(columns.parent_id.is_(None)).order_by(columns.started_at, columns.trace_id)
        if since is not None:
            query = query.where(columns.started_at >= since)
        if until is not None:
            query = query.where(columns.started_at < until)
        found: list[SpanRecord] = []
        with self.engine.connect() as connection:
            trace_ids = list(dict.fromkeys(connection.scalars(query)))
            for start in range(0, len(trace_ids), BATCH):
                rows = connection.execute(select(schema.spans).where(columns.trace_id.in_(trace_ids[start : start + BATCH])))
                found += span_records(rows, invalid)
        return found

    def count(self, table: str) -> int:
        """Rows in one of the tables (``runs``, ``samples``, ``scores``, ``spans``)."""
        with self.engine.connect() as connection:
            return int(connection.scalar(select(func.count()).select_from(schema.metadata.tables[table])) or 0)


def span_records(rows: Iterable[Any], invalid: dict[str, str] | None = None) -> list[SpanRecord]:
    """The spans of rows of the ``spans`` table.

    Args:
        rows: The rows: every stored span of the traces they are of.
        invalid: Where to note, as trace id -> why, each trace with a row that is no valid span
            (a token count of 12.5 that an application's tracer set, a row another tool wrote);
            its other spans are left out too, as a sample of part of a trace would be wrong.
            Without it, the first such row raises.

    Raises:
        ValueError: (without ``invalid``) A row is no valid span; the message names its trace,
            its span and the field.
    """
    found = []
    for row in rows:
        data = {k: v for k, v in row._mapping.items() if v is not None}
        try:
            found.append(SpanRecord.from_dict(data))
        except ValueError as exc:
            reason = f"its stored span {data.get('span_id')} is not valid: {exc}"
            if invalid is None:
                raise ValueError(f"trace {data.get('trace_id')}: {reason}") from None
            invalid.setdefault(data.get("trace_id", ""), reason)
    return [record for record in found if invalid is None or record.trace_id not in invalid]


def _batches(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    while batch := list(islice(items, size)):
        yield batch


def _insert_samples(connection: Connection, run_id: str, batch: list[tuple[int, SampleResult]]) -> None:
    """Insert a batch of samples and their scores."""
    sample_rows, score_rows = [], []
    for position, item in batch:
        sample_rows.append(
            {
                "run_id": run_id,
                "position": position,
                "key": item.key,
                "fingerprint": item.fingerprint,
                "source": item.source,
                "location": item.location,
                "configs": item.configs,
                "sample": jsonable(item.sample.model_dump(exclude_none=True)),
            }
        )
        for metric_id, score in item.scores.items():
            usage = item.usage.get(metric_id)
            score_rows.append(
                {
                    "run_id": run_id,
                    "position": position,
                    "metric_id": metric_id,
                    "value": score.value,
                    "explanation": score.explanation,
                    "reason": score.reason,
                    "failed": score.failed,
                    "details": jsonable(score.details),
                    "seconds": item.seconds.get(metric_id),
                    "prompt_tokens": usage.prompt_tokens if usage else None,
                    "completion_tokens": usage.completion_tokens if usage else None,
                    "cost_usd": usage.cost_usd if usage else None,
                    "usage": jsonable(usage.to_dict()) if usage else None,
                }
            )
    connection.execute(insert(schema.samples), sample_rows)
    if score_rows:
        connection.execute(insert(schema.scores), score_rows)


def _attach_score(item: SampleResult, row: Any) -> None:
    """Put one ``scores`` row back on its sample."""
    item.scores[row.metric_id] = Score(
        value=row.value, explanation=row.explanation, reason=row.reason, details=row.details, failed=row.failed
    )
    if row.seconds is not None:
        item.seconds[row.metric_id] = row.seconds
    if row.usage is not None:
        item.usage[row.metric_id] = Usage.from_dict(row.usage)


def detect_commit(directory: str | Path = ".") -> str | None:
    """The git commit being evaluated: ``GITHUB_SHA`` or ``CI_COMMIT_SHA`` when set, else the
    ``HEAD`` of the repository around ``directory``, else ``None``."""
    for variable in ("GITHUB_SHA", "CI_COMMIT_SHA"):
        if os.environ.get(variable):
            return os.environ[variable]
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
