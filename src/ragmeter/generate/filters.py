"""The quality filter: which generated questions are kept, and why the others are not.

Checks, in this order (cheapest first, but for the model-free checks after the judge's); the first that fails rejects the question with its reason:

- ``source_leak``: the question, or its reference, points at its source ("according to the
  passage", "the two contexts", "what is the difference between the two?", "根据文中",
  "上下文"...): a user of the system never saw it.
- ``rewrite_drops_names`` (no model, :func:`~ragmeter.generate.wording.dropped_names`; the persona, colloquial and
  web-search styles): the question's rewrite in its style leaves out a number or a name that
  the question as written holds, or the word an unanswerable question was given that the
  knowledge base lacks ("销售经理" of zh q0013, read on 2026-12-04), so it no longer asks the same thing. "If a job takes longer
  than 180 minutes, what happens to it?" became the keywords "job duration consequences"; a
  ClapNQ question on how many years after a named game another was released became keywords
  naming neither game nor year, and was kept (the filter's judge checks read it beside its
  chunk; the check on new questions in ``benchmarks/results/generate_review.md``).
- ``copies_prompt_example`` (no model, :func:`~ragmeter.generate.wording.example_leak`; answerable questions): the question,
  as written before its style, uses a word of the contexts of the generator's own prompt
  examples (a fictional city library) that no chunk of the knowledge base holds: "the
  library's deployment process" (en q0004 of the check on new questions in
  ``benchmarks/results/generate_review.md``), or "14 岁读者 还书罚款", a question made of the
  Chinese examples' overdue-fines rule (zh q0002 there). Or its reference copies words in a
  row from an answer of those examples, words its chunks lack among them
  (:func:`~ragmeter.generate.wording.example_phrase`): "96 hours: 48 hours before the launch
  plus two renewals of three weeks each", for the longest ad-hoc freeze.
- ``reference_answers_elsewhere`` (no model, :func:`~ragmeter.generate.spans.number_elsewhere`;
  answerable questions): the question states a number in digits that its reference's chunk
  holds, but only in other paragraphs than the one the reference is copied from word for word:
  the reference answers something else. "如果一个表…运行时长超过 5 分钟，需要进行什么操作？"
  was kept with a sentence on destructive changes from another section of its chunk, and the
  judge's own answer copied the same sentence (zh q0005 of the read of 2026-11-29 in
  ``benchmarks/results/generate_review.md``).
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
  A question composed through a bridge phrase is answered as its bridge question, which names
  the phrase: asked through the description, the judge answered with the phrase itself and
  rejected right references (ClapNQ q0014, q0020 of the read of 2026-12-04); the description is
  the bridge checks' to judge.
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
- ``reference_restates_question`` (no model, :func:`~ragmeter.generate.wording.restates`): the reference adds no
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
  not 0.5), unless it asks about a made-up name no chunk holds a word of
  (:func:`~ragmeter.generate.swap.unknown_name`: the lenient verdict took a chunk on Forge CI
  for the answer on "Jenkins"); then its self-containment, as above, every word counting.
- ``near_duplicate`` (:func:`near_duplicates`, once all questions are written): a kept
  question whose embedding (a composed one's bridge question's) is at least :data:`DUPLICATE` close to an earlier kept one.

A question that passes may be relabelled (:attr:`Verdict.relabel`) by the type check
(:func:`~ragmeter.generate.spans.copied_span`, no model), and is then kept as a ``single_fact`` question (its sample's
``metadata.original_type`` keeps the type asked for, ``metadata.checks.copied_from`` the chunk),
whose reference contexts are then that one chunk alone (:attr:`Verdict.needs`; the others
are named in ``metadata.dropped_context_ids``):

- a ``reasoning`` question whose reference is copied word for word from one sentence of one
  of its chunks, or adds to the question at most :data:`~ragmeter.generate.spans.STATED_WORDS` content words that one
  sentence holds (:func:`~ragmeter.generate.spans.stated_span`): the answer is stated, no inference is needed ("8
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
  "的话"...) (:func:`~ragmeter.generate.wording.lacks_type_words`): it asks one fact, as "哪个流程要求在合并请求中包含正向迁移
  脚本、回滚脚本以及运行时长？" (kept as a comparison in the read of 2026-11-27 in
  ``benchmarks/results/generate_review.md``) and "What is the path to store secrets in Forge
  Vault?" (kept as conditional); or a ``reasoning`` one with no word of a calculation, of a
  rule applied to a case, or of a why ("total", "longest", "before", "if", "would", "why", a
  yes/no question; "总共", "最长", "如果", "为什么", "吗"...), as "What is the maximum size of a
  cache for a project?" and "Forge 命令行工具用于执行什么？" (both kept as reasoning in the
  runs of 2026-11-27).
  ``metadata.checks.no_words_of_type`` names the type asked for; its reference contexts are
  the chunk its reference is stated in (:func:`~ragmeter.generate.spans.stated_span` for a
  reasoning question) or copied from, when there is one, or else the one chunk that holds
  every word of the reference any of its chunks holds
  (:func:`~ragmeter.generate.spans.covering_span`, ``metadata.checks.answered_from``).

A question whose style hides words (misspelled) is checked in its original wording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragmeter.generate.anchors import term_index, unanchored
from ragmeter.generate.bridges import bridge_statement
from ragmeter.generate.graph import KnowledgeGraph
from ragmeter.generate.spans import copied_span, covering_span, number_elsewhere, stated_span
from ragmeter.generate.synthesize import Draft, SynthesisError, reply_text
from ragmeter.generate.wording import dropped_names, example_leak, example_phrase, lacks_type_words, leak, restates
from ragmeter.judges.base import ANSWERABLE_LINE, JudgeError, LLMJudge

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

_RELABELLED = ("reasoning", "multi_hop")


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
    lang = draft.slot.lang
    rejected = _check_wording(draft, graph)
    if rejected is not None:
        return rejected
    if not draft.answerable:
        return await _check_unanswerable(draft, asked, graph, vectors, judge, embed, checks)
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
    own_asked = (draft.composition or {}).get("bridge_question", asked)  # a bridge question: asked naming its phrase
    rejected = await _check_own_answer(own_asked, draft.reference, premise, lang, judge, checks)
    if rejected is not None:
        return rejected
    return await _check_type(draft, asked, graph, judge, checks)


def _check_wording(draft: Draft, graph: KnowledgeGraph) -> Verdict | None:
    """The model-free checks made before any judge call: ``source_leak``,
    ``rewrite_drops_names``, ``copies_prompt_example`` and ``reference_answers_elsewhere``;
    ``None`` when all pass."""
    for text in dict.fromkeys((draft.question, draft.original, draft.reference)):
        found = leak(text)
        if found:
            where = "reference" if text == draft.reference else "question"
            return Verdict(False, "source_leak", f"the {where} points at its source: {found!r}")
    if draft.question != draft.original and draft.slot.style != "misspelled":  # misspellings are made in code
        absent = (draft.composition or {}).get("absent_from_knowledge_base", ())  # what makes it unanswerable
        lost = dropped_names(draft.original, draft.question) + [w for w in absent if w.lower() not in draft.question.lower()]
        if lost:
            listed = ", ".join(repr(name) for name in lost)
            detail = f"the {draft.slot.style} rewrite {draft.question!r} leaves out {listed} of the question as written: {draft.original!r}"
            return Verdict(False, "rewrite_drops_names", detail)
    # An unanswerable question brings a word the knowledge base lacks by design; its swap step
    # refuses the things its prompt's examples name (swap.py).
    word = example_leak(draft.original, draft.slot.lang, term_index(graph)) if draft.answerable else None
    if word is not None:
        detail = f"the question uses {word!r}, a word of the generator's own prompt examples that no chunk of the knowledge base holds"
        return Verdict(False, "copies_prompt_example", detail)
    phrase = example_phrase(draft.reference, draft.contexts, draft.slot.lang) if draft.answerable else None
    if phrase is not None:
        detail = f"the reference copies {phrase!r} from an answer of the generator's own prompt examples; its chunks do not say it"
        return Verdict(False, "copies_prompt_example", detail)
    number = number_elsewhere(draft.original, draft.reference, draft.contexts, draft.slot.lang) if draft.answerable else None
    if number is not None:
        detail = f"the question states {number}, which its chunk holds in another paragraph than the one its reference is copied from"
        return Verdict(False, "reference_answers_elsewhere", detail)
    return None


async def _check_type(draft: Draft, asked: str, graph: KnowledgeGraph, judge: LLMJudge, checks: dict[str, Any]) -> Verdict:
    """The checks of an answerable question whose reference passed the judge's: that it is of
    its type (relabelled, or ``single_chunk_answers`` and the bridge checks of a multi-hop
    question), then ``reference_restates_question`` and ``question_not_self_contained``.

    Args:
        draft: The generated question.
        asked: The wording the judge reads (the original of a misspelled question).
        graph: The knowledge graph.
        judge: The LLM judge giving the verdicts.
        checks: What the earlier checks measured; this adds to it.
    """
    lang = draft.slot.lang
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
        copied = copied or copied_span(draft.reference, draft.contexts, draft.context_ids, lang)
        checks["no_words_of_type"] = draft.slot.type
        if copied is not None:
            checks["copied_from"] = copied
        else:
            copied = covering_span(draft.reference, draft.contexts, draft.context_ids)
            if copied is not None:
                checks["answered_from"] = copied
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


async def _check_unanswerable(draft: Draft, asked: str, graph: KnowledgeGraph, vectors, judge: LLMJudge, embed, checks) -> Verdict:
    lang, query = draft.slot.lang, (await embed([asked]))[0]
    order = np.argsort(-(vectors @ query), kind="stable")[:TOP_K] if len(vectors) else np.zeros(0, dtype=int)
    unknown = (draft.composition or {}).get("unknown_to_knowledge_base", False)  # no chunk is about it
    top = [] if unknown else [graph.chunks[int(i)] for i in order]
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
