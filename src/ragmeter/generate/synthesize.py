"""Writing one question through the LLM judge: the question of its type, then its style.

Each single-prompt question type (:data:`PROMPTED_TYPES`) has a prompt (``testset_<type>`` in
``judges/prompts/testset_<lang>.yaml``) that gets the slot's chunk (or two chunks) and returns
JSON ``{"question", "answer"}``; multi-hop and unanswerable questions are composed in several
steps by :mod:`ragmeter.generate.compose`, which shares this module's draft, replies and
styles. The persona, colloquial and web-search styles
rewrite the question with a second prompt; the misspelled style adds typing mistakes in
code (deterministic, seeded by the sample id). The prompts are in the chunks' language, so
Chinese documents give Chinese questions.

Replies of small models are taken as they come when usable: a list where a text was asked
for gives its first text, surrounding quotes and whitespace are dropped. A reply without a
question (or without an answer, where one is needed) raises :class:`SynthesisError`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.generate.graph import KnowledgeGraph
from ragmeter.generate.plan import DIFFICULTY, Slot
from ragmeter.judges.base import LLMJudge

#: The reference answer of an unanswerable question, by language.
NO_ANSWER = {
    "en": "The knowledge base does not contain this information.",
    "zh": "知识库中没有这方面的信息。",
}
#: The types written by one prompt here (the others: :mod:`ragmeter.generate.compose`).
PROMPTED_TYPES = ("single_fact", "reasoning", "comparison", "conditional")
#: The JSON asked of a prompt that writes a question and its answer, and of one that writes a question.
QA_SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
    "required": ["question", "answer"],
}
Q_SCHEMA = {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}
_REWRITTEN_STYLES = ("persona", "colloquial", "web_search")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_QUOTES = " \n\t\"'“”「」"


class SynthesisError(Exception):
    """The judge's reply gave no usable question (or answer)."""


@dataclass(frozen=True)
class Draft:
    """A generated question before the quality filter.

    Attributes:
        slot: The slot it was written for.
        question: The question as the user asks it (after the style).
        original: The question before the style was applied.
        reference: The reference answer.
        contexts: The texts of the chunks it was written from.
        context_ids: Their ids.
        composition: How a composed question was built (its steps' replies and the chunks
            each came from; see :mod:`ragmeter.generate.compose`), kept in the sample's
            ``metadata.composition``; ``None`` for a question written in one prompt.
    """

    slot: Slot
    question: str
    original: str
    reference: str
    contexts: tuple[str, ...]
    context_ids: tuple[str, ...]
    composition: Mapping[str, Any] | None = None

    @property
    def answerable(self) -> bool:
        return self.slot.type != "unanswerable"

    def sample(self, graph: KnowledgeGraph, checks: dict[str, Any], needs: Sequence[str] | None = None) -> dict[str, Any]:
        """The test-set sample (RAGAS ``SingleTurnSample`` fields), with its metadata.

        Args:
            graph: The knowledge graph the slot's chunks index into.
            checks: What the quality filter measured (kept in ``metadata.checks``).
            needs: The ids of the only chunks the question needs (the filter's type check
                found that one chunk answers it), or ``None`` for all of the slot's chunks.
                The others are left out of the reference contexts and named in
                ``metadata.dropped_context_ids``.
        """
        keep = [i for i, chunk_id in enumerate(self.context_ids) if needs is None or chunk_id in needs]
        if not keep:
            raise ValueError(f"{self.slot.id}: none of the chunks {list(needs or [])} is one of its contexts {list(self.context_ids)}")
        contexts, context_ids = [self.contexts[i] for i in keep], [self.context_ids[i] for i in keep]
        documents = sorted({graph.chunks[i].document for i in self.slot.chunks if graph.chunks[i].id in context_ids})
        metadata: dict[str, Any] = {
            "type": self.slot.type,
            "style": self.slot.style,
            "persona": self.slot.persona,
            "difficulty": DIFFICULTY[self.slot.type],
            "answerable": self.answerable,
            "source_documents": documents,
            "lang": self.slot.lang,
            "checks": checks,
        }
        if self.original != self.question:
            metadata["original_question"] = self.original
        if self.composition:
            metadata["composition"] = dict(self.composition)
        if not self.answerable:
            metadata["seed_context_ids"] = list(self.context_ids)
        if len(context_ids) < len(self.context_ids):
            metadata["dropped_context_ids"] = [c for c in self.context_ids if c not in context_ids]
        return {
            "id": self.slot.id,
            "user_input": self.question,
            "reference": self.reference,
            "reference_contexts": contexts if self.answerable else [],
            "reference_context_ids": context_ids if self.answerable else [],
            "metadata": metadata,
        }


