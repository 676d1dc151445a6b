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
from pathlib import Path
from typing import Any

from ragmeter.data.files import json_line
from ragmeter.observe.record import SpanRecord

log = logging.getLogger("ragmeter.observe")


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
    never waits for the database. A full queue, or a batch the database refuses, drops spans
    with a warning (never an exception in the application). Spans still queued at exit, or at
    :meth:`close`, are written first.

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
        self._thread = threading.Thread(target=self._write_loop, name="ragmeter-store-sink", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def __call__(self, record: SpanRecord) -> None:
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            raise RuntimeError("the store sink's queue is full: the database is slower than the traffic") from None

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
            spans = [p for p in pending if p is not None]
            try:
                if spans:
                    self.store.add_spans(spans)
                if spans and self.encoder is not None:
                    from ragmeter.store.vectors import embed_questions

                    embed_questions(self.store, self.encoder, trace_ids=[s.trace_id for s in spans if s.parent_id is None])
            except Exception as exc:
                self.failed += len(spans)
                log.warning("ragmeter tracing: %d span(s) not stored (%s: %s)", len(spans), type(exc).__name__, exc)
            finally:
                for _ in pending:
                    self._queue.task_done()

    def flush(self) -> None:
        """Wait until every span given so far is written (or counted as failed)."""
        self._queue.join()

    def close(self) -> None:
        """Write what is queued, stop the thread and release the store (idempotent)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
            self.store.close()
        atexit.unregister(self.close)
