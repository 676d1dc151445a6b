"""The quality filter: which generated questions are kept, and why the others are not.

Checks, in this order (cheapest first, but for the model-free checks after the judge's); the first that fails rejects the question with its reason:

- ``source_leak``: the question, or its reference, points at its source ("according to the
  passage", "the two contexts", "what is the difference between the two?", "根据文中",
  "上下文"...): a user of the system never saw it.
- ``rewrite_drops_names`` (no model, :func:`dropped_names`; the persona, colloquial and
  web-search styles): the question's rewrite in its style leaves out a number or a name that
  the question as written holds, so it no longer asks the same thing. "If a job takes longer
  than 180 minutes, what happens to it?" became the keywords "job duration consequences"; a
  ClapNQ question on how many years after a named game another was released became keywords
  naming neither game nor year, and was kept (the filter's judge checks read it beside its
  chunk; the check on new questions in ``benchmarks/results/generate_review.md``).
- ``copies_prompt_example`` (no model, :func:`example_leak`; answerable questions): the question,
  as written before its style, uses a word of the contexts of the generator's own prompt
  examples (a fictional city library) that no chunk of the knowledge base holds: "the
  library's deployment process" (en q0004 of the check on new questions in
  ``benchmarks/results/generate_review.md``), or "14 岁读者 还书罚款", a question made of the
  Chinese examples' overdue-fines rule (zh q0002 there).
- ``unanswerable_from_contexts``: the judge does not find the answer to the question in
  its reference contexts (the packaged ``answerable`` verdict, P(yes) below
  :data:`THRESHOLD`).
- ``reference_unsupported``: the judge does not find the reference answer supported by the
  reference contexts (the ``supported`` verdict).
- ``reference_does_not_answer``: the judge, reading the question and the reference alone,
  finds the reference does not give what the question asks for (``testset_answers``, P(yes)
  below :data:`ANSWERS`): a reference taken from the wrong sentence of the right chunk is
  supported, yet answers another question (en q0012 and zh q0013 of
  ``benchmarks/results/generate_review.md``). At the packaged judge's strength this catches a
  reference about something else than the question, not one on the same subject.
- ``reference_disagrees``: the judge answers the question itself from the reference contexts,
  without seeing the reference (``testset_answer``), and the reference is not supported by
  that question and answer (the ``supported`` verdict, P(yes) below :data:`THRESHOLD`): a
  reference taken from the wrong sentence of the right chunk, on the question's subject, which
  ``reference_does_not_answer`` lets through (``benchmarks/results/generate_review.md``, the
  read of 2026-11-27 and its check on new questions). The judge's answer is kept in the checks.
- ``bridge_description_unsupported`` (a multi-hop question composed through a bridge phrase,
  :mod:`ragmeter.generate.compose`): the judge does not find "<phrase> is <description>"
  supported by the chunk the description was written from: the question names its subject
  by something that chunk does not say.
- ``single_chunk_answers``: a multi-hop question that one of its chunks answers alone. For a
  composed bridge question: the chunk that answers it also supports "<phrase> is
  <description>", so it tells alone what the question is about (that the described chunk
  does not hold the answer is checked in code as the question is written). The packaged
  ``answerable`` verdict is not asked of each chunk there: it says yes to a chunk that speaks
  of the question's kind of fact, and rejected every composed question of the example
  knowledge base, mostly on the chunk that lacks the answer
  (``benchmarks/results/generate_multi_hop.md``).
- ``reference_restates_question`` (no model, :func:`restates`): the reference adds no
  content word to the question, as in "What is the name of the party that opposes the
  President's party?" answered "The major political party opposing the President's party"
  (ClapNQ q0003 of ``benchmarks/results/generate_review.md``, which the ``supported`` verdict
  passes because the words are the passage's). Checked after the judge's
  checks, though it needs no model, so that ``--dry-run``'s stand-in, whose reference is its
  question, still counts every judge call.
- ``question_not_self_contained`` (no model, :func:`~ragmeter.generate.anchors.unanchored`,
  after the judge's checks for the same reason): the question shares no content word with
  its chunks, or only words that many chunks of the knowledge base hold: it does not say
  what it asks about ("What did the company announce?"). A judge verdict on the question
  alone was tried and dropped: on 19 real questions and 17 that name nothing, its P(yes)
  ranked them at ROC-AUC 0.67 only, and at 0.5 it rejected 7 of the 19 real ones
  (``benchmarks/results/generate_review.md``).
- ``answer_in_knowledge_base``: an "unanswerable" question whose answer the judge finds in
  one of the :data:`TOP_K` chunks of the whole knowledge base closest to it (embeddings),
  each judged on its own (P(yes) at or above :data:`~ragmeter.judges.base.ANSWERABLE_LINE`,
  not 0.5); then its self-containment, as above, every word of it counting (it asks for what
  its chunk does not say).
- ``near_duplicate`` (:func:`near_duplicates`, once all questions are written): a kept
  question whose embedding is at least :data:`DUPLICATE` close to an earlier kept one.

A question that passes may be relabelled (:attr:`Verdict.relabel`) by the type check
(:func:`copied_span`, no model), and is then kept as a ``single_fact`` question (its sample's
``metadata.original_type`` keeps the type asked for, ``metadata.checks.copied_from`` the chunk),
whose reference contexts are then that one chunk alone (:attr:`Verdict.needs`; the others
are named in ``metadata.dropped_context_ids``):

- a ``reasoning`` question whose reference is copied word for word from one sentence of one
  of its chunks, or adds to the question at most :data:`STATED_WORDS` content words that one
  sentence holds (:func:`stated_span`): the answer is stated, no inference is needed ("8
  hours", stated outright, for en q0002, and ClapNQ q0002 of
  ``benchmarks/results/generate_review.md``; "Five business days." for "due within 5 business
  days" in its read of 2026-11-27);
- a ``multi_hop`` question that one chunk answers alone (``single_chunk_answers``) when its
  reference is also copied from a sentence of that very chunk: a good single-fact question,
  rather than a reject. A copied reference alone does not relabel a multi-hop question: a
  bridge question ("the team that owns X freezes when?") has its answer in one chunk yet
  needs the other to find it. A question composed as a bridge (:mod:`ragmeter.generate.compose`)
  is never relabelled: it names its subject by a description from the other chunk, so a
  chunk that tells alone what it is about is a ``single_chunk_answers`` reject;
- a ``comparison`` question without a word that compares ("than", "or", "difference",
  "比", "还是"...), or a ``conditional`` one without a condition ("if", "unless", "如果",
  "的话"...) (:func:`lacks_type_words`): it asks one fact, as "哪个流程要求在合并请求中包含正向迁移
  脚本、回滚脚本以及运行时长？" (kept as a comparison in the read of 2026-11-27 in
  ``benchmarks/results/generate_review.md``) and "What is the path to store secrets in Forge
  Vault?" (kept as conditional). ``metadata.checks.no_words_of_type`` names the type asked
  for; its reference contexts are the chunk its reference is copied from, when there is one.

A question whose style hides words (misspelled) is checked in its original wording.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ragmeter.data.text import HAN, split_sentences, tokenize
from ragmeter.data.words import content_words
from ragmeter.generate.anchors import TermIndex, term_index, unanchored
from ragmeter.generate.compose import bridge_statement
from ragmeter.generate.graph import KnowledgeGraph
from ragmeter.generate.synthesize import Draft, SynthesisError, reply_text
from ragmeter.judges.base import ANSWERABLE_LINE, JudgeError, LLMJudge
from ragmeter.judges.prompts import PromptBook

#: P(yes) at or above which a verdict counts as yes.
THRESHOLD = 0.5
#: P(yes) of the ``testset_answers`` verdict below which a reference does not answer its question.
#: Lower than :data:`THRESHOLD`: the packaged judge's P(yes) is low for right answers too. Set on a
#: calibration set, not on a reported run (ClapNQ questions with their reference answer and with
#: a sentence of the same passage that does not answer them, and such pairs on the example
#: knowledge base, en and zh; see ``benchmarks/results/generate_review.md``): no right answer
#: scored below 0.43; a reference on another subject scores lower, a wrong sentence on the same
#: subject does not (0.39 to 0.70), so this check catches the former only.
ANSWERS = 0.35
#: The JSON the judge answers a question with (``testset_answer``).
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
_QA_LABELS = {"en": ("Question: ", "Answer: "), "zh": ("问题：", "答案：")}
#: Chunks of the knowledge base searched for the answer to an "unanswerable" question.
TOP_K = 3
#: Cosine of two questions' embeddings at or above which the later one is a near-duplicate.
DUPLICATE = 0.9

_LEAKS = {
    "en": re.compile(
        r"\b(?:according to|based on|in|from|as (?:stated|mentioned|described|shown) in) (?:the |this |these )?"
        r"(?:given |provided |above |following )?(?:passages?|contexts?|texts?|documents?|excerpts?|articles?|snippets?|paragraphs?)\b"
        r"|\b(?:the|this) (?:passage|context|text|excerpt|snippet|paragraph) (?:says|states|mentions|describes)\b"
        r"|\b(?:does|do) the (?:passage|context|text|excerpt|snippet|paragraph) (?:say|state|mention|describe)\b"
        r"|\b(?:provided|given|above) (?:passage|context|text|excerpt|information)\b|\binformation (?:provided|given)\b"
        r"|\b(?:the|these|both|two) (?:two )?(?:contexts|passages|excerpts|snippets)\b|\b(?:between|of) (?:the|these) two\s*\?\s*$",
        re.IGNORECASE,
    ),
    "zh": re.compile(
        r"根据(?:上文|本文|原文|文中|文章|材料|段落|上下文|这段|该段|该文|以上)|文中|上下文|上文|原文|这段文字|该文档|本段|以上内容|材料中|这两段|两段(?:文字|材料|内容)"
    ),
}

_NUMBER = re.compile(r"[\d.,:/%-]+")
#: A number in digits, or a word of Latin letters (and digits): what :func:`names` looks at.
_NAME_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[A-Za-z][A-Za-z0-9]*(?:['’][A-Za-z]+)?")
_SENTENCE_END = re.compile(r"(?:^|[.?!。？！:：]\s*)$")
_POSSESSIVE = re.compile(r"['’]s$")
_HAN = re.compile(f"[{HAN}]")
_RELABELLED = ("reasoning", "multi_hop")
#: Most content words a reasoning question's reference may add to the question and still be
#: a fact one sentence states (see :func:`stated_span`).
STATED_WORDS = 3
#: Words without which a question is not of its type: a comparison names what it compares
#: ("than", "or", "difference", "比", "还是"...), a conditional question its condition ("if",
#: "unless", "如果", "的话"...; "when" only after the question's first word: "When is the
#: freeze?" asks a date). See :func:`lacks_type_words`.
_TYPE_WORDS = {
    ("comparison", "en"): re.compile(
        r"\b(?:than|versus|vs|compared?|comparing|comparison|differ(?:s|ent|ence|ences)?|both|either|whereas|while|same|similar"
        r"|unlike|alike|between|or|more|less|fewer|most|least|longer|shorter|earlier|later|older|newer|higher|lower|larger"
        r"|smaller|bigger|faster|slower|better|worse)\b",
        re.IGNORECASE,
    ),
    # "更" and "最" compare, not in "更新" (update) or "最后" (last).
    ("comparison", "zh"): re.compile(r"比|区别|不同|差异|差别|异同|还是|更(?![新改换正])|一样|相同|分别|两者|二者|之间|最(?![近后初终])"),
    ("conditional", "en"): re.compile(
        r"\b(?:if|unless|in case|provided|assuming|suppose|supposing|as long as|whenever)\b|\w[\s,]+when\b", re.IGNORECASE
    ),
    ("conditional", "zh"): re.compile(r"如果|假如|假设|若|要是|倘若|一旦|的话|只要|除非|万一|情况下|当.{1,30}?时"),
}
_NUMBERS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()  # noqa: SIM905
_YES_NO = re.compile(r"\s*(?:(?:yes|no)\b|(?:是的|是|不是|不|否|对|不对|可以|不可以|能|不能|会|不会)[，,。.！!])", re.IGNORECASE)
_NUMBER_WORDS = frozenset(content_words(" ".join(_NUMBERS)))
_NUMBER_WORD = re.compile(rf"\b(?:{'|'.join(_NUMBERS)})\b", re.IGNORECASE)


@dataclass
class Verdict:
    """The filter's decision on one question.

    Attributes:
        kept: The question passed every check.
        reason: Which check rejected it (``source_leak``...), or ``None``.
        detail: The rejection in words.
        checks: What each check measured (P(yes) of the verdicts, chunks searched).
        relabel: The type a kept question really is, when not the one asked for
            (``single_fact`` for a copied answer), else ``None``.
        needs: The ids of the only chunks a relabelled question needs (the chunk its
            reference is copied from, which for a multi-hop question is also the chunk the
            judge finds answers it alone), else ``None`` (all of its chunks).
    """

    kept: bool
    reason: str | None = None
    detail: str | None = None
    checks: dict[str, Any] = field(default_factory=dict)
    relabel: str | None = None
    needs: tuple[str, ...] | None = None


def names(question: str) -> list[str]:
    """The numbers and names of ``question``, lower-cased, in order, each once.

    A number is a run of digits ("180", "2010", "3.5"). A name is a word of Latin letters that
    is written like one: in Chinese text any such word ("Forge", "CI", "SEV1"); in English a
    word with a digit or with a capital after its first letter ("SEV1", "FIRA", "iPhone"),
    or a capitalised word that does not begin a sentence ("Harbor", "Quest", "Nora"; "I" is not
    a name). A possessive "'s" is dropped ("nora"). A name that begins the question, such as
    "Nora" in "Nora said what?", is not seen: it reads like any first word."""
    chinese = bool(_HAN.search(question))
    found: dict[str, None] = {}
    for match in _NAME_TOKEN.finditer(question):
        word = match.group(0)
        if word[0].isdigit():
            found[word] = None
            continue
        core = _POSSESSIVE.sub("", word)
        begins = bool(_SENTENCE_END.search(question[: match.start()]))
        written_as_name = any(ch.isdigit() for ch in core) or any(ch.isupper() for ch in core[1:])
        capitalised = core[0].isupper() and not begins and core not in ("I", "I'm", "I'd", "I've", "I'll")
        if chinese or written_as_name or capitalised:
            found[core.lower()] = None
    return list(found)


def dropped_names(original: str, rewritten: str) -> list[str]:
    """The :func:`names` of ``original`` that ``rewritten`` leaves out.

    A number must be in ``rewritten`` as that number (English number words up to twenty count
    as digits: "5" is kept by "five"); a name as a word that begins with it, less a plural
    "s", and adds at most three letters ("Canadians" is kept by "canadian"), or only a plural "s" to a
    name of three letters or fewer ("US" is not kept by "use").
    Case is ignored.

    Args:
        original: The question as written, before its style.
        rewritten: The question in its style (persona, colloquial, web-search keywords).
    """
    words = rewritten.lower()
    digits = _in_digits(words)
    lost = []
    for name in names(original):
        if name[0].isdigit():
            found = re.search(rf"(?<![\d.,:]){re.escape(name)}(?![\d]|[.,:]\d)", digits)
        else:  # a name may be a number word ("the Big Three"): looked for as written
            stem = name[:-1] if len(name) > 3 and name.endswith("s") else name
            ending = "s?" if len(stem) <= 3 else "[a-z]{0,3}"  # "ci" is kept by "cis", "us" not by "use"
            found = re.search(rf"(?<![a-z0-9]){re.escape(stem)}{ending}(?![a-z0-9])", words)
        if not found:
            lost.append(name)
    return lost


def lacks_type_words(question: str, kind: str, lang: str) -> bool:
    """``question``, asked as a ``kind`` question, has none of the words that type needs: a
    "comparison" that compares nothing ("Which process requires a rollback script?"), a
    "conditional" question without a condition ("What is the path to store secrets in Forge
    Vault?"). Other types have no such words: never.

    Args:
        question: The question as written, before its style.
        kind: The type it was asked as.
        lang: Its language (``"en"`` or ``"zh"``).
    """
    pattern = _TYPE_WORDS.get((kind, lang))
    return pattern is not None and not pattern.search(question)


def example_leak(question: str, lang: str, index: TermIndex) -> str | None:
    """A word of ``question`` that the contexts of the generator's own prompt examples hold (a
    fictional city library: "library", "loan", "借阅"...) and no chunk of the knowledge base
    does, or ``None``.

    Args:
        question: The question as the judge wrote it, before its style (a persona or colloquial
            rewrite may add everyday words such as "week" that a small knowledge base lacks).
        lang: Its language.
        index: The knowledge base's :class:`~ragmeter.generate.anchors.TermIndex`.

    Numbers, in digits or words, are not counted: a conditional question may bring its own."""
    words = sorted(w for w in content_words(question) & _example_words(lang) if index.frequency[w] == 0)
    return words[0] if words else None


@lru_cache(maxsize=2)
def _example_words(lang: str) -> frozenset[str]:
    """Content words of the contexts in the examples of the ``testset_*`` prompts of ``lang``,
    numbers (in digits or words) left out."""
    book = PromptBook(lang)
    shared = [
        example.get("shared", {})
        for name in book.task_names()
        if name.startswith("testset_")
        for example in book.task(name).get("examples", [])
    ]
    texts = [text for fields in shared for key in ("context", "contexts") for text in _as_list(fields.get(key, []))]
    words = set().union(*(content_words(text) for text in texts))
    return frozenset(w for w in words if not _NUMBER.fullmatch(w) and w not in _NUMBER_WORDS)


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def leak(text: str) -> str | None:
    """The phrase of ``text`` that points at its source, or ``None``."""
    for pattern in _LEAKS.values():
        found = pattern.search(text)
        if found:
            return found.group(0)
    return None


def restates(reference: str, *questions: str) -> bool:
    """The reference only restates the question: it has content words (:func:`content_words`)
    and each of them is in one of ``questions`` (the question as asked, before its style).

    An answer with any word of its own ("Two approvals", "需要 DBA 审批", a name, a number) is
    not a restatement; nor is a bare "Yes" or "No" (a yes/no question's answer), nor a
    reference of stop words only.

    Args:
        reference: The reference answer.
        questions: The question's wordings.
    """
    words = content_words(reference)
    asked = set().union(*(content_words(q) for q in questions))
    return bool(words) and words <= asked


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
    glue = "" if lang == "zh" else " "

    def joined(text: str) -> str:
        return glue + glue.join(tokenize(text)) + glue

    span = joined(reference)
    for chunk_id, text in zip(ids, contexts, strict=True):
        if any(span in joined(sentence) for sentence in split_sentences(text)):
            return chunk_id
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


def _words(text: str) -> set[str]:
    """:func:`content_words` of ``text``, English numbers up to twenty in digits."""
    return content_words(_in_digits(text))


def _in_digits(text: str) -> str:
    """``text`` with English numbers up to twenty written in digits."""
    return _NUMBER_WORD.sub(lambda m: str(_NUMBERS.index(m.group(0).lower()) + 1), text)


async def check(draft: Draft, graph: KnowledgeGraph, vectors: np.ndarray, judge: LLMJudge, embed) -> Verdict:
    """Run the per-question checks on ``draft``, cheapest first, stopping at the first failure.

    Args:
        draft: The generated question.
        graph: The knowledge graph (the chunks searched for unanswerable questions).
        vectors: The chunks' embeddings, one row per chunk of ``graph``.
        judge: The LLM judge giving the verdicts.
        embed: ``async (texts) -> array`` of L2-normalised embeddings.
    """
    checks: dict[str, Any] = {}
    asked = draft.original if draft.slot.style == "misspelled" else draft.question
    for text in dict.fromkeys((draft.question, draft.original, draft.reference)):
        found = leak(text)
        if found:
            where = "reference" if text == draft.reference else "question"
            return Verdict(False, "source_leak", f"the {where} points at its source: {found!r}", checks)
    if draft.question != draft.original and draft.slot.style != "misspelled":  # misspellings are made in code
        lost = dropped_names(draft.original, draft.question)
        if lost:
            listed = ", ".join(repr(name) for name in lost)
            detail = f"the {draft.slot.style} rewrite {draft.question!r} leaves out {listed} of the question as written: {draft.original!r}"
            return Verdict(False, "rewrite_drops_names", detail, checks)
    lang = draft.slot.lang
    # An unanswerable question brings a word the knowledge base lacks by design; its swap step
    # refuses the things its prompt's examples name (compose.py).
    word = example_leak(draft.original, lang, term_index(graph)) if draft.answerable else None
    if word is not None:
        detail = f"the question uses {word!r}, a word of the generator's own prompt examples that no chunk of the knowledge base holds"
        return Verdict(False, "copies_prompt_example", detail, checks)
    if not draft.answerable:
        return await _check_unanswerable(asked, lang, graph, vectors, judge, embed, checks)
    premise = list(draft.contexts)
    p = (await judge.verdicts("answerable", {"premise": premise}, [asked], lang))[0].p_yes
    checks["answerable_from_contexts"] = round(p, 4)
    if p < THRESHOLD:
        return Verdict(False, "unanswerable_from_contexts", f"the judge finds no answer in the reference contexts (P={p:.2f})", checks)
    p = (await judge.verdicts("supported", {"premise": premise}, [draft.reference], lang))[0].p_yes
    checks["reference_supported"] = round(p, 4)
    if p < THRESHOLD:
        return Verdict(False, "reference_unsupported", f"the reference is not supported by the reference contexts (P={p:.2f})", checks)
    p = (await judge.verdicts("testset_answers", {"question": asked}, [draft.reference], lang))[0].p_yes
    checks["reference_answers_question"] = round(p, 4)
    if p < ANSWERS:
        return Verdict(
            False, "reference_does_not_answer", f"the judge finds the reference does not answer the question (P={p:.2f})", checks
        )
    rejected = await _check_own_answer(asked, draft.reference, premise, lang, judge, checks)
    if rejected is not None:
        return rejected
    if draft.slot.type == "reasoning":
        copied = stated_span(draft.reference, draft.original, draft.contexts, draft.context_ids, lang)
    else:
        copied = copied_span(draft.reference, draft.contexts, draft.context_ids, lang) if draft.slot.type in _RELABELLED else None
    if copied is not None:
        checks["copied_from"] = copied
    relabel = "single_fact" if draft.slot.type == "reasoning" and copied else None
    if draft.slot.type == "multi_hop" and draft.composition:
        rejected = await _check_bridge(draft.composition, draft.contexts, lang, judge, checks)
        if rejected is not None:
            return rejected
    elif draft.slot.type == "multi_hop":
        for chunk_id, text in zip(draft.context_ids, draft.contexts, strict=True):
            p = (await judge.verdicts("answerable", {"premise": text}, [asked], lang))[0].p_yes
            checks[f"answerable_from {chunk_id}"] = round(p, 4)
            if p >= THRESHOLD and chunk_id == copied:
                relabel = "single_fact"  # a good question, of one chunk: kept as what it is
                break
            if p >= THRESHOLD:
                return Verdict(False, "single_chunk_answers", f"{chunk_id} alone answers it (P={p:.2f})", checks)
    if lacks_type_words(draft.original, draft.slot.type, lang):
        relabel = "single_fact"  # it asks one fact: kept as what it is, its type written again in a top-up round
        copied = copied_span(draft.reference, draft.contexts, draft.context_ids, lang)
        checks["no_words_of_type"] = draft.slot.type
        if copied is not None:
            checks["copied_from"] = copied
    if restates(draft.reference, draft.question, draft.original):
        return Verdict(False, "reference_restates_question", "the reference only repeats words of the question: it answers nothing", checks)
    problem = unanchored(asked, draft.contexts, term_index(graph))
    if problem is not None:
        return Verdict(False, "question_not_self_contained", problem, checks)
    return Verdict(True, checks=checks, relabel=relabel, needs=(copied,) if relabel and copied else None)


async def _check_own_answer(
    asked: str, reference: str, premise: list[str], lang: str, judge: LLMJudge, checks: dict[str, Any]
) -> Verdict | None:
    """``reference_disagrees``: the judge answers ``asked`` from ``premise`` without seeing the
    reference (``testset_answer``), then the reference must be supported by that question and
    answer (the ``supported`` verdict). ``None`` when it is."""
    reply = await judge.generate("testset_answer", {"contexts": premise, "question": asked}, ANSWER_SCHEMA, lang)
    try:
        own = reply_text(reply, "answer")
    except SynthesisError as exc:
        raise JudgeError(str(exc)) from None
    checks["judge_answer"] = own
    question_label, answer_label = _QA_LABELS[lang]
    stated = f"{question_label}{asked}\n{answer_label}{own}"
    p = (await judge.verdicts("supported", {"premise": [stated]}, [reference], lang))[0].p_yes
    checks["reference_agrees_with_judge_answer"] = round(p, 4)
    if p < THRESHOLD:
        detail = (
            f"answering the question from the reference contexts, the judge says {own!r}, which does not support the reference (P={p:.2f})"
        )
        return Verdict(False, "reference_disagrees", detail, checks)
    return None


async def _check_bridge(
    notes: Mapping[str, Any], contexts: Sequence[str], lang: str, judge: LLMJudge, checks: dict[str, Any]
) -> Verdict | None:
    """Reject a question composed through a bridge phrase (:mod:`ragmeter.generate.compose`)
    whose description of the phrase its own chunk does not support, or that the chunk that
    answers it could tell alone; else ``None``.

    Args:
        notes: The draft's composition (bridge phrase, description, chunk ids).
        contexts: The texts of the described chunk and of the answering chunk, in that order.
        lang: ``"en"`` or ``"zh"``.
        judge: The LLM judge giving the verdicts.
        checks: Where each verdict's P(yes) is recorded.
    """
    statement = bridge_statement(notes["bridge"], notes["description"], lang)
    described, answered = notes["described_in"], notes["answered_in"]
    p = (await judge.verdicts("supported", {"premise": contexts[0]}, [statement], lang))[0].p_yes
    checks[f"description_supported_by {described}"] = round(p, 4)
    if p < THRESHOLD:
        detail = f"{described} does not support what the question says of its subject, {statement!r} (P={p:.2f})"
        return Verdict(False, "bridge_description_unsupported", detail, checks)
    p = (await judge.verdicts("supported", {"premise": contexts[1]}, [statement], lang))[0].p_yes
    checks[f"description_supported_by {answered}"] = round(p, 4)
    if p >= THRESHOLD:
        detail = f"{answered} alone answers it: it also tells what the question is about, {statement!r} (P={p:.2f})"
        return Verdict(False, "single_chunk_answers", detail, checks)
    return None


async def _check_unanswerable(asked: str, lang: str, graph: KnowledgeGraph, vectors: np.ndarray, judge: LLMJudge, embed, checks) -> Verdict:
    query = (await embed([asked]))[0]
    order = np.argsort(-(vectors @ query), kind="stable")[:TOP_K] if len(vectors) else np.zeros(0, dtype=int)
    top = [graph.chunks[int(i)] for i in order]
    checks["searched"] = [c.id for c in top]
    for chunk in top:  # one chunk at a time, so that any chunk fits the judge's window
        p = (await judge.verdicts("answerable", {"premise": chunk.text}, [asked], lang))[0].p_yes
        checks[f"answerable_from {chunk.id}"] = round(p, 4)
        if p >= ANSWERABLE_LINE:
            return Verdict(False, "answer_in_knowledge_base", f"the judge finds the answer in {chunk.id} (P={p:.2f})", checks)
    problem = unanchored(asked, None, term_index(graph))
    if problem is not None:
        return Verdict(False, "question_not_self_contained", problem, checks)
    return Verdict(True, checks=checks)


def near_duplicates(ids: Sequence[str], vectors: np.ndarray, threshold: float = DUPLICATE) -> dict[str, tuple[str, float]]:
    """Questions that repeat an earlier one: id -> (the earlier id, cosine).

    Args:
        ids: The kept questions' ids, in order; the first of two near-duplicates stays.
        vectors: Their L2-normalised embeddings, one row each.
        threshold: Cosine at or above which two questions are near-duplicates.
    """
    duplicates: dict[str, tuple[str, float]] = {}
    kept: list[int] = []
    for i, sample_id in enumerate(ids):
        if kept:
            cosines = vectors[kept] @ vectors[i]
            best = int(np.argmax(cosines))
            if cosines[best] >= threshold:
                duplicates[sample_id] = (ids[kept[best]], round(float(cosines[best]), 4))
                continue
        kept.append(i)
    return duplicates