async def synthesize(slot: Slot, graph: KnowledgeGraph, judge: LLMJudge) -> Draft:
    """Write the question of ``slot``, of one of the :data:`PROMPTED_TYPES`.

    Args:
        slot: What to write (type, style, persona, chunks).
        graph: The knowledge graph the slot's chunks index into.
        judge: The LLM that writes (cached and metered by the caller's setup).

    Raises:
        ValueError: The slot's type is not written by one prompt.
        SynthesisError: The slot has no chunks, or the judge's reply is unusable.
        JudgeError: The judge gave no answer.
    """
    if slot.type not in PROMPTED_TYPES:
        raise ValueError(f"{slot.type} questions are composed (ragmeter.generate.compose), not written by one prompt")
    if not slot.chunks:
        raise SynthesisError(f"no related pair of chunks for a {slot.type} question (the knowledge graph has no link)")
    contexts = tuple(graph.chunks[i].text for i in slot.chunks)
    ids = tuple(graph.chunks[i].id for i in slot.chunks)
    fields: dict[str, Any] = {"contexts": list(contexts)} if len(contexts) > 1 else {"context": contexts[0]}
    reply = await judge.generate(f"testset_{slot.type}", fields, QA_SCHEMA, slot.lang)
    original, reference = reply_text(reply, "question"), reply_text(reply, "answer")
    question = await restyle(slot, original, judge)
    return Draft(slot, question, original, reference, contexts, ids)


async def restyle(slot: Slot, question: str, judge: LLMJudge) -> str:
    """``question`` in the slot's style (``plain``: unchanged)."""
    if slot.style == "misspelled":
        return misspell(question, slot.id)
    if slot.style not in _REWRITTEN_STYLES:
        return question
    fields: dict[str, Any] = {"question": question}
    if slot.style == "persona":
        fields = {"persona": slot.persona or "", "question": question}
    reply = await judge.generate(f"testset_style_{slot.style}", fields, Q_SCHEMA, slot.lang)
    return reply_text(reply, "question")


def reply_text(reply: Any, key: str) -> str:
    """The text at ``key`` of a judge's JSON reply, tidied.

    Raises:
        SynthesisError: ``key`` is missing, or holds no text.
    """
    value = reply.get(key) if isinstance(reply, dict) else None
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, str) and v.strip()), None)
    text = value.strip(_QUOTES) if isinstance(value, str) else ""
    if not text:
        raise SynthesisError(f"the judge's reply has no usable '{key}': {str(reply)[:200]!r}")
    return " ".join(text.split())


def misspell(question: str, seed: str) -> str:
    """``question`` with typing mistakes, the same ones for the same ``seed``.

    English: in about one word in four of four letters or more (at least one word), two
    inner letters are swapped or one is dropped. Chinese: two neighbouring Chinese
    characters are swapped, and one character elsewhere is dropped.
    """
    rng = random.Random(seed)
    if _HAN.search(question):
        positions = [i for i in range(len(question) - 1) if _HAN.match(question[i]) and _HAN.match(question[i + 1])]
        if not positions:
            return question
        i = rng.choice(positions)
        chars = list(question)
        chars[i], chars[i + 1] = chars[i + 1], chars[i]
        others = [j for j, ch in enumerate(chars) if _HAN.match(ch) and j not in (i, i + 1)]
        if len(others) > 3:
            del chars[rng.choice(others)]
        return "".join(chars)
    words = question.split(" ")
    candidates = [i for i, w in enumerate(words) if len(w) >= 4 and w.isalpha()]
    if not candidates:
        return question
    chosen = [c for c in candidates if rng.random() < 0.25] or [rng.choice(candidates)]
    for i in chosen:
        word = words[i]
        j = rng.randrange(1, len(word) - 2)
        words[i] = word[:j] + word[j + 1] + word[j] + word[j + 2 :] if rng.random() < 0.5 else word[:j] + word[j + 1 :]
    return " ".join(words)
