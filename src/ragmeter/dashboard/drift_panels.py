"""The dashboard's query-drift and knowledge-base-change panels.

Query drift compares the questions of the stored requests in a recent window with those of the
window before it, with :func:`ragmeter.monitor.drift.query_drift` (the test of
``ragmeter drift queries``). The knowledge-base panel shows the JSON report that
``ragmeter drift kb --json PATH`` last wrote.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
from sqlalchemy import and_, func, select

from ragmeter.monitor.drift import QueryDrift, query_drift
from ragmeter.monitor.kb import KnowledgeBaseChange
from ragmeter.store import RunStore
from ragmeter.store.schema import spans

Encoder = Callable[[list[str]], np.ndarray]


class CachedEncoder:
    """An encoder that remembers the vectors of the texts it encoded (least recently used
    forgotten first), so reloading the query-drift panel encodes only the new questions.

    Args:
        encode: Turns texts into L2-normalised vectors.
        size: Most texts remembered.
    """

    def __init__(self, encode: Encoder, size: int = 20_000):
        self.encode = encode
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        fresh = dict(zip(missing, self.encode(missing), strict=True)) if missing else {}
        with self._lock:
            self._vectors.update(fresh)
            found = [fresh[t] if t in fresh else self._vectors[t] for t in texts]
            for text in texts:
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return np.stack(found)


@dataclass
class QueryDriftPanel:
    """What the query-drift panel shows.

    Attributes:
        days: Length of each window in days.
        limit: Most questions taken from each window (the newest).
        newest: Start time of the newest stored request with a question (``None``: there is none).
        current_from: The recent window starts after this time; it ends at ``newest``.
        reference_from: The reference window starts after this time; it ends at ``current_from``.
        reference: The reference window's questions.
        current: The recent window's questions.
        result: The test's outcome; ``None`` when a window has fewer than 10 questions.
    """

    days: int
    limit: int
    newest: str | None
    current_from: str
    reference_from: str
    reference: list[str]
    current: list[str]
    result: QueryDrift | None


def _before(moment: str, days: int) -> str:
    """``moment`` (ISO 8601) less ``days`` days, in the store's format (UTC, milliseconds)."""
    parsed = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return (parsed - timedelta(days=days)).astimezone(timezone.utc).isoformat(timespec="milliseconds")


def query_drift_panel(store: RunStore, encode: Encoder, days: int, limit: int, permutations: int = 500) -> QueryDriftPanel:
    """Query drift of the stored requests: the recent ``days`` (ending at the newest request)
    against the ``days`` before them.

    Args:
        store: The run store whose traces are read (requests: spans without a parent).
        encode: Turns questions into L2-normalised vectors.
        days: Length of each window in days.
        limit: Most questions taken from each window (the newest), which bounds the page's time.
        permutations: Random relabellings behind the p-value.
    """
    asked = and_(spans.c.parent_id.is_(None), spans.c.question.is_not(None))
    with store.engine.connect() as connection:
        newest = connection.scalar(select(func.max(spans.c.started_at)).where(asked))
        if newest is None:
            return QueryDriftPanel(days, limit, None, "", "", [], [], None)
        current_from, reference_from = _before(newest, days), _before(newest, 2 * days)

        def window(start: str, end: str) -> list[str]:
            query = select(spans.c.question).where(asked, spans.c.started_at > start, spans.c.started_at <= end)
            return list(connection.scalars(query.order_by(spans.c.started_at.desc()).limit(limit)))

        current, reference = window(current_from, newest), window(reference_from, current_from)
    enough = len(reference) >= 10 and len(current) >= 10
    result = query_drift(reference, current, encode, permutations=permutations) if enough else None
    return QueryDriftPanel(days, limit, newest, current_from, reference_from, reference, current, result)


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
        data = json.loads(path.read_text(encoding="utf-8"))
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
