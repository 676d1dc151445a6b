"""Unanswerable questions by a swapped subject: the judge writes a single-fact question from a
chunk and names its subject and three other things of the same kind; the code puts each other
thing in the subject's place and keeps the first question that brings a word the whole
knowledge base lacks (see :mod:`ragmeter.generate.compose`, which chooses the method by type).
When every other thing is one the knowledge base already names (the 1.5B judge often takes
them from the chunk), the judge is told which they were and asked once for three more.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ragmeter.data.text import normalize
from ragmeter.data.words import content_words
from ragmeter.generate.bridges import LETTER, phrase_pattern, substitute
from ragmeter.generate.chunking import Chunk
from ragmeter.generate.graph import KnowledgeGraph
from ragmeter.generate.plan import Slot
from ragmeter.generate.synthesize import NO_ANSWER, QA_SCHEMA, Draft, SynthesisError, reply_text, restyle
from ragmeter.judges.base import LLMJudge
from ragmeter.judges.prompts import PromptBook

#: The method's name (``metadata.composition.method``, and in the journal's fingerprints).
SWAP = "swap"
_SWAP_SCHEMA = {
    "type": "object",
    "properties": {"subject": {"type": "string"}, "others": {"type": "array", "items": {"type": "string"}}},
    "required": ["subject", "others"],
}
_OTHERS_SCHEMA = {"type": "object", "properties": {"others": {"type": "array", "items": {"type": "string"}}}, "required": ["others"]}
#: What joins the things the knowledge base already names, in the second request's ``known``.
_LIST_SEPARATOR = {"en": "; ", "zh": "；"}


async def swap_subject(slot: Slot, graph: KnowledgeGraph, judge: LLMJudge) -> Draft:
    """Write the unanswerable question of ``slot`` from its seed chunk by a swapped subject.

    Args:
        slot: What to write (style, persona, the seed chunk).
        graph: The knowledge graph the slot's chunk indexes into.
        judge: The LLM that writes.

    Raises:
        SynthesisError: The subject is not words of the question, or no other thing brings a
            word the knowledge base lacks, in either request.
    """
    seed = graph.chunks[slot.chunks[0]]
    reply = await judge.generate("testset_single_fact", {"context": seed.text}, QA_SCHEMA, slot.lang)
    before = reply_text(reply, "question")
    reply = await judge.generate("testset_unanswerable_swap", {"context": seed.text, "question": before}, _SWAP_SCHEMA, slot.lang)
    subject, others = reply_text(reply, "subject"), reply_texts(reply, "others")
    checking = not judge.placeholders
    if checking and not phrase_pattern(subject, slot.lang).search(before):
        raise SynthesisError(f"the subject {subject!r} is not words of the question {before!r}")
    # Neither the subject given back nor a thing copied from the prompt's examples ("Riverside
    # Library" for a sign-off, in a run on the example knowledge base) is another thing of its kind.
    unusable = {normalize(subject), *_example_others(slot.lang)}
    found = _first_absent(before, subject, others, unusable, graph, slot.lang) if checking else None
    tried = list(others)
    if found is None:
        # A stand-in judge (--dry-run) asks again too: the estimate counts the step at its dearest.
        fields = {"context": seed.text, "question": before, "subject": subject, "known": _LIST_SEPARATOR[slot.lang].join(others)}
        reply = await judge.generate("testset_unanswerable_swap_again", fields, _OTHERS_SCHEMA, slot.lang)
        more = reply_texts(reply, "others")
        tried += more
        found = (
            _first_absent(before, subject, more, unusable | {normalize(o) for o in others}, graph, slot.lang) if checking else (more[0], [])
        )
    if found is None:
        raise SynthesisError(f"no other subject brings a word the knowledge base lacks: {subject!r} -> {tried!r}")
    other, absent = found
    return await _draft(slot, seed, before, subject, other, absent, judge)


def _first_absent(
    before: str, subject: str, others: Sequence[str], unusable: set[str], graph: KnowledgeGraph, lang: str
) -> tuple[str, list[str]] | None:
    """The first of ``others`` (not one of ``unusable``, normalised) that, in the place of
    ``subject`` in ``before``, brings words the knowledge base lacks, with those words."""
    for other in others:
        if normalize(other) in unusable:
            continue
        if words := absent_words(substitute(before, subject, other, lang), before, graph.chunks):
            return other, words
    return None


async def _draft(slot: Slot, seed: Chunk, before: str, subject: str, other: str, absent: list[str], judge: LLMJudge) -> Draft:
    """The draft of ``before`` with ``other`` in the place of ``subject``, in the slot's style."""
    after = substitute(before, subject, other, slot.lang)
    notes: dict[str, Any] = {
        "method": SWAP, "question_before_swap": before, "subject": subject, "swapped_for": other,
        "absent_from_knowledge_base": absent,
    }  # fmt: skip
    styled = await restyle(slot, after, judge)
    return Draft(slot, styled, after, NO_ANSWER[slot.lang], (seed.text,), (seed.id,), notes)


@lru_cache(maxsize=2)
def _example_others(lang: str) -> frozenset[str]:
    """The other things named in the examples of the ``testset_unanswerable_swap`` prompts."""
    book = PromptBook(lang)
    examples = [e for task in ("testset_unanswerable_swap", "testset_unanswerable_swap_again") for e in book.task(task).get("examples", [])]
    return frozenset(normalize(other) for example in examples for other in example["answer"].get("others", []))


def reply_texts(reply: Any, key: str) -> list[str]:
    """The texts at ``key`` of a judge's JSON reply (a list of texts, or one text), each
    tidied as :func:`~ragmeter.generate.synthesize.reply_text` tidies one.

    Raises:
        SynthesisError: ``key`` holds no text.
    """
    value = reply.get(key) if isinstance(reply, dict) else None
    items = value if isinstance(value, list) else [value]
    texts = [reply_text({key: item}, key) for item in items if isinstance(item, str) and item.strip(" \n\t\"'“”「」")]
    if not texts:
        raise SynthesisError(f"the judge's reply has no usable '{key}': {str(reply)[:200]!r}")
    return texts


def absent_words(question: str, before: str, chunks: Sequence[Chunk]) -> list[str]:
    """The content words ``question`` brings to ``before`` (:func:`content_words`, with a
    letter: a changed number does not count) that no chunk holds, even inside a longer word.

    Args:
        question: The question with its subject swapped.
        before: The question it was made from.
        chunks: The knowledge base's chunks.
    """
    text = _kb_text(tuple(chunks))
    new = content_words(question) - content_words(before)
    return sorted(w for w in new if LETTER.search(w) and w not in text)


@lru_cache(maxsize=4)
def _kb_text(chunks: tuple[Chunk, ...]) -> str:
    return "\n".join(normalize(chunk.text) for chunk in chunks)
