"""Where finished spans go: a JSON-lines file, a list in memory, or any callable.

A sink that fails never breaks the application: the span is dropped, counted, and a warning is
logged once per sink (feedback is never lost silently).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from ragmeter.data.files import json_line
from ragmeter.observe.record import SpanRecord

log = logging.getLogger("ragmeter.observe")


class JsonlSink:
    """Appends each span as one JSON line to a file.

    Each line is written with a single ``write`` on a file opened for appending, so lines from
    several threads or processes never interleave and a kill leaves at most the last line
    short (the reader names it). A link at the path is not followed.

    Args:
        path: The file; created (with its directory) when missing.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        self._descriptor = os.open(self.path, flags, 0o644)
        self._lock = threading.Lock()

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
