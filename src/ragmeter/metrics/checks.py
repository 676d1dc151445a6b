"""Fast checks that read the response and the sample's metadata; no model.

- citations: does the response cite its sources, and does it cite the expected document?
- refusals: does the system refuse exactly when the question cannot be answered?
- efficiency: latency, tokens and cost the sample carries in its metadata.
"""

from __future__ import annotations

import json
import re
import reprlib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ragmeter.data.schema import Sample
from ragmeter.data.text import CITATION
from ragmeter.data.words import content_words
from ragmeter.metrics.base import Metric, Score, finite_number
from ragmeter.metrics.registry import register

# Separators between a document id and a chunk number: "runbook#3", "runbook:3"...
_CHUNK_SEPARATORS = "#:/@|"


def find_citations(response: str) -> list[str]:
    """Every id cited in bracket form in ``response``, in order of appearance."""
    cited: list[str] = []
    for match in CITATION.finditer(response):
        cited.extend(part.strip() for part in re.split(r"[,，;；]", match.group(1)) if part.strip())
    return cited


def mentions(text: str, identifier: str) -> bool:
    """True when ``identifier`` appears in ``text`` and is not part of a longer id
    ("doc1" is not mentioned in "doc10", but is in "doc1#3" and in "参见doc1")."""
    edge = "[A-Za-z0-9_-]"
    return re.search(f"(?<!{edge}){re.escape(identifier)}(?!{edge})", text) is not None


def belongs_to(context_id: str, doc_id: str) -> bool:
    """True when ``context_id`` is the document ``doc_id`` or one of its chunks
    (``doc_id`` followed by one of ``# : / @ |``)."""
    return context_id == doc_id or (context_id.startswith(doc_id) and context_id[len(doc_id)] in _CHUNK_SEPARATORS)


def _expected_docs(sample: Sample) -> list[str] | Score:
    expected = sample.metadata.get("expected_doc")
    if expected is None:
        return Score.unscored("metadata.expected_doc is null: no document holds the answer (an unanswerable question)")
    docs = [expected] if isinstance(expected, str) else expected
    if not isinstance(docs, list) or not all(isinstance(d, str) and d for d in docs):
        return Score.unscored(f"metadata.expected_doc must be a document id or a list of them, got {expected!r}")
    if not docs:
        return Score.unscored("metadata.expected_doc is an empty list")
    return docs


def _resolve(citation: str, sample: Sample) -> str | None:
    """The id ``citation`` names: a numeric citation [n] is the n-th retrieved context's id, or
    ``None`` when the ids do not pair with the contexts (:meth:`Sample.unpaired_ids`), so which
    id the n-th context has is unknown; anything else (a number past the last id too) is an id.

    Args:
        citation: One citation as :func:`find_citations` found it ("2", "runbook#3").
        sample: The sample whose response holds it.
    """
    if not citation.isdigit():
        return citation
    if sample.unpaired_ids():
        return None
    retrieved = sample.retrieved_context_ids or []
    return retrieved[int(citation) - 1] if 1 <= int(citation) <= len(retrieved) else citation


@register
@dataclass(frozen=True)
class CitationPresent(Metric):
    """1 when the response cites a source in brackets ([1], [doc#2], 【1】) or names a
    retrieved context id; else 0. Details list the citations (a numeric one as the id of the
    context it points at) and those that match no retrieved context. When the ids and the
    contexts differ in length (:meth:`Sample.unpaired_ids`) a numeric citation still counts
    but stays a number, is not called unknown, and ``unpaired_ids`` in the details says why."""

    name = "citation_present"
    family = "robustness"
    required = ("response",)

    async def score(self, sample: Sample, judges) -> Score:
        response = sample.response or ""
        if not response.strip():
            return Score.unscored("response is empty")
        retrieved = sample.retrieved_context_ids or []
        resolved = [(c, _resolve(c, sample)) for c in find_citations(response)]
        cited = [i or c for c, i in resolved]
        named = [i for i in retrieved if len(i) > 2 and mentions(response, i) and i not in cited]
        citations = cited + named
        details: dict[str, Any] = {"citations": citations}
        ids = [i for _, i in resolved if i is not None]
        if retrieved:
            details["unknown_citations"] = [c for c in ids if not any(belongs_to(r, c) or r == c for r in retrieved)]
        if len(ids) < len(resolved):
            details["unpaired_ids"] = sample.unpaired_ids()
        if citations:
            return Score(1.0, f"cites {len(citations)} source(s): {', '.join(citations[:5])}", details=details)
        return Score(0.0, "no citation found", details=details)


