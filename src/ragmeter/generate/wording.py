"""Model-free checks of a generated question's wording, used by the quality filter
(:mod:`ragmeter.generate.filters`): a question or reference that points at its source
(:func:`leak`), a style rewrite that loses a number or name (:func:`dropped_names`), a word of
the generator's own prompt examples (:func:`example_leak`) or a phrase of their answers
(:func:`example_phrase`), a type without its words
(:func:`lacks_type_words`), a reference that restates the question (:func:`restates`). Where a
reference stands in its chunks is :mod:`ragmeter.generate.spans`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from ragmeter.data.numerals import chinese_numbers
from ragmeter.data.text import HAN, tokenize
from ragmeter.data.words import content_words
from ragmeter.generate.anchors import TermIndex
from ragmeter.judges.prompts import PromptBook

_LEAKS = {
    "en": re.compile(
        r"\b(?:according to|based on|in|from|as (?:stated|mentioned|described|shown) in) (?:the |this |these )?"
        r"(?:given |provided |above |following )?(?:passages?|contexts?|texts?|documents?|excerpts?|articles?|snippets?|paragraphs?)\b"
        r"|\b(?:the|this) (?:passage|context|text|excerpt|snippet|paragraph) (?:says|states|mentions|describes)\b"
        r"|\b(?:does|do) the (?:passage|context|text|excerpt|snippet|paragraph) (?:say|state|mention|describe)\b"
        r"|\b(?:provided|given|above) (?:passage|context|text|excerpt|information)\b|\binformation (?:provided|given)\b"
        r"|\b(?:the|these|both|two) (?:two )?(?:contexts|passages|excerpts|snippets)\b|\b(?:between|of) (?:the|these) two\s*\?\s*$"
        # "What is the main idea of the passage about <a gene>?" (kept in a ClapNQ run of
        # 2026-11-28): its source as a thing with a topic. "The passage of the bill", "the
        # purpose of the context switch" and "the title of the document" are left alone.
        r"|\b(?:main idea|main point|gist|summary|topic) of (?:the|this) (?:passage|text|excerpt|snippet|paragraph)\b"
        r"|\b(?:the|this) (?:passage|context|excerpt|snippet|paragraph) about\b|\b(?:the|this) (?:context|excerpt|snippet|paragraph) (?:above|below)\b"
        # "What is the genetics of the passage?" (a ClapNQ unanswerable swap of 2026-11-28): a
        # question that ends on its source. "The text of the anthem" goes on after it.
        r"|\bof (?:the|this) (?:passage|text|excerpt|snippet|paragraph)\s*[?.!]*\s*$",
        re.IGNORECASE,
    ),
    "zh": re.compile(
        r"根据(?:上文|本文|原文|文中|文章|材料|段落|上下文|这段|该段|该文|以上)|文中|上下文|上文|原文|这段文字|该文档|本段|以上内容|材料中|这两段|两段(?:文字|材料|内容)"
        r"|(?:这|该|本)(?:篇|段)(?:文章|材料|文字|内容)"
    ),
}

_NUMBER = re.compile(r"[\d.,:/%-]+")
#: A number in digits, or a word of Latin letters (and digits): what :func:`names` looks at.
_NAME_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[A-Za-z][A-Za-z0-9]*(?:['’][A-Za-z]+)?")
_SENTENCE_END = re.compile(r"(?:^|[.?!。？！:：]\s*)$")
_POSSESSIVE = re.compile(r"['’]s$")
_CAPITALISED = r"[A-Z][a-z]+(?:['’]s)?"
_NAME_RUN = re.compile(rf"\b{_CAPITALISED}(?:\s+(?:(?:of|and|for|the)\s+)?{_CAPITALISED})+")
_HAN = re.compile(f"[{HAN}]")
#: Words in a row that make a reference's phrase a copy of a prompt example's answer
#: (see :func:`example_phrase`).
EXAMPLE_PHRASE_WORDS = 4
#: The words of a condition ("when" only after the question's first word).
_CONDITION = {
    "en": r"\b(?:if|unless|in case|provided|assuming|suppose|supposing|as long as|whenever)\b|\w[\s,]+when\b",
    "zh": r"如果|假如|假设|若|要是|倘若|一旦|的话|只要|除非|万一|情况下|当.{1,30}?时",
}
#: Words before a number that make it a label, not a quantity: "step 3", "section 4.2", "第3条".
_LABELS = "step section chapter article part rule item clause page version level phase stage figure table appendix no number".split()  # noqa: SIM905
#: A quantity the question states itself, its concrete case ("a book returned five days late",
#: "after 3 reviews", "超过 5 分钟", "三周后"): a number (not a year, "2019", nor a label, "step 3")
#: or an English number word from two up ("one" is mostly a pronoun); in Chinese, a number
#: before a measure word, not after "第" ("一" alone is mostly an article: "一个工程师").
_STATED_QUANTITY = {
    "en": "".join(rf"(?<!\b{label} )" for label in _LABELS) + r"(?<![\w.#])(?!(?:1[5-9]|20)\d\d\b)\d+(?:[.,]\d+)?%?(?![\w.])"
    r"|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|hundred)\b",
    "zh": r"(?<![第\d一二三四五六七八九十两百千])(?:\d+|[二三四五六七八九十两百千][一二三四五六七八九十两百千]*|一[一二三四五六七八九十两百千]+)"
    r"\s*(?:个|名|位|本|次|天|日|周|星期|个月|月|小时|分钟|秒|元|块|页|条|份|人|级|岁)",
}
#: Words without which a question is not of its type: a comparison names what it compares
#: ("than", "or", "difference", "比", "还是"...), a conditional question its condition ("if",
#: "unless", "如果", "的话"...; "when" only after the question's first word: "When is the
#: freeze?" asks a date), a reasoning question its calculation, case or why. See
#: :func:`lacks_type_words`.
_TYPE_WORDS = {
    ("comparison", "en"): re.compile(
        r"\b(?:than|versus|vs|compared?|comparing|comparison|differ(?:s|ent|ence|ences)?|both|either|whereas|while|same|similar"
        r"|unlike|alike|between|or|more|less|fewer|most|least|longer|shorter|earlier|later|older|newer|higher|lower|larger"
        r"|smaller|bigger|faster|slower|better|worse)\b",
        re.IGNORECASE,
    ),
    # "更" and "最" compare, not in "更新" (update) or "最后" (last).
    ("comparison", "zh"): re.compile(r"比|区别|不同|差异|差别|异同|还是|更(?![新改换正])|一样|相同|分别|两者|二者|之间|最(?![近后初终])"),
    ("conditional", "en"): re.compile(_CONDITION["en"], re.IGNORECASE),
    ("conditional", "zh"): re.compile(_CONDITION["zh"]),
    # Reasoning, as the generator's prompt defines it: a rule applied to a concrete case (a
    # condition, "would", a yes/no question: "Can the author approve it alone?", a quantity of
    # its own: "the fine for a book returned five days late"), a small calculation ("in total",
    # "the longest", "after", "before"), or a why. "How many approvals are required for a merge
    # request?" and "Forge 命令行工具用于执行什么？" ask a fact the chunk states.
    ("reasoning", "en"): re.compile(
        _CONDITION["en"] + "|" + _STATED_QUANTITY["en"] + r"|^\W*(?:can|may|might|must|will|is|are|was|were|does|do|did|has|have|had)\b"
        r"|\b(?:would|could|should|total|in all|altogether|together|combined|sum|longest|shortest|earliest|latest|at most"
        r"|at least|after|before|until|by the time|remaining|left|why|how come|therefore|enough|instead|still|whether|alone"
        r"|without)\b",
        re.IGNORECASE,
    ),
    ("reasoning", "zh"): re.compile(
        _CONDITION["zh"]
        + "|"
        + _STATED_QUANTITY["zh"]
        + r"|为什么|为何|原因|总共|一共|合计|加起来|共计|最长|最短|最多|最少|最早|最晚|最迟|之前|之后|以后|以前"
        r"|还剩|剩下|能否|是否|会不会|能不能|可不可以|够不够|[吗呢]\s*[？?]?\s*$"
    ),
}
_NUMBERS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()  # noqa: SIM905
_NUMBER_WORDS = frozenset(content_words(" ".join(_NUMBERS)))
_NUMBER_WORD = re.compile(rf"\b(?:{'|'.join(_NUMBERS)})\b", re.IGNORECASE)


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


def numbers(text: str) -> list[str]:
    """The numbers of ``text``, in order, each once: in digits as :func:`names` reads them
    ("5", "3.5", "10:00", "1,000"; not the "1" of a name such as "SEV1"), and in English
    number words up to twenty or Chinese numerals that count or rank
    (:func:`~ragmeter.data.numerals.chinese_numbers`), in digits: "five minutes" and "五分钟"
    give "5", as "5 minutes" does. A 1 in words is left out: "one of the reviewers" and
    "一个迁移" say "a", not a count."""
    digits = [(m.start(), m.group(0)) for m in _NAME_TOKEN.finditer(text) if m.group(0)[0].isdigit()]
    english = [(m.start(), str(_NUMBERS.index(m.group(0).lower()) + 1)) for m in _NUMBER_WORD.finditer(text)]
    chinese = [(position, str(value)) for position, value in chinese_numbers(text)]
    in_words = [(position, number) for position, number in english + chinese if number != "1"]
    return list(dict.fromkeys(number for _, number in sorted(digits + in_words)))


def dropped_names(original: str, rewritten: str) -> list[str]:
    """The :func:`names` of ``original`` that ``rewritten`` leaves out.

    A number must be in ``rewritten`` as that number (English number words up to twenty count
    as digits: "5" is kept by "five"); a name as a word that begins with it, less a plural
    "s", and adds at most three letters ("Canadians" is kept by "canadian"), or only a plural "s" to a
    name of three letters or fewer ("US" is not kept by "use"). Two or more capitalised words
    in a row ("European Union", "Bank of England") are also kept by their initials as a word
    ("the EU's", "BoE"). Case is ignored, but for a name in capitals that is also a common
    word ("US", "IT"): when ``rewritten`` has capitals of its own, it keeps that name only in
    capitals ("How many of us use drones?" drops "US"; "us drone use" keeps it).

    Args:
        original: The question as written, before its style.
        rewritten: The question in its style (persona, colloquial, web-search keywords).
    """
    words = rewritten.lower()
    cased = rewritten != words  # the rewrite writes capitals of its own
    digits = in_digits(words)
    lost = []
    for name in names(original):
        if name[0].isdigit():
            found = re.search(rf"(?<![\d.,:]){re.escape(name)}(?![\d]|[.,:]\d)", digits)
        else:  # a name may be a number word ("the Big Three"): looked for as written
            stem = name[:-1] if len(name) > 3 and name.endswith("s") else name
            ending = "s?" if len(stem) <= 3 else "[a-z]{0,3}"  # "ci" is kept by "cis", "us" not by "use"
            if cased and _common_word_in_capitals(name, original):
                found = re.search(_as_word(name.upper()), rewritten)
            else:
                found = re.search(rf"(?<![a-z0-9]){re.escape(stem)}{ending}(?![a-z0-9])", words)
        if not found:
            lost.append(name)
    for initials, run in _name_runs(original):
        if re.search(rf"(?<![a-z0-9]){initials}(?:['’]?s)?(?![a-z0-9])", words):
            lost = [name for name in lost if name not in run]
    return lost


def _common_word_in_capitals(name: str, question: str) -> bool:
    """Whether ``name`` (lower-cased) is written in capitals in ``question`` and is also a
    common word when lower-cased ("US" is "us", "IT" is "it")."""
    return not content_words(name) and re.search(_as_word(name.upper()), question) is not None


def _as_word(word: str) -> str:
    """A pattern of ``word`` as a whole word, case as written."""
    return rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])"


def _name_runs(question: str) -> list[tuple[str, tuple[str, ...]]]:
    """Each run of two or more capitalised words of ``question`` (any part of a longer run
    too, so that "What European Union" yields "European Union"), as its lower-case initials
    and its capitalised words. "of", "and", "for" and "the" may stand between them; their
    initials are taken both ways ("Bank of England": "be" and "boe")."""
    runs = []
    for match in _NAME_RUN.finditer(question):
        tokens = [_POSSESSIVE.sub("", w).lower() for w in match.group(0).split()]
        capital = [w[0].isupper() for w in match.group(0).split()]
        for first in (i for i in range(len(tokens)) if capital[i]):
            for last in (j for j in range(first + 1, len(tokens)) if capital[j]):
                span = range(first, last + 1)
                run = tuple(tokens[i] for i in span if capital[i])
                runs += [("".join(word[0] for word in run), run), ("".join(tokens[i][0] for i in span), run)]
    return runs


def lacks_type_words(question: str, kind: str, lang: str) -> bool:
    """``question``, asked as a ``kind`` question, has none of the words that type needs: a
    "comparison" that compares nothing ("Which process requires a rollback script?"), a
    "conditional" question without a condition ("What is the path to store secrets in Forge
    Vault?"), a "reasoning" question that neither calculates, applies a rule to a case nor
    asks why ("What is the maximum size of a cache for a project?"). Other types have no such
    words: never.

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
    shared = [example.get("shared", {}) for example in _testset_examples(lang)]
    texts = [text for fields in shared for key in ("context", "contexts") for text in _as_list(fields.get(key, []))]
    words = set().union(*(content_words(text) for text in texts))
    return frozenset(w for w in words if not _NUMBER.fullmatch(w) and w not in _NUMBER_WORDS)


def example_phrase(reference: str, contexts: Sequence[str], lang: str) -> str | None:
    """Words in a row (:data:`EXAMPLE_PHRASE_WORDS`) that ``reference`` shares with an answer of
    the generator's own prompt examples and that ``contexts`` do not hold, two of them words
    (not numbers) no context uses, even in another form ("renewal" is used by "renewed"); or
    ``None``. (One such word is not enough: a reference on a library's loans may well add "plus"
    to "three-week loan".) The reference "96 hours: 48 hours before the launch plus two
    renewals of three weeks each." of an ad-hoc freeze question (a run of 2026-11-28, kept as a
    single fact: the judge's checks passed it) ends on the reasoning example's "two renewals of
    three weeks each"; nothing in its chunk renews anything.

    Args:
        reference: The reference answer.
        contexts: The texts of the question's chunks.
        lang: Its language.
    """
    context_text = " ".join(contexts)
    known = content_words(context_text)
    held = _grams(tokenize(context_text))
    for gram in _grams(tokenize(reference)):
        if gram in _example_answer_grams(lang) and gram not in held:
            unknown = {
                w for w in content_words(" ".join(gram)) if not _NUMBER.fullmatch(w) and w not in _NUMBER_WORDS and not _used(w, known)
            }
            if len(unknown) >= 2:
                return " ".join(gram) if lang == "en" else "".join(gram)
    return None


def _used(word: str, known: set[str]) -> bool:
    """``word`` is one of ``known``, or shares its first five letters with one of them."""
    return word in known or (len(word) >= 5 and any(other[:5] == word[:5] for other in known))


def _grams(tokens: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + EXAMPLE_PHRASE_WORDS]) for i in range(len(tokens) - EXAMPLE_PHRASE_WORDS + 1)}


@lru_cache(maxsize=2)
def _example_answer_grams(lang: str) -> frozenset[tuple[str, ...]]:
    """The :data:`EXAMPLE_PHRASE_WORDS`-word runs of the answers in the examples of the
    ``testset_*`` prompts of ``lang``."""
    answers = [
        example["answer"]["answer"]
        for example in _testset_examples(lang)
        if isinstance(example.get("answer"), dict) and isinstance(example["answer"].get("answer"), str)
    ]
    return frozenset().union(*(_grams(tokenize(answer)) for answer in answers))


def _testset_examples(lang: str) -> list[dict]:
    """The examples of the generator's prompts (the ``testset_*`` tasks) of ``lang``."""
    book = PromptBook(lang)
    return [example for name in book.task_names() if name.startswith("testset_") for example in book.task(name).get("examples", [])]


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


def in_digits(text: str) -> str:
    """``text`` with English numbers up to twenty written in digits."""
    return _NUMBER_WORD.sub(lambda m: str(_NUMBERS.index(m.group(0).lower()) + 1), text)
