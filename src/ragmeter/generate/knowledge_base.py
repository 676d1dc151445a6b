"""A knowledge base as the generator sees it: its documents read, cleaned of boilerplate,
chunked, embedded and linked into a :class:`~ragmeter.generate.graph.KnowledgeGraph`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.issues import InputIssue
from ragmeter.generate.boilerplate import drop_boilerplate
from ragmeter.generate.chunking import chunk_document
from ragmeter.generate.documents import ingest
from ragmeter.generate.graph import KnowledgeGraph, build_graph
from ragmeter.judges.embeddings import BatchingEmbedder
from ragmeter.run.executor import Progress

#: Chunks embedded between two advances of the progress bar.
_EMBED_SLICE = 32


@dataclass
class KnowledgeBase:
    """The documents read, as a knowledge graph of embedded chunks.

    Attributes:
        documents: How many documents were read.
        issues: Files and lines skipped, with why.
        graph: The chunks and their links.
        vectors: The chunks' embeddings, one row per chunk.
        boilerplate: What was dropped as boilerplate before chunking
            (:meth:`~ragmeter.generate.boilerplate.Boilerplate.to_dict`).
    """

    documents: int
    issues: list[InputIssue]
    graph: KnowledgeGraph
    vectors: np.ndarray
    boilerplate: dict[str, Any] = field(default_factory=dict)


async def build_knowledge_base(
    paths: Iterable[str | Path], embedder: BatchingEmbedder, chunk_size: int, chunk_overlap: int, progress: bool = False
) -> KnowledgeBase:
    """Read the documents at ``paths``, drop their boilerplate
    (:func:`~ragmeter.generate.boilerplate.drop_boilerplate`), then chunk, embed and link them.

    Args:
        paths: Files and folders of the knowledge base.
        embedder: The sentence embedder (the packaged multilingual USE model).
        chunk_size: Most characters per chunk.
        chunk_overlap: Characters repeated between consecutive pieces of a section.
        progress: Show a progress bar while the chunks are embedded (minutes for a large
            knowledge base, before the first question).
    """
    read = ingest(paths)
    documents, dropped = drop_boilerplate(read.documents)
    chunks = [chunk for document in documents for chunk in chunk_document(document, chunk_size, chunk_overlap)]
    vectors = await _embed_chunks([c.text for c in chunks], embedder, progress)
    return KnowledgeBase(len(read.documents), read.issues, build_graph(chunks, vectors), vectors, dropped.to_dict())


async def _embed_chunks(texts: Sequence[str], embedder: BatchingEmbedder, progress: bool) -> np.ndarray:
    """The embeddings of ``texts``, asked for a slice at a time so that a progress bar can
    follow them (each text is encoded alone, so the slices change no vector)."""
    if not texts:
        return np.zeros((0, 512), dtype=np.float32)
    parts = []
    with Progress(progress, len(texts), "embedding chunks") as advance:
        for start in range(0, len(texts), _EMBED_SLICE):
            parts.append(await embedder.embed(texts[start : start + _EMBED_SLICE]))
            advance(len(parts[-1]))
    return np.vstack(parts)
