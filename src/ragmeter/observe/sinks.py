"""Where finished spans go: a JSON-lines file, the run store, a list in memory, or any callable.

A sink that fails never breaks the application: the span is dropped, counted, and a warning is
logged once per sink (feedback is never lost silently).
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

from ragmeter.data.files import json_line
from ragmeter.observe.record import SpanRecord

log = logging.getLogger("ragmeter.observe")

#: Most seconds the store sink waits before trying again a batch the database could not take.
MOST_WAIT = 5.0


class JsonlSink:
    """Appends each span as one JSON line to a file.

    Each line is written with a single ``write`` on a file opened for appending, so lines from
    several threads or processes never interleave and a kill leaves at most the last line
    short (the reader names it and reads on); the next sink on the file starts a new line
    after it, so its first span is not lost with it. A link at the path is not followed.

    Args:
        path: The file; created (with its directory) when missing.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        self._descriptor = os.open(self.path, flags, 0o644)
        self._lock = threading.Lock()
        size = os.fstat(self._descriptor).st_size
        if size and os.pread(self._descriptor, 1, size - 1) != b"\n":  # a line a kill cut short
            os.write(self._descriptor, b"\n")

    def __call__(self, record: SpanRecord) -> None:
        data = json_line(record.to_dict()).encode("utf-8")
        with self._lock:
            os.write(self._descriptor, data)

    def close(self) -> None:
        """Close the file; later spans are dropped with a warning."""
        with self._lock:
            if self._descriptor >= 0:
                os.close(self._descriptor)
                self._descriptor = -1


class MemorySink(list[SpanRecord]):
    """Keeps finished spans in a list (tests, notebooks)."""

    def __call__(self, record: SpanRecord) -> None:
        self.append(record)


class StoreSink:
    """Writes spans to the run store from a background thread, in batches: the application
    never waits for the database. A batch that the database cannot take for now (a SQLite store
    that another writer holds locked past its busy timeout, a PostgreSQL connection lost) is held
    and tried again, waiting up to :data:`MOST_WAIT` seconds between tries, while new spans queue
    behind it: at most ``batch`` held plus ``capacity`` queued, and a span arriving to a full
    queue is dropped, counted by :func:`~ragmeter.observe.dropped_spans` and named in a warning.
    A batch the database refuses for good is dropped with a warning. Spans still queued at exit,
    or at :meth:`close`, are written first (see ``close``'s ``timeout``). Never an exception in
    the application.

    Args:
        store: A ``--store`` value: a SQLite file path or a database URL.
        batch: Most spans written per transaction.
        capacity: Most spans waiting to be written.
        embed_questions: Also store each request's question vector (the packaged encoder, loaded
            in this process on the first batch, about 1 ms of CPU a question in the sink's
            thread). Off by default: ``ragmeter monitor`` or ``ragmeter traces embed`` store
            them outside the application.
    """

    def __init__(self, store: str, *, batch: int = 500, capacity: int = 100_000, embed_questions: bool = False):
        from ragmeter.store import RunStore

        self.store = RunStore.open(store)
        self.encoder: Any = None
        if embed_questions:
            from ragmeter.store.vectors import packaged_encoder

            self.encoder = packaged_encoder()
        self.batch = batch
        self.failed = 0
        self._queue: queue.Queue[SpanRecord | None] = queue.Queue(maxsize=capacity)
        self._wake = threading.Event()
        self._deadline: float | None = None
        self._gave_up = False
        self._abandoned = 0
        self._thread = threading.Thread(target=self._write_loop, name="ragmeter-store-sink", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def __call__(self, record: SpanRecord) -> None:
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            raise RuntimeError(
                f"the store sink's queue is full ({self._queue.maxsize} spans): the database is slower than the traffic, "
                "or has refused writes for a while"
            ) from None

    def _write_loop(self) -> None:
        running = True
        while running:
            pending: list[Any] = [self._queue.get()]
            while len(pending) < self.batch:
                try:
                    pending.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            running = None not in pending
            try:
                self._write([p for p in pending if p is not None])
            finally:
                for _ in pending:
                    self._queue.task_done()
        if self._abandoned:
            log.warning("ragmeter tracing: %d span(s) queued at close were dropped, the store could not take them", self._abandoned)

    def _write(self, spans: list[SpanRecord]) -> None:
        """Store ``spans`` (and their questions' vectors): tried again while the database cannot
        take them for now (until :meth:`close`'s deadline), dropped with a warning otherwise."""
        wait, tries = 0.1, 0
        if self._gave_up:  # closing, and the store could not take the batch before: not tried
            self.failed += len(spans)
            self._abandoned += len(spans)
            return
        while spans:
            try:
                self._store(spans)
                if tries:
                    log.warning("ragmeter tracing: the store took the %d span(s) held, after %d tries", len(spans), tries + 1)
                return
            except Exception as exc:
                cause = getattr(exc, "orig", None) or exc  # a DBAPIError's text holds the statement and every parameter
                why = f"{type(exc).__name__}: {' '.join(str(cause).split())[:300]}"
                if not _for_now(exc) or (self._deadline is not None and time.monotonic() >= self._deadline):
                    self.failed += len(spans)
                    log.warning("ragmeter tracing: %d span(s) not stored (%s)", len(spans), why)
                    self._gave_up = _for_now(exc)  # past close()'s deadline: the spans behind are not tried
                    return
                if not tries:
                    log.warning(
                        "ragmeter tracing: the store cannot take %d span(s) for now (%s); they are held and tried again", len(spans), why
                    )
            tries += 1
            if self._wake.wait(wait):  # close() cut the wait short: try now, then wait as before
                self._wake.clear()
            wait = min(wait * 2, MOST_WAIT)

    def _store(self, spans: list[SpanRecord]) -> None:
        self.store.add_spans(spans)
        if self.encoder is not None:
            from ragmeter.store.vectors import embed_questions

            embed_questions(self.store, self.encoder, trace_ids=[s.trace_id for s in spans if s.parent_id is None])

    def flush(self) -> None:
        """Wait until every span given so far is written (or counted as failed); while the
        database cannot take them, this waits too."""
        self._queue.join()

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, stop the thread and release the store (idempotent).

        Args:
            timeout: Seconds to keep trying a batch the database cannot take for now; past
                them, it and the spans queued behind it are dropped with a warning saying how
                many (the application's exit is not held up for long).
        """
        if self._thread.is_alive():
            self._deadline = time.monotonic() + timeout
            self._wake.set()
            self._queue.put(None)
            self._thread.join()
            self.store.close()
        atexit.unregister(self.close)


def _for_now(error: Exception) -> bool:
    """Whether the database may take a batch it refused with ``error`` later: a SQLite store
    locked by another writer past its busy timeout, a connection to PostgreSQL lost."""
    from sqlalchemy.exc import DBAPIError

    return isinstance(error, DBAPIError) and (error.connection_invalidated or "locked" in str(error.orig))
