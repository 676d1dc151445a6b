"""Question vectors: each traced request's question, embedded once and kept in the store, so
query drift (``ragmeter drift queries --store``, the dashboard's query-drift page) reads vectors
instead of loading the encoder and encoding every question of its windows again.

Vectors are written by the processes that already handle traces away from the application:
``ragmeter traces import``, ``ragmeter monitor`` (every trace it decides about, sampled or not)
and ``ragmeter traces embed`` (a backfill of stores written before vectors were kept, or fed by
the application's store sink without a monitor). The application's own tracing never loads the
encoder unless asked (``configure(store=..., embed_questions=True)``).

A vector is kept per request (root span with a question) and encoder (``model``), as
little-endian float32 bytes: 2 KB per question for the packaged 512-d encoder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import and_, exists, func, insert, select
from sqlalchemy.exc import IntegrityError

from ragmeter.store.database import StoreError
from ragmeter.store.schema import question_vectors, spans

if TYPE_CHECKING:
    from ragmeter.judges.embeddings import Encoder, USEEncoder
    from ragmeter.store.store import RunStore

#: How vectors are stored: little-endian float32.
DTYPE = np.dtype("<f4")
#: Questions encoded and written per transaction.
CHUNK = 500
#: Trace ids looked up per statement.
LOOKUP = 1000

#: A request: a root span with a question.
ASKED = and_(spans.c.parent_id.is_(None), spans.c.question.is_not(None))


def packaged_encoder() -> USEEncoder:
    """The packaged encoder as the vector writers and query drift use it: one BLAS thread.

    They run beside the application (the monitor, ``serve``, an import); on the shared 2-core
    machine under load, two BLAS threads spun against each other and the other processes: 144 ms
    a question, against 8 ms with one thread. The model loads on the first question.
    """
    from ragmeter.judges.embeddings import USEEncoder

    return USEEncoder(threads=1)


@dataclass(frozen=True)
class StoredQuestion:
    """A stored request's question.

    Attributes:
        trace_id: Its trace.
        span_id: Its root span.
        question: The question's text.
    """

    trace_id: str
    span_id: str
    question: str


def pack(vector: np.ndarray) -> bytes:
    """A vector as the bytes the store keeps (little-endian float32)."""
    return np.ascontiguousarray(vector, dtype=DTYPE).tobytes()


def unpack(blob: bytes, dimensions: int) -> np.ndarray:
    """A stored vector back as a float32 array.

    Raises:
        StoreError: The bytes do not hold ``dimensions`` float32 values.
    """
    if len(blob) != dimensions * DTYPE.itemsize:
        raise StoreError(f"a stored question vector has {len(blob)} bytes, not the {dimensions * DTYPE.itemsize} of {dimensions} float32")
    return np.frombuffer(blob, dtype=DTYPE).astype(np.float32)


def unembedded_questions(store: RunStore, model: str, *, trace_ids: Iterable[str] | None = None) -> list[StoredQuestion]:
    """Requests (oldest first) whose question has no vector by the encoder ``model``.

    Args:
        store: The run store.
        model: The encoder's name (``USEEncoder.model_name``).
        trace_ids: Only these traces (default: all).
    """
    has_vector = exists().where(
        question_vectors.c.trace_id == spans.c.trace_id,
        question_vectors.c.span_id == spans.c.span_id,
        question_vectors.c.model == model,
    )
    query = select(spans.c.trace_id, spans.c.span_id, spans.c.question).where(ASKED, ~has_vector).order_by(spans.c.started_at)
    found: list[StoredQuestion] = []
    with store.engine.connect() as connection:
        if trace_ids is None:
            return [StoredQuestion(*row) for row in connection.execute(query)]
        wanted = list(dict.fromkeys(trace_ids))
        for start in range(0, len(wanted), LOOKUP):
            found += [StoredQuestion(*row) for row in connection.execute(query.where(spans.c.trace_id.in_(wanted[start : start + LOOKUP])))]
    return found


def embed_questions(
    store: RunStore,
    encoder: Encoder,
    *,
    trace_ids: Iterable[str] | None = None,
    chunk: int = CHUNK,
    on_chunk: Callable[[int, int], None] | None = None,
) -> int:
    """Encode and store the questions of the requests that have no vector by ``encoder`` yet;
    return how many were stored.

    Each chunk is encoded (a question asked several times is encoded once) and written in one
    transaction; vectors another process stored meanwhile are kept, so several writers (two
    monitors, an import and a backfill) never conflict and a killed run resumes where it stopped.

    Args:
        store: The run store.
        encoder: The encoder (its ``model_name`` keys the vectors).
        trace_ids: Only these traces (default: every request without a vector).
        chunk: Questions per transaction.
        on_chunk: Called after each chunk with the questions stored so far and the total to store.

    Raises:
        StoreError: The encoder returned a wrong number of vectors.
    """
    missing = unembedded_questions(store, encoder.model_name, trace_ids=trace_ids)
    stored = 0
    for start in range(0, len(missing), chunk):
        part = missing[start : start + chunk]
        texts = list(dict.fromkeys(q.question for q in part))
        vectors = np.asarray(encoder.encode(texts))
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise StoreError(f"the encoder {encoder.model_name} returned {vectors.shape} vectors for {len(texts)} questions")
        by_text = dict(zip(texts, vectors, strict=True))
        rows = [
            {
                "trace_id": q.trace_id,
                "span_id": q.span_id,
                "model": encoder.model_name,
                "dimensions": int(vectors.shape[1]),
                "vector": pack(by_text[q.question]),
            }
            for q in part
        ]
        stored += _insert_new(store, rows)
        if on_chunk is not None:
            on_chunk(stored, len(missing))
    return stored


def _insert_new(store: RunStore, rows: list[dict[str, Any]]) -> int:
    """Insert the rows whose vector is not stored yet, in one transaction; return how many.
    A concurrent writer that stored some of them first is tolerated (checked again once)."""
    try:
        return _insert_absent(store, rows)
    except IntegrityError:
        return _insert_absent(store, rows)


def _insert_absent(store: RunStore, rows: list[dict[str, Any]]) -> int:
    with store.engine.begin() as connection:
        query = select(question_vectors.c.trace_id, question_vectors.c.span_id).where(
            question_vectors.c.model == rows[0]["model"], question_vectors.c.trace_id.in_(list({r["trace_id"] for r in rows}))
        )
        present = {tuple(r) for r in connection.execute(query)}
        fresh = [r for r in rows if (r["trace_id"], r["span_id"]) not in present]
        if fresh:
            connection.execute(insert(question_vectors), fresh)
        return len(fresh)


def stored_vectors(store: RunStore, model: str, questions: Sequence[StoredQuestion]) -> list[np.ndarray | None]:
    """The stored vectors (by the encoder ``model``) of these requests, in their order; ``None``
    for a request that has none."""
    found: dict[tuple[str, str], np.ndarray] = {}
    columns = question_vectors.c
    trace_ids = list(dict.fromkeys(q.trace_id for q in questions))
    with store.engine.connect() as connection:
        for start in range(0, len(trace_ids), LOOKUP):
            query = select(columns.trace_id, columns.span_id, columns.dimensions, columns.vector).where(
                columns.model == model, columns.trace_id.in_(trace_ids[start : start + LOOKUP])
            )
            for trace_id, span_id, dimensions, blob in connection.execute(query):
                found[(trace_id, span_id)] = unpack(bytes(blob), dimensions)
    return [found.get((q.trace_id, q.span_id)) for q in questions]


def questions_between(store: RunStore, start: str, end: str, limit: int) -> list[StoredQuestion]:
    """The newest ``limit`` requests that started after ``start`` and up to ``end`` (ISO 8601)."""
    query = (
        select(spans.c.trace_id, spans.c.span_id, spans.c.question)
        .where(ASKED, spans.c.started_at > start, spans.c.started_at <= end)
        .order_by(spans.c.started_at.desc(), spans.c.trace_id)
        .limit(limit)
    )
    with store.engine.connect() as connection:
        return [StoredQuestion(*row) for row in connection.execute(query)]


def newest_question_time(store: RunStore) -> str | None:
    """When the newest stored request with a question started (``None``: there is none)."""
    with store.engine.connect() as connection:
        return connection.scalar(select(func.max(spans.c.started_at)).where(ASKED))


def vector_coverage(store: RunStore, model: str) -> tuple[int, int]:
    """How many stored requests have a question, and how many of those have a vector by ``model``."""
    with store.engine.connect() as connection:
        asked = int(connection.scalar(select(func.count()).select_from(spans).where(ASKED)) or 0)
        embedded = int(connection.scalar(select(func.count()).select_from(question_vectors).where(question_vectors.c.model == model)) or 0)
    return asked, embedded
