"""Query drift of the stored requests: the questions of the recent days (ending at the newest
request) against those of the days before, tested with :func:`ragmeter.monitor.drift.vector_drift`.

The questions' vectors are read from the store (:mod:`ragmeter.store.vectors`); only questions
without a stored vector are encoded here, and how many were is reported, so a slow first look
at an older store says why and what stores them (``ragmeter traces embed``). Nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import numpy as np

from ragmeter.monitor.drift import ALPHA, QueryDrift, vector_drift
from ragmeter.store.vectors import StoredQuestion, newest_question_time, questions_between, stored_vectors

if TYPE_CHECKING:
    from ragmeter.judges.embeddings import Encoder
    from ragmeter.store import RunStore


@dataclass
class StoredQueryDrift:
    """Query drift of the stored requests.

    Attributes:
        days: Length of each window in days.
        limit: Most questions taken from each window (the newest).
        newest: Start time of the newest stored request with a question (``None``: there is none).
        current_from: The recent window starts after this time; it ends at ``newest``.
        reference_from: The reference window starts after this time; it ends at ``current_from``.
        reference: The reference window's questions.
        current: The recent window's questions.
        result: The test's outcome; ``None`` when a window has fewer than 10 questions.
        encoded_now: Questions that had no stored vector and were encoded for this test.
        model: The encoder whose vectors were read.
    """

    days: int
    limit: int
    newest: str | None
    current_from: str
    reference_from: str
    reference: list[str]
    current: list[str]
    result: QueryDrift | None
    encoded_now: int = 0
    model: str = ""


def before(moment: str, days: int) -> str:
    """``moment`` (ISO 8601) less ``days`` days, in the store's format (UTC, milliseconds)."""
    parsed = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return (parsed - timedelta(days=days)).astimezone(timezone.utc).isoformat(timespec="milliseconds")


def stored_query_drift(
    store: RunStore, encoder: Encoder, days: int, limit: int, *, alpha: float = ALPHA, permutations: int = 500
) -> StoredQueryDrift:
    """Query drift of the stored requests: the recent ``days`` (ending at the newest request)
    against the ``days`` before them.

    Args:
        store: The run store whose requests (root spans with a question) are read.
        encoder: The encoder whose stored vectors are read; it encodes only the questions that
            have none (its model loads only then).
        days: Length of each window in days.
        limit: Most questions taken from each window (the newest), which bounds the time taken.
        alpha: Significance level of the alarm.
        permutations: Random relabellings behind the p-value.
    """
    newest = newest_question_time(store)
    if newest is None:
        return StoredQueryDrift(days, limit, None, "", "", [], [], None, model=encoder.model_name)
    current_from, reference_from = before(newest, days), before(newest, 2 * days)
    current = questions_between(store, current_from, newest, limit)
    reference = questions_between(store, reference_from, current_from, limit)
    found = StoredQueryDrift(
        days, limit, newest, current_from, reference_from, [q.question for q in reference], [q.question for q in current], None
    )
    found.model = encoder.model_name
    if len(reference) >= 10 and len(current) >= 10:
        vectors, found.encoded_now = _vectors(store, encoder, [*reference, *current])
        found.result = vector_drift(
            vectors[: len(reference)], vectors[len(reference) :], found.current, alpha=alpha, permutations=permutations
        )
    return found


def _vectors(store: RunStore, encoder: Encoder, questions: list[StoredQuestion]) -> tuple[np.ndarray, int]:
    """The vectors of ``questions``: stored ones read, the others encoded; and how many were encoded."""
    vectors = stored_vectors(store, encoder.model_name, questions)
    missing = [i for i, v in enumerate(vectors) if v is None]
    if missing:
        fresh = encoder.encode([questions[i].question for i in missing])
        for i, vector in zip(missing, fresh, strict=True):
            vectors[i] = np.asarray(vector, dtype=np.float32)
    return np.stack([v for v in vectors if v is not None]), len(missing)
