"""The run journal: every finished (sample, metric) score, appended as it completes.

A killed run (SIGKILL included) loses at most the line being written: each record is one
JSON line, flushed to the operating system before the next starts, and a torn last line
is ignored on reading. A re-run reuses a record only when the sample's content and the
metric's settings are unchanged and the score did not fail.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Score

JOURNAL_FILE = "journal.jsonl"


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
    """

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / JOURNAL_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = None

    def read(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Records by (sample key, metric id); a later record replaces an earlier one."""
        records: dict[tuple[str, str], dict[str, Any]] = {}
        if not self.path.exists():
            return records
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                    records[(record["sample"], record["metric"])] = record
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line torn by a kill
        return records

    def reusable(
        self, records: dict[tuple[str, str], dict[str, Any]], key: str, fingerprint: str, metric_id: str, config: str
    ) -> tuple[Score, float, Usage] | None:
        """The journalled score, seconds and usage, when still valid for this sample and metric."""
        record = records.get((key, metric_id))
        if not record or record.get("fingerprint") != fingerprint or record.get("config") != config:
            return None
        score = Score.from_dict(record["score"])
        return None if score.failed else (score, record.get("seconds", 0.0), Usage.from_dict(record.get("usage", {})))

    def append(self, record: dict[str, Any]) -> None:
        """Write one record (see :func:`make_record`) and hand it to the operating system at once."""
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
            self._file.seek(0, os.SEEK_END)
            if self._file.tell() > 0 and not self._ends_with_newline():
                self._file.write("\n")  # close a line torn by a kill
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def compact(self, records: list[dict[str, Any]]) -> None:
        """Rewrite the journal to hold exactly ``records`` (those of the finished run)."""
        self.close()
        temporary = self.path.with_name(self.path.name + ".tmp")
        with temporary.open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(temporary, self.path)
