"""Does a question name what it asks about? The model-free half of the self-containment check.

A test question must make sense to a user who never saw its passage. "What did the company
announce?" or "2008 movie title" (ClapNQ q0013, q0014 of ``benchmarks/results/generate_review.md``)
pass the judge's checks, because the judge reads them beside their chunk, yet no user could ask
them: nothing in them says which company or which filmography. :func:`unanchored` finds such a
question from words alone: its content words (:func:`~ragmeter.data.words.content_words`,
Chinese segmented) that its reference contexts also hold are its *anchors*, and an anchor is
*distinctive* when at most :func:`rare_limit` chunks of the whole knowledge base hold it. A
question with no anchor, or with no distinctive one, does not say what it asks about. An
"unanswerable" question asks for what its chunk does not say, so all its content words are
its anchors (a word no chunk holds is distinctive: a name the knowledge base does not know).

This check needs no model. It cannot see a rare word used with "the film" in place of the
film's title, nor a vague question in a knowledge base so small that all its words are rare; a
yes/no verdict of the packaged judge on the question alone was tried for those and did not tell
vague questions from real ones (``benchmarks/results/generate_review.md``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ragmeter.data.words import content_words
from ragmeter.generate.graph import KnowledgeGraph

#: Share of the knowledge base's chunks that a distinctive word may be found in.
RARE_SHARE = 0.05
#: Chunks a distinctive word may always be found in, however small the knowledge base.
RARE_MIN = 3


@dataclass(frozen=True)
class TermIndex:
    """How many chunks of the knowledge base hold each content word.

    Attributes:
        chunks: Chunks in the knowledge base.
        frequency: Content word -> chunks that hold it.
    """

    chunks: int
    frequency: Counter[str]


@lru_cache(maxsize=8)
def term_index(graph: KnowledgeGraph) -> TermIndex:
    """The :class:`TermIndex` of ``graph``'s chunks (computed once per graph)."""
    frequency: Counter[str] = Counter()
    for chunk in graph.chunks:
        frequency.update(content_words(chunk.text))
    return TermIndex(len(graph.chunks), frequency)


def rare_limit(chunks: int) -> int:
    """Most chunks a distinctive word may be found in: :data:`RARE_SHARE` of ``chunks``, at
    least :data:`RARE_MIN`."""
    return max(RARE_MIN, math.ceil(RARE_SHARE * chunks))


def unanchored(question: str, contexts: Sequence[str] | None, index: TermIndex) -> str | None:
    """Why ``question`` does not say what it asks about, or ``None`` when it does.

    Args:
        question: The question, as worded before a style that hides words (misspelled).
        contexts: The texts of the chunks it was written from and is answered by, whose
            words are its anchors; ``None`` for an unanswerable question (every word is).
        index: The knowledge base's :class:`TermIndex`.
    """
    asked = content_words(question)
    anchors = asked if contexts is None else set().union(set(), *(asked & content_words(context) for context in contexts))
    if not anchors:
        where = "has no content word" if contexts is None else "shares no content word with the chunks it was written from"
        return f"it {where}: it does not name what it asks about"
    limit = rare_limit(index.chunks)
    if all(index.frequency[word] > limit for word in anchors):
        words = ", ".join(sorted(anchors))
        return f"each of its words ({words}) is in more than {limit} of the {index.chunks} chunks: it does not say which one it asks about"
    return None