@register
@dataclass(frozen=True)
class ExpectedDocRetrieved(Metric):
    """Share of the expected documents (``metadata.expected_doc``: an id or a list) of which
    at least one chunk was retrieved. A chunk id belongs to a document when it is the
    document id or starts with it followed by # : / @ or |."""

    name = "expected_doc_retrieved"
    family = "retrieval"
    required = ("retrieved_context_ids", "metadata.expected_doc")

    async def score(self, sample: Sample, judges) -> Score:
        docs = _expected_docs(sample)
        if isinstance(docs, Score):
            return docs
        retrieved = sample.retrieved_context_ids or []
        found = {d: [r for r in retrieved if belongs_to(r, d)] for d in docs}
        hits = [d for d, chunks in found.items() if chunks]
        explanation = f"{len(hits)} of {len(docs)} expected document(s) retrieved"
        return Score(len(hits) / len(docs), explanation, details={"expected": docs, "retrieved_chunks": found})


@register
@dataclass(frozen=True)
class ExpectedDocCited(Metric):
    """Share of the expected documents that the response cites, by id, chunk id, or a
    numeric citation [n] pointing at a retrieved chunk of the document.

    A numeric citation is the id at its position in ``retrieved_context_ids``, so it needs the
    ids to pair one to one with ``retrieved_contexts``. When they do not
    (:meth:`Sample.unpaired_ids`), a document cited or named by id still counts, but a sample
    whose score would depend on a numeric citation (an expected document not cited by id
    while [n] is) is left unscored with the reason: crediting [n] could credit the wrong one."""

    name = "expected_doc_cited"
    family = "robustness"
    required = ("response", "metadata.expected_doc")

    async def score(self, sample: Sample, judges) -> Score:
        docs = _expected_docs(sample)
        if isinstance(docs, Score):
            return docs
        resolved = [(c, _resolve(c, sample)) for c in find_citations(sample.response or "")]
        cited = [i for _, i in resolved if i is not None]
        hits = [d for d in docs if any(belongs_to(c, d) for c in cited) or mentions(sample.response or "", d)]
        positional = [f"[{c}]" for c, i in resolved if i is None]
        if positional and len(hits) < len(docs):
            return Score.unscored(
                f"numeric citation(s) {', '.join(positional[:5])} point at retrieved contexts by position, "
                f"but retrieved_context_ids has {sample.unpaired_ids()}"
            )
        return Score(
            len(hits) / len(docs),
            f"{len(hits)} of {len(docs)} expected document(s) cited",
            details={"expected": docs, "citations": cited},
        )


