"""Which scores an earlier run in the same output directory already computed, and where.

Two sources, newest last: the run's ``results.jsonl`` (everything a finished run scored)
and its ``journal.jsonl`` (every pair finished since, appended as it completed). A score is
reused only when the sample's content (its fingerprint) and the pair's settings (the
metric's parameters and, for judged metrics, the judge's identity) are unchanged and the
score did not fail; a later journal record replaces an earlier one. Nothing is loaded here:
only where each reusable score is kept, so a run of any size resumes in constant memory.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Score
from ragmeter.results.rundir import RESULTS_FILE
from ragmeter.run.journal import JOURNAL_FILE

#: One reused pair: its score, the seconds it took when computed, the usage it caused.
Reused = tuple[Score, float, Usage]


@dataclass
class Reusable:
    """Where the reusable score of each (sample, metric) pair is kept.

    Attributes:
        metric_ids: The run's metrics (columns).
        results_path: The earlier ``results.jsonl`` (``None`` when there is none).
        line_offsets: Per sample, the byte offset of its line in ``results_path`` (-1: none).
        from_results: Per pair, whether that line holds its reusable score.
        journal_path: The journal (``None`` when there is none).
        journal_offsets: Per pair, the offset of its reusable journal record (-1: none).
    """

    metric_ids: list[str]
    results_path: Path | None = None
    line_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    from_results: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))
    journal_path: Path | None = None
    journal_offsets: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    _handles: dict[Path, IO[bytes]] = field(default_factory=dict, repr=False)

    @classmethod
    def nothing(cls, n: int, metric_ids: Sequence[str]) -> Reusable:
        """No score to reuse, for ``n`` samples."""
        m = len(metric_ids)
        return cls(
            list(metric_ids),
            line_offsets=np.full(n, -1, dtype=np.int64),
            from_results=np.zeros((n, m), dtype=bool),
            journal_offsets=np.full((n, m), -1, dtype=np.int64),
        )

    def reusable(self, row: int, col: int) -> bool:
        """Whether pair (``row``, ``col``) need not be computed again."""
        return bool(self.from_results[row, col]) or self.journal_offsets[row, col] >= 0

    @property
    def count(self) -> int:
        """Pairs that need not be computed again."""
        return int((self.from_results | (self.journal_offsets >= 0)).sum())

    def load(self, row: int) -> dict[str, Reused]:
        """The reusable scores of the sample at ``row``, by metric id."""
        found: dict[str, Reused] = {}
        wanted = [j for j in range(len(self.metric_ids)) if self.reusable(row, j)]
        if not wanted:
            return found
        record = self._read(self.results_path, int(self.line_offsets[row])) if self.from_results[row].any() else None
        for j in wanted:
            metric_id = self.metric_ids[j]
            if self.journal_offsets[row, j] >= 0:
                entry = self._read(self.journal_path, int(self.journal_offsets[row, j]))
                found[metric_id] = _reused(entry["score"], entry.get("seconds", 0.0), entry.get("usage", {}))
            elif record is not None:
                scores, seconds, usage = _per_metric(record)
                found[metric_id] = _reused(scores[metric_id], seconds.get(metric_id, 0.0), usage.get(metric_id, {}))
        return found

    def _read(self, path: Path | None, offset: int) -> dict[str, Any]:
        """The JSON object on the line at ``offset`` of ``path`` (files stay open until :meth:`close`)."""
        assert path is not None
        handle = self._handles.get(path)
        if handle is None:
            handle = self._handles[path] = path.open("rb")
        handle.seek(offset)
        record = json.loads(handle.readline())
        assert isinstance(record, dict)
        return record

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()


def find_reusable(
    directory: Path,
    keys: Sequence[str],
    fingerprints: Sequence[str],
    configs: Sequence[str],
    metric_ids: Sequence[str],
    bounded: Sequence[bool] | None = None,
) -> Reusable:
    """Find the reusable scores in ``directory`` for a run of these samples and metrics. A
    record that does not hold a valid score (a value that is no finite number, or outside
    [0, 1] for a bounded metric; seconds or usage that are no numbers: a file edited by
    hand) is not reused: its pair is computed again.

    Args:
        directory: The output directory of the run.
        keys: Each sample's key, in dataset order.
        fingerprints: Each sample's content hash.
        configs: Each metric's settings hash (the pair's reuse key), in the run's order.
        metric_ids: The metrics, in the run's order.
        bounded: Per metric, whether its values lie in [0, 1] (a quality score, no unit);
            default: none is.
    """
    reuse = Reusable.nothing(len(keys), metric_ids)
    rows = {key: i for i, key in enumerate(keys)}
    columns = {metric_id: j for j, metric_id in enumerate(metric_ids)}
    results = directory / RESULTS_FILE
    if results.is_file() and not results.is_symlink():
        reuse.results_path = results
        for offset, record in _records(results):
            row = rows.get(str(record.get("key")))
            if row is None or record.get("fingerprint") != fingerprints[row]:
                continue
            if any(not isinstance(record.get(key, {}), dict) for key in ("seconds", "usage")):
                continue  # damaged: its pairs are computed again
            scored, seconds, usage = _per_metric(record)
            for metric_id, config in (record.get("configs") or {}).items():
                col = columns.get(metric_id)
                if col is None or config != configs[col]:
                    continue
                if _reusable(scored.get(metric_id), seconds.get(metric_id, 0.0), usage.get(metric_id, {}), bool(bounded and bounded[col])):
                    reuse.from_results[row, col] = True
                    reuse.line_offsets[row] = offset
    journal = directory / JOURNAL_FILE
    if journal.is_file() and not journal.is_symlink():
        reuse.journal_path = journal
        for offset, record in _records(journal):
            row, col = rows.get(str(record.get("sample"))), columns.get(str(record.get("metric")))
            if row is None or col is None or record.get("fingerprint") != fingerprints[row] or record.get("config") != configs[col]:
                continue
            valid = _reusable(record.get("score"), record.get("seconds", 0.0), record.get("usage", {}), bool(bounded and bounded[col]))
            reuse.journal_offsets[row, col] = offset if valid else -1
            if not valid:  # a later failure: compute again
                reuse.from_results[row, col] = False
    return reuse


def _per_metric(record: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A results line's scores, seconds and usage, each by metric id (empty when not an object)."""
    scores, seconds, usage = (record.get(key) for key in ("scores", "seconds", "usage"))
    return tuple(value if isinstance(value, dict) else {} for value in (scores, seconds, usage))  # type: ignore[return-value]


def _reusable(score: Any, seconds: Any, usage: Any, bounded: bool) -> bool:
    """Whether a recorded pair can be reused: a score that did not fail, and that
    :func:`_reused` reads back as valid (in [0, 1] when ``bounded``)."""
    if not isinstance(score, dict) or score.get("failed"):
        return False
    try:
        value = _reused(score, seconds, usage)[0].value
    except (TypeError, ValueError, OverflowError):
        return False
    return not bounded or value is None or 0 <= value <= 1


def _reused(score: dict[str, Any], seconds: Any, usage: dict[str, Any]) -> Reused:
    """The pair as recorded.

    Raises:
        TypeError, ValueError: The record holds no valid score, seconds or usage.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds < math.inf:
        raise ValueError(f"seconds must be a number at least 0, got {seconds!r}")
    return Score.from_dict(score), float(seconds), Usage.from_dict(usage)


def _records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each JSON object of a JSON-lines file with its byte offset; lines torn by a kill, or
    that this version cannot read, are passed over."""
    offset = 0
    with path.open("rb") as handle:
        for line in handle:
            start, offset = offset, offset + len(line)
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if isinstance(record, dict):
                yield start, record
