"""A knowledge graph of chunks: which chunks really relate, for multi-hop and comparison questions.

Two chunks are linked when their embeddings are close (cosine of the packaged multilingual
USE model, at least :data:`SIMILAR`) or when they share key phrases (at least
:data:`SHARED_PHRASES`): words that are frequent in one chunk and rare in the knowledge
base, by TF-IDF. Chinese text is segmented into words with rjieba
(:func:`ragmeter.data.text.tokenize`), so the same rule holds in both languages. A link's
strength is the cosine plus a tenth per shared phrase; a chunk is never linked to a chunk
of another language, nor to its neighbour in the same document that overlaps it, nor to a
copy of itself (cosine at least :data:`SAME_TEXT`: the ClapNQ passages hold the same passage
under several ids, and being the closest pairs such copies were picked first, giving
comparison questions between two identical contexts).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragmeter.data.text import tokenize
from ragmeter.generate.chunking import Chunk

#: Cosine of two chunks' embeddings at or above which they are linked.
SIMILAR = 0.5
#: Cosine at or above which two chunks are copies of one text, never linked.
SAME_TEXT = 0.98
#: Shared key phrases at or above which two chunks are linked.
SHARED_PHRASES = 2
#: Key phrases kept per chunk.
PHRASES_PER_CHUNK = 12
#: Links kept per chunk, the strongest.
LINKS_PER_CHUNK = 5
_MIN_WORD_CHARS = {"en": 3, "zh": 2}


@dataclass(frozen=True)
class Link:
    """Two related chunks (by index in the graph's chunk list, ``a < b``).

    Attributes:
        a: The first chunk's index.
        b: The second chunk's index.
        similarity: Cosine of their embeddings.
        shared: The key phrases both have.
    """

    a: int
    b: int
    similarity: float
    shared: tuple[str, ...]

    @property
    def strength(self) -> float:
        return self.similarity + 0.1 * len(self.shared)


@dataclass(frozen=True)
class KnowledgeGraph:
    """Chunks, their key phrases and the links between them.

    Attributes:
        chunks: The chunks, in knowledge-base order.
        phrases: Each chunk's key phrases, same order.
        links: The links, strongest first.
    """

    chunks: tuple[Chunk, ...]
    phrases: tuple[tuple[str, ...], ...]
    links: tuple[Link, ...]

    def describe(self) -> dict[str, object]:
        """Counts for the run's summary."""
        linked = {i for link in self.links for i in (link.a, link.b)}
        across = sum(1 for link in self.links if self.chunks[link.a].document != self.chunks[link.b].document)
        return {"chunks": len(self.chunks), "links": len(self.links), "linked_chunks": len(linked), "links_across_documents": across}


def key_phrases(chunks: Sequence[Chunk], per_chunk: int = PHRASES_PER_CHUNK) -> list[tuple[str, ...]]:
    """The ``per_chunk`` words of each chunk with the highest TF-IDF among the chunks of its
    language; words in more than half of those chunks (function words), words shorter than 3
    letters (2 Chinese characters) and numbers alone are left out.
    """
    counts = [Counter(w for w in tokenize(chunk.text) if _is_phrase(w, chunk.lang)) for chunk in chunks]
    frequency: dict[str, Counter[str]] = {}
    sizes: Counter[str] = Counter(chunk.lang for chunk in chunks)
    for chunk, counted in zip(chunks, counts, strict=True):
        frequency.setdefault(chunk.lang, Counter()).update(counted.keys())
    phrases = []
    for chunk, counted in zip(chunks, counts, strict=True):
        df, total = frequency[chunk.lang], sizes[chunk.lang]
        common = max(2, total // 2)
        scored = sorted(counted, key=lambda w: (-counted[w] * math.log((1 + total) / (1 + df[w])), w))
        phrases.append(tuple(w for w in scored if df[w] <= common or total < 4)[:per_chunk])
    return phrases


def _is_phrase(word: str, lang: str) -> bool:
    return len(word) >= _MIN_WORD_CHARS.get(lang, 3) and not word.replace(".", "").isdigit()


def build_graph(chunks: Sequence[Chunk], vectors: np.ndarray, links_per_chunk: int = LINKS_PER_CHUNK) -> KnowledgeGraph:
    """Link related chunks.

    Args:
        chunks: The knowledge base's chunks.
        vectors: Their L2-normalised embeddings, one row per chunk.
        links_per_chunk: Most links kept per chunk (its strongest).
    """
    phrases = key_phrases(chunks)
    similarity = vectors @ vectors.T if len(chunks) else np.zeros((0, 0))
    sets = [set(p) for p in phrases]
    candidates: list[Link] = []
    for a in range(len(chunks)):
        for b in range(a + 1, len(chunks)):
            if chunks[a].lang != chunks[b].lang or _neighbours(chunks[a], chunks[b]):
                continue
            cosine = float(similarity[a, b])
            if cosine >= SAME_TEXT or chunks[a].text == chunks[b].text:
                continue
            shared = tuple(sorted(sets[a] & sets[b]))
            if cosine >= SIMILAR or len(shared) >= SHARED_PHRASES:
                candidates.append(Link(a, b, round(cosine, 6), shared))
    candidates.sort(key=lambda link: (-link.strength, link.a, link.b))
    kept: list[Link] = []
    degree: Counter[int] = Counter()
    for link in candidates:
        if degree[link.a] < links_per_chunk or degree[link.b] < links_per_chunk:
            kept.append(link)
            degree.update((link.a, link.b))
    return KnowledgeGraph(tuple(chunks), tuple(phrases), tuple(kept))


def _neighbours(a: Chunk, b: Chunk) -> bool:
    """Consecutive pieces of one section (they overlap, so a question joining them is not multi-hop)."""
    if a.document != b.document or a.headings != b.headings:
        return False
    return abs(int(a.id.rsplit("#", 1)[1]) - int(b.id.rsplit("#", 1)[1])) == 1
