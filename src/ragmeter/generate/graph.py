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
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

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
#: Pairs scored at once (rows times chunks): about 100 MB of arrays.
_CELLS_PER_BLOCK = 2_000_000


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
    """Link related chunks: every chunk keeps its ``links_per_chunk`` strongest candidate links
    (ties go to the chunk that comes first), and a link kept by either of its chunks is kept.

    The pairs are scored a block of rows at a time with matrix products, so the memory grows
    with the number of chunks, not of pairs: a list of every candidate pair made a 5 MB
    document take 6.7 GB (``benchmarks/generate_scale.py``).

    Args:
        chunks: The knowledge base's chunks.
        vectors: Their L2-normalised embeddings, one row per chunk.
        links_per_chunk: Most links kept per chunk (its strongest).
    """
    phrases = key_phrases(chunks)
    sets = [set(p) for p in phrases]
    cosines: dict[tuple[int, int], float] = {}
    for a, strongest in _strongest_candidates(chunks, vectors, phrases, links_per_chunk):
        for b, cosine in strongest:
            cosines.setdefault((min(a, b), max(a, b)), cosine)
    links = [Link(a, b, round(cosine, 6), tuple(sorted(sets[a] & sets[b]))) for (a, b), cosine in cosines.items()]
    links.sort(key=lambda link: (-link.strength, link.a, link.b))
    return KnowledgeGraph(tuple(chunks), tuple(phrases), tuple(links))


def _strongest_candidates(
    chunks: Sequence[Chunk], vectors: np.ndarray, phrases: Sequence[tuple[str, ...]], per_chunk: int
) -> Iterator[tuple[int, list[tuple[int, float]]]]:
    """For each chunk, the index and cosine of its ``per_chunk`` strongest candidates: chunks of its
    language, not its overlapping neighbour nor a copy of it, with a cosine of at least
    :data:`SIMILAR` or at least :data:`SHARED_PHRASES` key phrases in common; by strength
    (:attr:`Link.strength`), then index.
    """
    count = len(chunks)
    if count == 0 or per_chunk <= 0:
        return
    langs = _codes([c.lang for c in chunks])
    sections = _codes([(c.document, c.headings) for c in chunks])
    texts = _codes([c.text for c in chunks])
    numbers = np.array([_number(c.id) for c in chunks])
    vocabulary: dict[str, int] = {}
    rows = [[vocabulary.setdefault(p, len(vocabulary)) for p in chunk_phrases] for chunk_phrases in phrases]
    indptr = np.cumsum([0] + [len(r) for r in rows])
    members = sparse.csr_matrix(
        (np.ones(int(indptr[-1]), dtype=np.float32), [i for r in rows for i in r], indptr), shape=(count, max(1, len(vocabulary)))
    )
    block = max(1, _CELLS_PER_BLOCK // count)
    for start in range(0, count, block):
        stop = min(count, start + block)
        cosine = np.asarray(vectors[start:stop] @ vectors.T, dtype=np.float64)  # float32 products, as the embeddings
        shared = np.rint((members[start:stop] @ members.T).toarray())
        here = slice(start, stop)
        overlapping = (sections[here, None] == sections[None, :]) & (np.abs(numbers[here, None] - numbers[None, :]) == 1)
        allowed = (langs[here, None] == langs[None, :]) & ~overlapping & (cosine < SAME_TEXT) & (texts[here, None] != texts[None, :])
        candidate = allowed & ((cosine >= SIMILAR) | (shared >= SHARED_PHRASES))
        strength = np.round(cosine, 6) + 0.1 * shared
        for offset, row in enumerate(strength):
            found = np.flatnonzero(candidate[offset])
            strongest = found[np.argsort(-row[found], kind="stable")[:per_chunk]]
            yield start + offset, [(int(b), float(cosine[offset, b])) for b in strongest]


def _number(chunk_id: str) -> int:
    """The ``n`` of a ``doc#n`` chunk id (-2, never a neighbour's, for an id without one)."""
    tail = chunk_id.rsplit("#", 1)[-1]
    return int(tail) if tail.isdigit() else -2


def _codes(values: Sequence[Hashable]) -> np.ndarray:
    """One integer per distinct value, so equal values compare equal as numbers."""
    seen: dict[Hashable, int] = {}
    return np.array([seen.setdefault(v, len(seen)) for v in values], dtype=np.int64)
