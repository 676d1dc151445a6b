"""Where a generated question's reference answer stands in its chunks, for the quality filter
(:mod:`ragmeter.generate.filters`), with no model: copied word for word from one sentence
(:func:`copied_span`), stated by one sentence (:func:`stated_span`), mostly in one chunk
(:func:`covering_span`), or taken from a paragraph away from a number the question states
(:func:`number_elsewhere`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragmeter.data.text import split_sentences, tokenize
from ragmeter.data.words import content_words
from ragmeter.generate.wording import in_digits, numbers

#: Most content words a reasoning question's reference may add to the question and still be
#: a fact one sentence states (see :func:`stated_span`).
STATED_WORDS = 3
_YES_NO = re.compile(r"\s*(?:(?:yes|no)\b|(?:是的|是|不是|不|否|对|不对|可以|不可以|能|不能|会|不会)[，,。.！!])", re.IGNORECASE)


def copied_span(reference: str, contexts: Sequence[str], ids: Sequence[str], lang: str) -> str | None:
    """The id of the chunk one of whose sentences holds ``reference`` word for word, or ``None``.

    Words are compared as :func:`~ragmeter.data.text.tokenize` gives them (lower-cased, no
    punctuation): in English the reference's words must be a run of whole words of the
    sentence ("8 hours" in "... for 8 hours.", not "8" in "18"); in Chinese its characters a
    run of the sentence's characters. A reference without a content word (:func:`content_words`:
    "Yes", "是") is never a copied span.

    Args:
        reference: The reference answer.
        contexts: The texts of the question's chunks.
        ids: Their ids, in the same order.
        lang: The question's language (``"en"`` or ``"zh"``).
    """
    if not content_words(reference):
        return None
    span = _joined(reference, lang)
    for chunk_id, text in zip(ids, contexts, strict=True):
        if any(span in _joined(sentence, lang) for sentence in _sentences(text)):
            return chunk_id
    return None


def _sentences(text: str) -> list[str]:
    """The sentences of ``text`` (:func:`~ragmeter.data.text.split_sentences`), and each run of
    them joined by a Chinese semicolon as one more: "可以先取消旧流水线；如果还是不够，再申请配额。"
    is one sentence in two clauses, and a reference that copies it whole is copied (zh q0015
    of the read of 2026-12-04 in ``benchmarks/results/generate_review.md``, kept as reasoning)."""
    pieces = split_sentences(text)
    joined: list[str] = []
    for piece in pieces:
        if joined and joined[-1].endswith("；"):
            joined[-1] += piece
        else:
            joined.append(piece)
    return pieces + [sentence for sentence in joined if sentence not in pieces]


def _joined(text: str, lang: str) -> str:
    """The words of ``text`` (:func:`~ragmeter.data.text.tokenize`) joined and framed by spaces,
    or, in Chinese, its characters joined: a span is a substring of a sentence's."""
    glue = "" if lang == "zh" else " "
    return glue + glue.join(tokenize(text)) + glue


def number_elsewhere(question: str, reference: str, contexts: Sequence[str], lang: str) -> str | None:
    """A number the question states that its reference's chunk holds only in paragraphs other
    than the one the reference is copied from, or ``None``: the reference then answers
    something else. "如果一个表…实测的运行时长超过 5 分钟，需要进行什么操作？" was given, and kept
    with, a sentence on destructive changes of another section ("先停止使用这张表或这个字段，至少
    14 天后再删除"), while "5 分钟" is in the section on migration review; the judge, asked the
    question, copied the same wrong sentence.

    Numbers are read by :func:`~ragmeter.generate.wording.numbers` (digits, and Chinese
    numerals that count: "五分钟" is "5 分钟"), and only in a chunk that holds both the number and the
    reference word for word in one sentence (:func:`copied_span`); a number the reference
    repeats, or one no chunk holds (a case of the question's own: "a job that runs 200
    minutes"), is never one. The cost: a consequence stated in a paragraph of its own, away
    from the number it follows from ("A SEV1 page must be acknowledged within 5 minutes." then,
    below, "A page not acknowledged in time escalates to Tier 2."), rejects a good question;
    a top-up round writes another, where a wrong reference kept would fail a right answer.

    Args:
        question: The question as written (before its style).
        reference: The reference answer.
        contexts: The texts of the question's chunks.
        lang: The question's language (``"en"`` or ``"zh"``).
    """
    said = set(numbers(reference))
    asked = [number for number in numbers(question) if number not in said]
    if not asked or not content_words(reference):
        return None
    span = _joined(reference, lang)
    for text in contexts:
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        home = [p for p in paragraphs if any(span in _joined(sentence, lang) for sentence in split_sentences(p))]
        if not home:
            continue
        held, near = set(numbers(text)), set().union(*(numbers(p) for p in home))
        away = next((number for number in asked if number in held and number not in near), None)
        if away is not None:
            return away
    return None


def stated_span(reference: str, question: str, contexts: Sequence[str], ids: Sequence[str], lang: str) -> str | None:
    """The id of the chunk one of whose sentences states ``reference`` as the answer to
    ``question``, or ``None``: the reference is copied from the sentence (:func:`copied_span`),
    or the content words it adds to the question, at most :data:`STATED_WORDS` of them and
    numbers written in words or digits alike ("five" is "5"), are all in the sentence. A yes
    or no ("No, two approvals are needed." to "Can the author approve it alone?") is the
    inference itself, stated nowhere.

    Args:
        reference: The reference answer.
        question: The question it answers (as written, before any style).
        contexts: The texts of the question's chunks.
        ids: Their ids, in the same order.
        lang: The question's language (``"en"`` or ``"zh"``).
    """
    copied = copied_span(reference, contexts, ids, lang)
    if copied is not None or _YES_NO.match(reference):
        return copied
    added = _words(reference) - _words(question)
    if not added or len(added) > STATED_WORDS:
        return None
    for chunk_id, text in zip(ids, contexts, strict=True):
        if any(added <= _words(sentence) for sentence in split_sentences(text)):
            return chunk_id
    return None


def covering_span(reference: str, contexts: Sequence[str], ids: Sequence[str]) -> str | None:
    """The id of the one chunk that holds every content word of the reference that any of the
    question's chunks holds, at least half of the reference's content words, or ``None``: where
    a question kept as single-fact, though its reference is not copied, takes its answer from.
    "迁移评审流程要求在合并请求中包含正向迁移脚本、回滚脚本以及运行时长。" (asked as a comparison
    of two chunks, kept as single-fact) takes every word the chunks hold from the chunk on
    migration review. "Two, from code owners." takes "two" from one chunk and "code owners" from
    another: it needs both, and gets ``None``.

    Args:
        reference: The reference answer.
        contexts: The texts of the question's chunks.
        ids: Their ids, in the same order.
    """
    words = _words(reference)
    held = [words & _words(text) for text in contexts]
    found = set().union(*held)
    covering = [chunk_id for chunk_id, chunk_words in zip(ids, held, strict=True) if chunk_words == found]
    if len(covering) != 1 or 2 * len(found) < len(words):
        return None
    return covering[0]


def _words(text: str) -> set[str]:
    """:func:`content_words` of ``text``, English numbers up to twenty in digits."""
    return content_words(in_digits(text))