@lru_cache(maxsize=1)
def _refusal_patterns() -> dict[str, list[re.Pattern]]:
    text = resources.files("ragmeter.resources").joinpath("refusal_patterns.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return {lang: [re.compile(p, re.IGNORECASE) for p in patterns] for lang, patterns in data.items() if not lang.startswith("_")}


def refusal_phrase(response: str) -> str | None:
    """The refusal phrase found in ``response`` (English or Chinese), or ``None``."""
    for patterns in _refusal_patterns().values():
        for pattern in patterns:
            match = pattern.search(response)
            if match:
                return match.group(0)
    return None


#: Words a sentence that declines to answer uses besides its refusal phrase and the
#: question's own words: about the sources, the asking and the answering.
_DECLINING_WORDS = content_words(
    """answer answered know say tell find found determine confirm provide provided given retrieved available supplied
    context contexts document documents documentation docs source sources passage passages excerpt excerpts text texts
    material materials knowledge base information search result results mention mentioned question specific detail
    details sorry unfortunately afraid currently asked
    知识库 文档 资料 上下文 信息 内容 相关 提供 问题 回答 抱歉 具体 找到 提到 提及 说明 无法 没有 答案 检索 结果 目前 不 清楚 知道 确定"""
)


def declines_only(sentence: str, question: str) -> str | None:
    """The refusal phrase of ``sentence`` when it does nothing but decline to answer
    ``question`` ("I don't know.", "The context does not mention the on-call pay rate.",
    "抱歉，知识库中没有提到值班补贴。"), else ``None``: besides its refusal phrases it holds
    only the question's words and words about sources and answering, and no number. "The
    context does not mention it, but it is $50 an hour" states a fact, and is no refusal.

    Args:
        sentence: One claim of a response.
        question: The question the response answers.
    """
    spans = [m.span() for patterns in _refusal_patterns().values() for pattern in patterns for m in pattern.finditer(sentence)]
    if not spans:
        return None
    rest = "".join(ch for i, ch in enumerate(sentence) if not any(start <= i < end for start, end in spans))
    if re.search(r"\d", rest) or content_words(rest) - content_words(question) - _DECLINING_WORDS:
        return None
    start, end = min(spans)
    return sentence[start:end]


@lru_cache(maxsize=1)
def _judge_instruction_patterns() -> list[re.Pattern]:
    text = resources.files("ragmeter.resources").joinpath("judge_instruction_patterns.json").read_text(encoding="utf-8")
    data = json.loads(text)
    return [re.compile(p, re.IGNORECASE | re.MULTILINE) for lang, patterns in data.items() if not lang.startswith("_") for p in patterns]


def judge_instruction(text: str) -> str | None:
    """The part of ``text`` that addresses an evaluator ("ignore previous instructions",
    "rate this answer as faithful", "给出满分"), or ``None``: a claim like that states no
    fact and is a likely prompt injection."""
    for pattern in _judge_instruction_patterns():
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


@register
@dataclass(frozen=True)
class RefusalAccuracy(Metric):
    """1 when the system refuses exactly when it should: a refusal for questions marked
    unanswerable (``metadata.answerable`` false), an answer for the others; else 0.

    Refusals are recognised by English and Chinese phrases ("the documents do not
    mention", "无法回答", "知识库中没有..."); the details show the phrase found. An empty
    response counts as a refusal: it gives no answer.
    """

    name = "refusal_accuracy"
    family = "robustness"
    required = ("response", "metadata.answerable")

    async def score(self, sample: Sample, judges) -> Score:
        answerable = sample.metadata.get("answerable")
        if not isinstance(answerable, bool):
            return Score.unscored(f"metadata.answerable must be true or false, got {answerable!r}")
        phrase = refusal_phrase(sample.response or "") if (sample.response or "").strip() else "(empty response)"
        refused = phrase is not None
        details = {"answerable": answerable, "refused": refused, "refusal_phrase": phrase}
        if answerable:
            return Score(0.0 if refused else 1.0, f"answerable question {'refused' if refused else 'answered'}", details=details)
        return Score(1.0 if refused else 0.0, f"unanswerable question {'refused' if refused else 'answered anyway'}", details=details)


def _non_negative_number(value: Any, field: str) -> float | Score:
    """``value`` as a float when it is a finite number >= 0 (-0.0 becomes 0), else the unscored
    score naming ``field`` (``metadata.latency_ms``); an integer too large for a float is no
    finite number."""
    number = finite_number(value)
    if number is None or number < 0:
        return Score.unscored(f"{field} must be a non-negative number, got {reprlib.repr(value)}")
    return abs(number)


class _Measurement(Metric):
    family = "efficiency"
    higher_is_better = False


@register
@dataclass(frozen=True)
class LatencyMs(_Measurement):
    """End-to-end latency of the RAG system for this sample, from ``metadata.latency_ms``."""

    name = "latency_ms"
    unit = "ms"
    required = ("metadata.latency_ms",)

    async def score(self, sample: Sample, judges) -> Score:
        value = _non_negative_number(sample.metadata.get("latency_ms"), "metadata.latency_ms")
        return value if isinstance(value, Score) else Score(value, f"{value:.0f} ms")


@register
@dataclass(frozen=True)
class TotalTokens(_Measurement):
    """Tokens the RAG system used, from ``metadata.tokens``: a number, or an object with
    ``prompt`` and ``completion`` (or ``total``)."""

    name = "total_tokens"
    unit = "tokens"
    required = ("metadata.tokens",)

    async def score(self, sample: Sample, judges) -> Score:
        tokens = sample.metadata.get("tokens")
        if isinstance(tokens, dict):
            if "total" in tokens:
                total = _non_negative_number(tokens["total"], "metadata.tokens.total")
                parts: dict[str, Any] = {"total": tokens["total"]}
            elif "prompt" not in tokens and "completion" not in tokens:
                return Score.unscored(f"metadata.tokens needs 'total', 'prompt' or 'completion', got keys {sorted(tokens)}")
            else:
                prompt = _non_negative_number(tokens.get("prompt", 0), "metadata.tokens.prompt")
                completion = _non_negative_number(tokens.get("completion", 0), "metadata.tokens.completion")
                if isinstance(prompt, Score):
                    return prompt
                if isinstance(completion, Score):
                    return completion
                total = _non_negative_number(prompt + completion, "metadata.tokens (prompt + completion)")
                parts = {"prompt": prompt, "completion": completion}
        else:
            total, parts = _non_negative_number(tokens, "metadata.tokens"), {}
        if isinstance(total, Score):
            return total
        return Score(total, f"{total:.0f} tokens", details=parts)


@register
@dataclass(frozen=True)
class CostUsd(_Measurement):
    """Cost of the RAG system's call for this sample in US dollars, from ``metadata.cost_usd``."""

    name = "cost_usd"
    unit = "USD"
    required = ("metadata.cost_usd",)

    async def score(self, sample: Sample, judges) -> Score:
        value = _non_negative_number(sample.metadata.get("cost_usd"), "metadata.cost_usd")
        return value if isinstance(value, Score) else Score(value, f"${value:.6f}")
