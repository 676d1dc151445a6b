"""The dashboard's query-drift and knowledge-base-change panels.

Query drift compares the questions of the stored requests in a recent window with those of the
window before it (:func:`ragmeter.monitor.query_windows.stored_query_drift`, the test of
``ragmeter drift queries --store``), on the question vectors kept in the store; questions without
one are encoded on demand and remembered (:class:`CachedEncoder`), and the page says how many.
The knowledge-base panel shows the JSON report that ``ragmeter drift kb --json PATH`` last wrote.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragmeter.data.files import json_value
from ragmeter.monitor.kb import KnowledgeBaseChange
from ragmeter.monitor.query_windows import StoredQueryDrift, stored_query_drift
from ragmeter.store import RunStore

if TYPE_CHECKING:
    from ragmeter.judges.embeddings import Encoder

#: What the query-drift panel shows.
QueryDriftPanel = StoredQueryDrift


class CachedEncoder:
    """An encoder that remembers the vectors of the texts it encoded (least recently used
    forgotten first), so reloading the query-drift panel of a store without stored vectors
    encodes only the new questions.

    Args:
        encoder: The encoder (its ``model_name`` names the stored vectors to read).
        size: Most texts remembered.
    """

    def __init__(self, encoder: Encoder, size: int = 20_000):
        self.encoder = encoder
        self.model_name = encoder.model_name
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        """The vectors of ``texts``; only those not remembered are encoded."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        fresh = dict(zip(missing, self.encoder.encode(missing), strict=True)) if missing else {}
        with self._lock:
            self._vectors.update(fresh)
            found = [fresh[t] if t in fresh else self._vectors[t] for t in texts]
            for text in texts:
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return np.stack(found)


def query_drift_panel(store: RunStore, encoder: Encoder, days: int, limit: int, permutations: int = 500) -> QueryDriftPanel:
    """Query drift of the stored requests: the recent ``days`` (ending at the newest request)
    against the ``days`` before them.

    Args:
        store: The run store whose traces are read (requests: spans without a parent).
        encoder: Whose stored vectors are read; it encodes the questions that have none.
        days: Length of each window in days.
        limit: Most questions taken from each window (the newest), which bounds the page's time.
        permutations: Random relabellings behind the p-value.
    """
    return stored_query_drift(store, encoder, days, limit, permutations=permutations)


@dataclass
class KnowledgeBaseReport:
    """The knowledge-base panel: the last report of ``ragmeter drift kb --json``.

    Attributes:
        path: The report's file.
        written_at: When the file was last written (UTC, ISO 8601); ``None`` when it is missing.
        change: What the report says changed; ``None`` when it is missing or unreadable.
        problem: Why there is no change to show (missing, unreadable, not such a report).
    """

    path: str
    written_at: str | None
    change: KnowledgeBaseChange | None
    problem: str | None


def read_kb_report(path: Path) -> KnowledgeBaseReport:
    """The knowledge-base change report at ``path`` (written by ``ragmeter drift kb --json``).
    Never raises: what is wrong with the file is told in ``problem``."""
    try:
        written = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).isoformat(timespec="seconds")
        data = json_value(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return KnowledgeBaseReport(str(path), None, None, "no report yet: run `ragmeter drift kb FOLDER --baseline SNAPSHOT --json` here")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return KnowledgeBaseReport(str(path), None, None, f"cannot read it: {exc}")
    lists = [data.get(k) if isinstance(data, dict) else None for k in ("added", "removed", "edited")]
    unchanged = data.get("unchanged") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("kind") != "knowledge_base_change"
        or not all(isinstance(v, list) and all(isinstance(p, str) for p in v) for v in lists)
        or not isinstance(unchanged, int)
    ):
        return KnowledgeBaseReport(str(path), written, None, "not a report of `ragmeter drift kb --json`")
    added, removed, edited = lists
    return KnowledgeBaseReport(str(path), written, KnowledgeBaseChange(added, removed, edited, unchanged), None)  # type: ignore[arg-type]
