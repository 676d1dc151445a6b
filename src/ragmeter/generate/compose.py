"""Multi-hop and unanswerable questions, composed in code from small steps the judge can do.

The 1.5B judge, asked in one prompt for a question that needs two chunks, writes a question
one chunk answers; asked for a question the knowledge base does not answer, it asks what its
chunk says (0 of 15 and 0 of 12 survived the filter as their type in
``benchmarks/results/generate_review.md``). So each of its steps here is small, and each
reply is checked in code before the next step:

- **multi-hop, by a bridge** (as MuSiQue composes its questions): two linked chunks A and B
  mention one phrase E (:func:`~ragmeter.generate.bridges.bridge_phrases` picks it, in code). The judge writes a question
  about E that a sentence of B answers (:func:`sentence_about` picks it; when the sentence
  states an amount, :func:`answer_amount` takes it as the answer and the judge writes only the
  question, ``testset_bridge_question_for``, else ``testset_bridge_question``; it must name
  E, as the thing E names in B, not as a word of a longer name, must not hold its answer,
  and A must not state its answer), then gives, from A alone and without naming E, the kind
  of thing E is and a fact A states of it (``testset_bridge_description``). The code writes
  the description, "the <kind> that <fact>" or "<fact>的<kind>" (:func:`~ragmeter.generate.descriptions.described_as`: a
  common compound's kind is its last word), which must hold a content word that A holds and B does not, and not
  give B's answer away. The code puts the description in place of E (:func:`~ragmeter.generate.bridges.substitute`): the question now
  needs A to tell what it is about and B to answer it. Reference: B's answer (for an amount,
  the sentence stating it); reference contexts: A, B. The quality filter then asks
  the judge whether A supports "E is <description>" and whether B does too (then B alone
  answers it).
- **unanswerable, by a swapped subject**: the judge writes a single-fact question from the
  seed chunk (``testset_single_fact``), then names the words of it that say what it asks
  about and three other things of the same kind (``testset_unanswerable_swap``; asked to
  rewrite the question itself, it often gave it back unchanged). The subject must be words of
  the question; the code puts each other thing in its place (:func:`~ragmeter.generate.bridges.substitute`; not the
  subject again, nor a thing the prompt's examples name) and keeps the first question that
  brings a word found nowhere in the whole knowledge base, or a name found nowhere whole
  (:func:`~ragmeter.generate.swap.brought`).

A stand-in judge whose replies are placeholders (``--dry-run``'s: ``placeholders`` is true)
is let through every check between steps, so that the estimate counts every step and the
filter's checks after them.

The quality filter then checks these drafts as any other (a bridge question is rejected,
never relabelled, when one chunk answers it; an unanswerable one when the closest chunks of
the knowledge base answer it). A failed step raises :class:`SynthesisError`, and the top-up
rounds write another question in its place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragmeter.data.text import split_sentences
from ragmeter.data.words import content_words
from ragmeter.generate.bridges import bridge_phrases, bridge_roles, phrase_pattern, substitute
from ragmeter.generate.chunking import Chunk
from ragmeter.generate.descriptions import described_as
from ragmeter.generate.graph import KnowledgeGraph
from ragmeter.generate.plan import Slot
from ragmeter.generate.swap import SWAP, swap_subject
from ragmeter.generate.synthesize import Q_SCHEMA, QA_SCHEMA, Draft, SynthesisError, reply_text, restyle
from ragmeter.judges.base import LLMJudge, ReplyCutOff

#: The question types written here, and the name of each one's method (in the samples'
#: ``metadata.composition.method`` and in the journal's fingerprints).
METHODS = {"multi_hop": "bridge", "unanswerable": SWAP}
#: Bridge phrases tried per multi-hop question, the best first.
ATTEMPTS = 3
#: Longest description of a bridge phrase: words (English), characters (Chinese).
DESCRIPTION_WORDS, DESCRIPTION_CHARS = 20, 40
#: Fewest content words a description has besides those of the phrase it stands for
#: ("incident" for "SEV1 incident" describes nothing).
DESCRIPTION_MIN_WORDS = 2
_DESCRIPTION_SCHEMA = {
    "type": "object",
    "properties": {"kind": {"type": "string"}, "fact": {"type": "string"}},
    "required": ["kind", "fact"],
}
#: An article or determiner right before a word: the word opens a noun phrase ("the company-wide").
_ARTICLE_BEFORE = re.compile(r"(?<![\w-])(?:the|a|an|this|that|each|every|any|its|their|our|your)[ \t]+$", re.IGNORECASE)
_NUMBER_WORDS = "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|hundred"
_PRONOUN_ONE = re.compile(r"one\s+(?:of\b|\w+s\b)", re.IGNORECASE)
#: An amount a sentence states (see :func:`answer_amount`), by language.
_AMOUNTS = {
    "en": re.compile(
        rf"\b(?:(?:at least|at most|up to|more than|less than|within|after|every)\s+)?(?:\d[\d:.,]*\d|\d|{_NUMBER_WORDS})\b%?"
        r"(?:\s+(?:million|thousand|business|working|calendar))?(?:\s+[A-Za-z]+)?",
        re.IGNORECASE,
    ),
    "zh": re.compile(
        r"(?:(?:至少|最多|超过|不超过|每)\s*)?(?:\d+(?:[.:：]\d+)?|[一二两三四五六七八九十百千万]+)\s*"
        r"(?:个工作日|工作日|个月|小时|分钟|个|名|次|份|条|位|天|周|月|年|秒|GB|MB|%|％)(?:内|以内|以上)?"
    ),
}


async def compose(slot: Slot, graph: KnowledgeGraph, judge: LLMJudge) -> Draft:
    """Write the question of a multi-hop or unanswerable ``slot`` (:data:`METHODS`).

    Args:
        slot: What to write (type, style, persona, chunks).
        graph: The knowledge graph the slot's chunks index into.
        judge: The LLM that writes (cached and metered by the caller's setup).

    Raises:
        ValueError: The slot's type is not composed here.
        SynthesisError: The slot has no chunks, or a step's reply failed its check.
        JudgeError: The judge gave no answer.
    """
    if slot.type not in METHODS:
        raise ValueError(f"{slot.type} questions are not composed; known: {', '.join(METHODS)}")
    if not slot.chunks:
        raise SynthesisError(f"no related pair of chunks for a {slot.type} question (the knowledge graph has no link)")
    if slot.type == "multi_hop":
        return await _bridge(slot, graph, judge)
    return await swap_subject(slot, graph, judge)


async def _bridge(slot: Slot, graph: KnowledgeGraph, judge: LLMJudge) -> Draft:
    described, answering = (graph.chunks[i] for i in bridge_roles(slot.chunks))
    phrases = bridge_phrases(described.text, answering.text, slot.lang, graph.chunks)
    if not phrases:
        raise SynthesisError(f"{described.id} and {answering.id} share no phrase to bridge them")
    failures = []
    for phrase in phrases[:ATTEMPTS]:
        try:
            question, answer, description = await _bridge_steps(phrase, described, answering, slot.lang, judge, not judge.placeholders)
        except (SynthesisError, ReplyCutOff) as exc:
            failures.append(f"'{phrase}': {exc}")
            continue
        composed = substitute(question, phrase, description, slot.lang)
        notes = {
            "method": METHODS["multi_hop"], "bridge": phrase, "bridge_question": question, "description": description,
            "described_in": described.id, "answered_in": answering.id,
        }  # fmt: skip
        styled = await restyle(slot, composed, judge)
        return Draft(slot, styled, composed, answer, (described.text, answering.text), (described.id, answering.id), notes)
    raise SynthesisError("no bridge question: " + "; ".join(failures))


async def _bridge_steps(
    phrase: str, described: Chunk, answering: Chunk, lang: str, judge: LLMJudge, checking: bool
) -> tuple[str, str, str]:
    """The question about ``phrase`` that ``answering`` answers, its reference answer, and
    the description of ``phrase`` from ``described``, each checked when ``checking``
    (:class:`SynthesisError`). A question written for an amount is checked against the
    amount, and its reference is the sentence stating it: a bare amount ("40 个") reads as no
    claim to the judge's ``supported`` verdict (P 0.33 to 0.47 for three of them,
    ``benchmarks/results/generate_multi_hop.md``)."""
    about = sentence_about(phrase, answering.text, lang)
    amount = answer_amount(about, phrase, lang)
    if amount is not None:
        fields = {"context": about, "subject": phrase, "answer": amount}
        reply = await judge.generate("testset_bridge_question_for", fields, Q_SCHEMA, lang)
        question, answer, reference = reply_text(reply, "question"), amount, about
    else:
        reply = await judge.generate("testset_bridge_question", {"context": about, "subject": phrase}, QA_SCHEMA, lang)
        question, answer = reply_text(reply, "question"), reply_text(reply, "answer")
        reference = answer
    problem = question_problem(question, answer, phrase, described.text, answering.text, lang) if checking else None
    if problem:
        raise SynthesisError(f"the question {question!r} {problem}")
    reply = await judge.generate("testset_bridge_description", {"context": described.text, "subject": phrase}, _DESCRIPTION_SCHEMA, lang)
    description = described_as(reply_text(reply, "kind"), reply_text(reply, "fact"), phrase, lang)
    problem = description_problem(description, phrase, described.text, answering.text, question, answer, lang) if checking else None
    if problem:
        raise SynthesisError(f"the description {description!r} {problem}")
    return question, reference, description


def sentence_about(phrase: str, text: str, lang: str) -> str:
    """The sentence of ``text`` the bridge question about ``phrase`` is written from: of the
    sentences that name the phrase (headings left out), the one that names it nearest its
    start (the phrase is most likely what the sentence is about), then the longest; ``text``
    itself when none does.

    Given the whole chunk, the packaged judge mostly asked for the phrase instead of about it
    ("What is the name of the channel that ...?" for "incident channel"; see
    ``benchmarks/results/generate_multi_hop.md``).

    Args:
        phrase: The bridge phrase.
        text: The text of the chunk that answers the question.
        lang: ``"en"`` or ``"zh"``.
    """
    pattern = phrase_pattern(phrase, lang)
    ranked = []
    for sentence in split_sentences(text):
        found = pattern.search(sentence)
        if found and not sentence.lstrip().startswith("#"):
            ranked.append(((found.start(), -len(sentence)), sentence))
    return min(ranked)[1] if ranked else text


def answer_amount(sentence: str, phrase: str, lang: str) -> str | None:
    """The amount ``sentence`` states (a number with what it counts: "at least two approvals",
    "5 minutes", "18:00 UTC", "两个工作日内"), outside ``phrase``, as the answer of the bridge
    question: the first after the phrase (in Chinese, where what describes a thing comes
    before it, else the first); ``None`` when it states none ("one" as a pronoun, "one
    sends", "one of", is no amount).

    Given the subject alone, the packaged judge mostly asked for the subject instead of about it;
    given the answer too, it asked about the subject (4 of 6 tries, the 2 others with a wrong
    answer span; ``benchmarks/results/generate_multi_hop.md``).

    Args:
        sentence: The sentence the question is written from (:func:`sentence_about`).
        phrase: The bridge phrase.
        lang: ``"en"`` or ``"zh"``.
    """
    mentions = [(m.start(), m.end()) for m in phrase_pattern(phrase, lang).finditer(sentence)]
    amounts = [
        m
        for m in _AMOUNTS[lang].finditer(sentence)
        if not any(m.start() < end and start < m.end() for start, end in mentions) and not _PRONOUN_ONE.match(m.group(0))
    ]
    phrase_end = mentions[0][1] if mentions else len(sentence)
    chosen = [m for m in amounts if m.start() >= phrase_end] or (amounts if lang == "zh" else [])
    return chosen[0].group(0).strip() if chosen else None


def question_problem(question: str, answer: str, phrase: str, described: str, answering: str, lang: str) -> str | None:
    """What is wrong with ``question`` as the bridge question about ``phrase``, or ``None``:
    it does not name the phrase; it asks nothing but what the phrase is ("Who is Toby?"); in
    English, the phrase is part of a longer name there, so the description would replace half
    of it; it holds every content word of its answer; or ``described`` holds every word the
    answer adds to the question (the chunk meant to say only what the question is about would
    answer it alone).

    Part of a longer name: a capitalised word other than the question's first comes right
    before it ("Forge Vault" for "Vault"); a hyphenated phrase is followed by a content word
    (a hyphenated word before another is the first word of a longer name: "break-glass
    accounts"); or a content word right before or after it (no article) stands next to the
    phrase in ``described`` or ``answering`` too, a word before it only when an article comes
    before that word (a modifier, "the company-wide deployment freeze", not a verb, "may use
    break-glass"); after it, "rollback plan". In their place the description gave "the
    company-wide the period during which..." and "the script that reverses a migration plan".

    Args:
        question: The judge's question about the phrase.
        answer: Its answer.
        phrase: The bridge phrase.
        described: The text of the chunk the phrase will be described from.
        answering: The text of the chunk that answers the question.
        lang: ``"en"`` or ``"zh"``.
    """
    pattern = phrase_pattern(phrase, lang)
    mention = pattern.search(question)
    if mention is None:
        return "does not name it"
    if not content_words(question) - content_words(phrase):
        return "asks only what the subject is: its description, from the other chunk, would answer it"
    if lang != "zh":
        longer = _longer_name(question, mention, phrase, (described, answering))
        if longer:
            return f"names '{longer}', a longer name"
    own = content_words(answer) - content_words(question)
    if content_words(answer) and not own:
        return "writes its own answer"
    if own and own <= content_words(described):
        return "is answered by the chunk the subject is described from, too"
    return None


def _longer_name(question: str, mention: re.Match[str], phrase: str, texts: Sequence[str]) -> str | None:
    """The longer name ``mention`` of ``phrase`` is part of in English ``question`` (see
    :func:`question_problem`), or ``None``."""
    named = mention.group(0)[len(mention.group(1) or "") :]
    before = None if mention.group(1) else re.search(r"([^\W\d_][\w-]*)[ \t]+$", question[: mention.start()])
    if before and question[: before.start()].strip():
        word = before.group(1)
        modifies = _ARTICLE_BEFORE.search(question[: before.start()]) and content_words(word)
        if word[:1].isupper() or (modifies and _adjacent(f"{word} {phrase}", texts)):
            return f"{word} {named}"
    after = re.match(r"[ \t-]+([^\W\d_]+)", question[mention.end() :])
    if after and content_words(after.group(1)) and ("-" in phrase or _adjacent(f"{phrase} {after.group(1)}", texts)):
        return f"{named} {after.group(1)}"
    return None


def _adjacent(words: str, texts: Sequence[str]) -> bool:
    """One of ``texts`` writes ``words`` one after the other (any case, spaces or hyphens between)."""
    pattern = re.compile(r"(?<![\w-])" + r"[ \t-]+".join(re.escape(w) for w in words.split()) + r"(?![\w-])", re.IGNORECASE)
    return any(pattern.search(text) for text in texts)


def description_problem(description: str, phrase: str, source: str, other: str, question: str, answer: str, lang: str) -> str | None:
    """What is wrong with ``description`` as a stand-in for ``phrase`` in ``question``, or
    ``None``: it names the phrase, is longer than :data:`DESCRIPTION_WORDS` words
    (:data:`DESCRIPTION_CHARS` characters in Chinese), has fewer than
    :data:`DESCRIPTION_MIN_WORDS` content words besides the phrase's, has no content word that
    ``source`` (the chunk it must come from) holds and ``other`` does not (then ``other``
    alone could tell what it describes, or it describes from neither: "a request for changes
    to a codebase" for "merge request"), or holds every word the answer adds to the question.

    Args:
        description: The judge's description of the phrase.
        phrase: The bridge phrase it stands for.
        source: The text of the chunk it must be drawn from.
        other: The text of the chunk that answers the question.
        question: The question about the phrase.
        answer: That question's answer.
        lang: ``"en"`` or ``"zh"``.
    """
    if phrase_pattern(phrase, lang).search(description):
        return "names the phrase it stands for"
    if len(description.split()) > DESCRIPTION_WORDS or (lang == "zh" and len(description) > DESCRIPTION_CHARS):
        return "is too long for a noun phrase"
    words = content_words(description)
    if len(words - content_words(phrase)) < DESCRIPTION_MIN_WORDS:
        return f"says too little: fewer than {DESCRIPTION_MIN_WORDS} content words besides the phrase's own"
    if not words & (content_words(source) - content_words(other)):
        return "has no word that only the chunk it describes from holds"
    own = content_words(answer) - content_words(question)
    if own and own <= words:
        return "gives the answer away"
    return None
