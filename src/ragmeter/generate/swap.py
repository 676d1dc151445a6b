"""Unanswerable questions by a swapped subject: the judge writes a single-fact question from a
chunk and names its subject and three other things of the same kind; the code puts each other
thing in the subject's place and keeps the first question that brings a word the whole
knowledge base lacks (see :mod:`ragmeter.generate.compose`, which chooses the method by type).

When the question holds a name ("Gutenberg", "SEV1", "Forge CI"), the code takes it for the
subject and the judge makes up three names of other things of its kind: on a broad corpus
(600 Wikipedia passages) nearly every real thing the judge names is mentioned somewhere, and the
subject it picks itself is often a generic noun ("method", "structures") whose swap is nonsense.
A swapped-in name needs only to be absent as a whole (:func:`brought`): the judge's made-up
names are common words put together.
"""

from __future__ import annotations

import re
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
#: The prompts whose examples name other things (see :func:`_example_others`).
_SWAP_TASKS = ("testset_unanswerable_swap", "testset_unanswerable_names")
#: A word that starts with a capital letter ("Gutenberg", "SEV1", "CI"), possessive cut off.
_NAME_WORD = r"[A-Z][A-Za-z0-9.&-]*[A-Za-z0-9]|[A-Z]"
#: A name: such words in a row, maybe joined by "of", "and", "for", "the", "de", "van", "von".
_NAME = re.compile(rf"(?<![\w-])(?:{_NAME_WORD})(?:[ \t]+(?:(?:of|and|for|the|de|van|von)[ \t]+)?(?:{_NAME_WORD}))*")


async def swap_subject(slot: Slot, graph: KnowledgeGraph, judge: LLMJudge) -> Draft:
    """Write the unanswerable question of ``slot`` from its seed chunk by a swapped subject.

    Args:
        slot: What to write (style, persona, the seed chunk).
        graph: The knowledge graph the slot's chunk indexes into.
        judge: The LLM that writes.

    Raises:
        SynthesisError: The subject is not words of the question, or no other thing brings a
            word the knowledge base lacks.
    """
    seed = graph.chunks[slot.chunks[0]]
    reply = await judge.generate("testset_single_fact", {"context": seed.text}, QA_SCHEMA, slot.lang)
    before = reply_text(reply, "question")
    fields = {"context": seed.text, "question": before}
    named = name_in(before, slot.lang)
    if named:
        reply = await judge.generate("testset_unanswerable_names", {**fields, "subject": named}, _OTHERS_SCHEMA, slot.lang)
        subject, others = named, reply_texts(reply, "others")
    else:
        reply = await judge.generate("testset_unanswerable_swap", fields, _SWAP_SCHEMA, slot.lang)
        subject, others = reply_text(reply, "subject"), reply_texts(reply, "others")
    checking = not judge.placeholders
    if checking and not phrase_pattern(subject, slot.lang).search(before):
        raise SynthesisError(f"the subject {subject!r} is not words of the question {before!r}")
    # Neither the subject given back nor a thing copied from the prompt's examples ("Riverside
    # Library" for a sign-off, in a run on the example knowledge base) is another thing of its kind.
    unusable = {normalize(subject), *_example_others(slot.lang)} if checking else set()
    swaps = [(other, substitute(before, subject, other, slot.lang)) for other in others if normalize(other) not in unusable]
    found = next(((other, q, new) for other, q in swaps if (new := brought(other, q, before, graph.chunks, slot.lang, bool(named)))), None)
    if found is None and not checking and swaps:
        found = (swaps[0][0], swaps[0][1], [])
    if found is None:
        raise SynthesisError(f"no other subject brings a word the knowledge base lacks: {subject!r} -> {others!r}")
    other, after, absent = found
    notes: dict[str, Any] = {
        "method": SWAP, "question_before_swap": before, "subject": subject, "swapped_for": other,
        "absent_from_knowledge_base": absent, "subject_by": "name" if named else "judge",
    }  # fmt: skip
    if named and checking and unknown_name(other, subject, graph.chunks):
        notes["unknown_to_knowledge_base"] = True
    styled = await restyle(slot, after, judge)
    return Draft(slot, styled, after, NO_ANSWER[slot.lang], (seed.text,), (seed.id,), notes)


def name_in(question: str, lang: str) -> str | None:
    """The longest name ``question`` holds (words that start with a capital letter, in a row),
    or ``None``. An English question's first word is not one ("What", "How"); a Chinese
    question's names are its Latin ones ("Forge CI 的作业...").

    Args:
        question: A question the knowledge base answers.
        lang: ``"en"`` or ``"zh"``.
    """
    names = []
    for match in _NAME.finditer(question):
        name = match.group(0)
        if lang == "en" and match.start() == len(question) - len(question.lstrip()):
            name = name.partition(" ")[2].strip()
        names.append(name.removesuffix("'s").removesuffix("’s"))
    return max((n for n in names if n and n != "I"), key=len, default=None)


@lru_cache(maxsize=2)
def _example_others(lang: str) -> frozenset[str]:
    """The other things named in the examples of the prompts that name them (:data:`_SWAP_TASKS`)."""
    book = PromptBook(lang)
    examples = [example for task in _SWAP_TASKS for example in book.task(task).get("examples", [])]
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


def brought(other: str, question: str, before: str, chunks: Sequence[Chunk], lang: str, by_name: bool) -> list[str]:
    """What the swapped ``question`` brings that the knowledge base lacks, or ``[]``: for a
    swapped-in name (``by_name``), the name itself when no chunk holds its words with a letter
    together, as a made-up "Lily Thompson" is new to 600 Wikipedia passages that name a Lily
    and a Thompson ("Forge Vault 2031" is not new beside "Forge Vault"); else, or when the
    name is there, :func:`absent_words`.

    Args:
        other: The thing put in the subject's place.
        question: The question with its subject swapped.
        before: The question it was made from.
        chunks: The knowledge base's chunks.
        lang: ``"en"`` or ``"zh"``.
        by_name: The subject was a name of the question (:func:`name_in`).
    """
    lettered = " ".join(word for word in other.split() if LETTER.search(word))
    if by_name and lettered and not phrase_pattern(lettered, lang).search(_kb_text(tuple(chunks))):
        return [other]
    return absent_words(question, before, chunks)


def unknown_name(other: str, subject: str, chunks: Sequence[Chunk]) -> bool:
    """Whether ``other`` is a name (capitalised words, as :func:`name_in` finds them) that
    shares no word with ``subject`` and none of whose words (with a letter) any chunk holds,
    even inside a longer word: nothing in the knowledge base can be about it ("Jenkins" for
    "Forge CI"; not "CI Runner" for "CI", nor "Parr-Hart" where "Hart-Parr" is named).

    Args:
        other: The name swapped in.
        subject: The name it replaced.
        chunks: The knowledge base's chunks.
    """
    words = {word for word in content_words(other) if LETTER.search(word)}
    if not _NAME.fullmatch(other.strip()) or not words or words & content_words(subject):
        return False
    text = _kb_text(tuple(chunks))
    return not any(word in text for word in words)


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
