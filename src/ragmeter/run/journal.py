"""The run journal: every finished (sample, metric) score, appended as it completes.

A killed run (SIGKILL included) loses at most the line being written: each record is one
JSON line, handed to the operating system before the next starts, and a torn last line is
ignored on reading (and closed with a line break before anything is appended after it). A
re-run reuses a record only when the sample's content and the metric's settings are
unchanged and the score did not fail. The journal is opened without following links, so a
link planted at its name is refused rather than written through.

A distributed run (:mod:`ragmeter.run.ray_executor`) has each shard journal its own pairs in
``journal.shard-<n>.jsonl``, so that a killed worker's retry resumes its shard; the shard
journals are folded into the run's journal (:func:`fold_shards`) when the run ends and
before a run reads the journal, so a killed driver loses nothing either.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import IO, Any

from ragmeter.data.files import json_line, json_value, read_json_lines
from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Score

JOURNAL_FILE = "journal.jsonl"
SHARD_PREFIX = "journal.shard-"


def shard_name(index: int) -> str:
    """The file name of shard ``index``'s journal."""
    return f"{SHARD_PREFIX}{index:05d}.jsonl"


def shard_paths(directory: Path) -> list[Path]:
    """The shard journals in ``directory`` (links excluded: never read through), in order."""
    return sorted(p for p in directory.glob(f"{SHARD_PREFIX}*.jsonl") if not p.is_symlink())


def fold_shards(directory: Path) -> int:
    """Append every record of the shard journals in ``directory`` to its journal, then remove
    the shard journals; returns the records moved. A kill in between only leaves records
    twice, and a later record replaces an identical earlier one."""
    shards = shard_paths(directory)
    if not shards:
        return 0
    journal, moved = Journal(directory), 0
    try:
        for path in shards:
            for _, line in read_json_lines(path):
                try:
                    record = json_value(line)
                except ValueError:
                    continue  # a line torn by a kill
                if isinstance(record, dict):
                    journal.append(record)
                    moved += 1
    finally:
        journal.close()
    for path in shards:
        path.unlink()
    return moved


def make_record(key: str, fingerprint: str, metric_id: str, config: str, score: Score, seconds: float, usage: Usage) -> dict[str, Any]:
    """A journal record: which sample (key and content hash), which metric (id and settings
    hash), the score, the seconds it took and the model usage it caused."""
    return {
        "sample": key,
        "fingerprint": fingerprint,
        "metric": metric_id,
        "config": config,
        "score": score.to_dict(),
        "seconds": round(seconds, 6),
        "usage": usage.to_dict(),
    }


class Journal:
    """Append-only record of finished scores in a run directory.

    Args:
        directory: The run's output directory (created if needed).
        name: The file's name: the run's journal, or a shard's (:func:`shard_name`).
    """

    def __init__(self, directory: str | Path, name: str = JOURNAL_FILE):
        self.path = Path(directory) / name
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = None

    def read(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Records by (sample key, metric id); a later record replaces an earlier one."""
        records: dict[tuple[str, str], dict[str, Any]] = {}
        if not self.path.exists():
            return records
        _refuse_link(self.path)
        for _, line in read_json_lines(self.path):
            try:
                record = json_value(line)
                records[(record["sample"], record["metric"])] = record
            except (ValueError, KeyError, TypeError):
                continue  # a line torn by a kill, or not a record
        return records

    def reusable(
        self, records: dict[tuple[str, str], dict[str, Any]], key: str, fingerprint: str, metric_id: str, config: str
    ) -> tuple[Score, float, Usage] | None:
        """The journalled score, seconds and usage, when still valid for this sample and metric."""
        record = records.get((key, metric_id))
        if not record or record.get("fingerprint") != fingerprint or record.get("config") != config:
            return None
        try:
            score = Score.from_dict(record["score"])
            usage = Usage.from_dict(record.get("usage") or {})
        except (KeyError, TypeError, ValueError):
            return None  # a record this version cannot read is recomputed
        return None if score.failed else (score, record.get("seconds", 0.0), usage)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record (see :func:`make_record`) and hand it to the operating system at once."""
        if self._file is None:
            self._file = _open_for_append(self.path)
        self._file.write(json_line(record))
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _refuse_link(path: Path) -> None:
    if path.is_symlink():
        raise OSError(errno.ELOOP, f"{path} is a symbolic link; ragmeter does not write through links", str(path))


def _open_for_append(path: Path) -> IO[str]:
    """The journal opened for appending, never through a link; a last line torn by a kill is
    closed with a line break first, so the next record starts on a line of its own."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            _refuse_link(path)
        raise
    size = os.fstat(descriptor).st_size
    if size > 0 and os.pread(descriptor, 1, size - 1) != b"\n":
        os.write(descriptor, b"\n")
    return os.fdopen(descriptor, "a", encoding="utf-8", newline="\n")
