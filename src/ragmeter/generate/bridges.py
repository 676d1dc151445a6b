"""Bridge phrases: the phrase two linked chunks both mention, by which a multi-hop question
joins them (:mod:`ragmeter.generate.compose` writes the question; this finds the phrase, in
code, without the judge), and the phrase put in place of another in a question (the bridge's
description, an unanswerable question's swapped subject).
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from functools import lru_cache

import rjieba

from ragmeter.data.text import HAN, tokenize
from ragmeter.data.words import content_words
from ragmeter.generate.anchors import rare_limit
from ragmeter.generate.chunking import Chunk

#: Longest bridge phrase, in tokens (English words; Chinese: 2 words, then widened).
_NGRAM = 3
#: A letter of any script (not a digit, not punctuation).
LETTER = re.compile(f"[^\\W\\d_]|[{HAN}]")
_HAN_ONLY = re.compile(f"^[{HAN}]+$")
#: rjieba's tags of the function words a Chinese phrase does not begin with: prepositions
#: (由), conjunctions (和), pronouns (这类), particles (的).
_FUNCTION_TAGS = ("p", "c", "r", "u")
#: rjieba's tags of the words no Chinese phrase holds: numerals, measure words (分钟), words of
#: direction (里), place (天内) and time.
_QUANTITY_TAGS = ("m", "q", "f", "s", "t")
#: rjieba's tags of the words a Chinese phrase does not grow into (:func:`_widened`): the
#: function and quantity words, and adverbs (也).
_CLOSED_TAGS = (*_FUNCTION_TAGS, *_QUANTITY_TAGS, "d")
_ARTICLE = re.compile(r"^(?:the|a|an)\s", re.IGNORECASE)
#: English words that join two things: a phrase holding one names two ("Jack and Rebecca").
_CONJUNCTIONS = frozenset({"and", "or", "nor", "but"})
#: A capitalised English word: a name's, or a sentence's first.
_TITLE_WORD = re.compile(r"^[A-Z][a-z]+$")


def bridge_phrases(described: str, answering: str, lang: str, chunks: Sequence[Chunk]) -> list[str]:
    """Phrases both texts contain, the best bridge first, as ``answering`` writes them.

    A phrase is a run of up to three words (one or two Chinese words, widened to the longest
    run of Chinese characters both texts hold, not into a function, quantity or adverb word,
    nor a verb at its edges: :func:`_widened`) that begins and ends with a content word, has a
    letter and no bare number; in English it neither begins nor ends with a word in -ed or -ly
    (rarely a thing's name) and names one thing (:func:`_not_one_name`: not "Jack and
    Rebecca", "Rebecca takes", "ca n't", nor "Big" of "Big Three"), and one English word
    alone is a name or hyphenated, not a common word (:func:`_common_word`: not "migration",
    "page"); in Chinese it
    ends with a noun, does not begin with a function word (rjieba's tags: 由平台 is no phrase),
    holds no word of quantity, place or time (分钟, 里), and is a name or a compound: Latin
    letters (SEV1), or more than one Chinese word (发布经理, 密钥保管库; not 评审 or 数据库 alone,
    which the 1.5B judge could not describe from one chunk). A single word is held by at most
    :func:`~ragmeter.generate.anchors.rare_limit` chunks. The best are distinctive names (a
    capital letter, and held by at most that many chunks), then phrases of several words, then
    the rarest in the knowledge base (fewest chunks hold it),
    then the first in ``answering``.

    Args:
        described: The text of the chunk the bridge phrase will be described from.
        answering: The text of the chunk that answers the question.
        lang: ``"en"`` or ``"zh"``.
        chunks: The knowledge base's chunks (for how rare a phrase is).
    """
    size = 2 if lang == "zh" else _NGRAM
    shared = _phrases(described, size) & _phrases(answering, size)
    if lang == "zh":
        nouns, function, quantity = _nouns(answering), _words_tagged(answering, _FUNCTION_TAGS), _words_tagged(answering, _QUANTITY_TAGS)
        shared = {
            key for key in shared if (key[-1].isascii() or key[-1] in nouns) and key[0] not in function and not quantity.intersection(key)
        }
    lines = _token_lines(tuple(chunks))
    limit = rare_limit(len(chunks))
    ranked = []
    for position, key in enumerate(_ordered(answering, size)):
        if key not in shared:
            continue
        surface = _surface(key, answering, lang)
        if surface is None or (lang != "zh" and _not_one_name(surface, (answering, described))):
            continue
        if lang != "zh" and _common_word(surface, (answering, described), tuple(chunks)):
            continue  # "migration", "page": one common word, which the judge described wrongly or not at all
        if lang == "zh":
            surface = _widened(surface, answering, described)
            if _HAN_ONLY.match(surface) and surface == key[0]:
                continue  # 评审, 配额, 数据库: one common word, which the judge cannot describe from one chunk
        rarity = sum(f" {' '.join(key)} " in line for line in lines)
        if len(key) == 1 and rarity > limit:
            continue  # "access", "secret": a word many chunks hold names nothing one chunk can describe
        name = _named(surface, (answering, described)) and rarity <= limit
        ranked.append(((not name, len(key) == 1, rarity, position), surface))
        shared.discard(key)
    return list(dict.fromkeys(surface for _, surface in sorted(ranked)))


def bridge_roles(pair: tuple[int, ...]) -> tuple[int, int]:
    """Which chunk of a linked ``pair`` (two chunk indexes, in a slot's order) the bridge phrase is
    described from, and which answers the bridge question: a coin seeded by the pair, turned
    by its order, so a link planned again the other way round (a top-up round's) is described
    from its other chunk."""
    first, second = pair
    coin = random.Random(f"{min(pair)}-{max(pair)}").random() < 0.5
    return (second, first) if coin else (first, second)


def bridged(pair: tuple[int, ...], chunks: Sequence[Chunk]) -> bool:
    """The chunks of a linked ``pair`` (indexes into ``chunks``, in a slot's order) share a
    bridge phrase (:func:`bridge_phrases`) in the roles :func:`bridge_roles` gives them."""
    described, answering = (chunks[i] for i in bridge_roles(pair))
    return bool(bridge_phrases(described.text, answering.text, chunks[pair[0]].lang, chunks))


def _named(surface: str, texts: Sequence[str]) -> bool:
    """``surface`` is written as a name: a capital letter after its first character ("Forge
    Vault", "SEV1"), or a capital first letter in the middle of a sentence of one of
    ``texts`` (after a lower-case word on the same line: not "Protected" opening a sentence
    or a heading)."""
    if any(ch.isupper() for ch in surface[1:]):
        return True
    if not surface[:1].isupper():
        return False
    return any(re.search(rf"[a-z0-9,;][ \t]+{re.escape(surface)}(?!\w)", text) for text in texts)


def _common_word(surface: str, texts: Sequence[str], chunks: tuple[Chunk, ...]) -> bool:
    """English ``surface`` is one common word: a single word, not hyphenated ("break-glass"
    names a thing), that is no name (:func:`_named` in ``texts``) and that the knowledge base
    writes in lower case ("page"; "Migration" opening a sentence, where another says
    "migration"). A word that only ever opens a sentence ("Hamlin" at the head of a table row)
    is taken for a name."""
    if " " in surface or "-" in surface or _named(surface, texts):
        return False
    return surface.islower() or surface.lower() in _lower_case_words(chunks)


@lru_cache(maxsize=4)
def _lower_case_words(chunks: tuple[Chunk, ...]) -> frozenset[str]:
    """The words the knowledge base's ``chunks`` write in lower case."""
    return frozenset(w for chunk in chunks for w in re.findall(r"(?<![\w-])[a-z]+(?![\w-])", chunk.text))


def _not_one_name(surface: str, texts: Sequence[str]) -> bool:
    """English ``surface`` is not the name of one thing, as ``texts`` write it: it joins two
    ("Jack and Rebecca"); it holds a piece of a word (a text tokenized for a benchmark writes
    "ca n't"): a lower-case word of one or two letters, or an apostrophe; it pairs a name
    with a lower-case word in -s, most likely a verb ("Rebecca takes", "tells Kevin"; a plural
    after a name, "Commonwealth realms", is lost with them); it repeats a word ("Denny
    Denny", from a table); or it is one capitalised word that a text only writes next to
    another ("Big" of "Big Three"), a piece of a longer name."""
    words = surface.replace("-", " ").split()
    if _CONJUNCTIONS.intersection(w.lower() for w in words) or len({w.lower() for w in words}) < len(words):
        return True
    if any((w.islower() and len(w) < 3) or "'" in w or "’" in w for w in words):
        return True
    for left, right in itertools.pairwise(words):
        for name, other in ((left, right), (right, left)):
            if _TITLE_WORD.match(name) and other.islower() and other.endswith("s") and not other.endswith("ss") and _named(name, texts):
                return True
    if len(words) == 1 and _TITLE_WORD.match(surface):
        return any(_named(surface, (text,)) and not _stands_alone(surface, text) for text in texts)
    return False


def _stands_alone(word: str, text: str) -> bool:
    """``text`` writes ``word`` at least once with no capitalised word right before or after
    it ("The" opening a sentence does not count)."""
    for found in re.finditer(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text):
        before = re.search(r"([\w-]+)[ \t]+$", text[: found.start()])
        after = re.match(r"[ \t]+([A-Z][\w-]*)", text[found.end() :])
        if not any(w and w.group(1)[:1].isupper() and content_words(w.group(1)) for w in (before, after)):
            return True
    return False


def _widened(phrase: str, text: str, other: str) -> str:
    """``phrase`` grown, a Chinese character at a time on either side of its first place in
    ``text``, while ``other`` holds it too: rjieba may cut one name two ways in two texts
    ("密钥保管|库存" and "密钥保管|库"), and the whole name is the bridge. It does not grow into
    a word rjieba tags in ``text`` as a function word, a quantity or an adverb
    (:data:`_CLOSED_TAGS`): 平台团队 does not grow across a
    preposition into 单由平台团队 (白名单由平台团队 in one text, 工单由平台团队 in the other), nor
    事故频道 into 事故频道里. Nor does it grow left into a verb of two characters or more
    (not 包括选举委员会 or 发生踩踏事故), and what it grew by to the right
    does not end with one or a piece of one (香港统计处公布 and 选举委员会选 give back 公布 and
    选). A verb inside stays, for what names a thing may begin with what describes it
    (密钥保管库); so does a clause grown right up to a noun (步行桥发生踩踏事故)."""
    closed, verbs, closed_left = _growth_stops(text)
    start = text.find(phrase)
    last = end = start + len(phrase)
    while end < len(text) and end not in closed and _widens(text[end]) and text[start : end + 1] in other:
        end += 1
    while (edge := next((v for v in verbs if v[0] < end <= v[1]), None)) and edge[0] >= last:
        end = edge[0]
    while start > 0 and start - 1 not in closed_left and _widens(text[start - 1]) and text[start - 1 : end] in other:
        start -= 1
    return text[start:end]


@lru_cache(maxsize=64)
def _growth_stops(text: str) -> tuple[frozenset[int], tuple[tuple[int, int], ...], frozenset[int]]:
    """Where in Chinese ``text`` a phrase stops growing (see :func:`_widened`), worked out once
    per chunk: the places of the characters of the words it does not grow into
    (:data:`_CLOSED_TAGS`); where each verb of two characters or more begins and ends; and the
    places closed to growth on the left (both)."""
    closed = frozenset(at + i for word, tag, at in _tagged(text) if tag.startswith(_CLOSED_TAGS) for i in range(len(word)))
    verbs = tuple((at, at + len(word)) for word, tag, at in _tagged(text) if tag == "v" and len(word) > 1)
    return closed, verbs, closed | {at for begin, stop in verbs for at in range(begin, stop)}


def _words_tagged(text: str, tags: tuple[str, ...]) -> set[str]:
    """The words of Chinese ``text`` whose rjieba tag begins with one of ``tags``."""
    return {word for word, tag, _ in _tagged(text) if tag.startswith(tags)}


@lru_cache(maxsize=64)
def _tagged(text: str) -> tuple[tuple[str, str, int], ...]:
    """rjieba's words of Chinese ``text`` with their tags and where each begins: tagged once
    for the nouns, the function and quantity words and their places (a chunk answers many pairs)."""
    words, offset = [], 0
    for word, tag in rjieba.tag(text):
        offset = text.find(word, offset)
        if offset < 0:
            break
        words.append((word, tag, offset))
        offset += len(word)
    return tuple(words)


def _widens(char: str) -> bool:
    """``char`` may be added to a Chinese phrase: a Chinese character that is not a stop word (的, 在)."""
    return bool(_HAN_ONLY.match(char) and content_words(char))


def _ordered(text: str, size: int) -> list[tuple[str, ...]]:
    """The candidate phrases of ``text`` (token n-grams), in order of first appearance."""
    tokens = tokenize(text)
    seen: dict[tuple[str, ...], None] = {}
    for n in range(1, size + 1):
        for i in range(len(tokens) - n + 1):
            key = tuple(tokens[i : i + n])
            if _candidate(key):
                seen.setdefault(key, None)
    return list(seen)


def _nouns(text: str) -> set[str]:
    """The words rjieba tags as nouns (n, nr, ns, nt, nz, vn...) in Chinese ``text``."""
    return {word for word, tag, _ in _tagged(text) if tag.startswith("n") or tag == "vn"}


def _candidate(key: tuple[str, ...]) -> bool:
    """The tokens ``key`` may be a bridge phrase (see :func:`bridge_phrases`)."""
    if not (content_words(key[0]) and content_words(key[-1]) and any(LETTER.search(t) for t in key)):
        return False
    if any(t.isdigit() for t in key):
        return False
    return not any(t.isascii() and t.endswith(("ed", "ly")) for t in (key[0], key[-1]))


def _phrases(text: str, size: int) -> set[tuple[str, ...]]:
    return set(_ordered(text, size))


@lru_cache(maxsize=4)
def _token_lines(chunks: tuple[Chunk, ...]) -> list[str]:
    """Each chunk's tokens, space-joined and space-padded (a phrase is looked up as `` a b ``)."""
    return [f" {' '.join(tokenize(chunk.text))} " for chunk in chunks]


def _surface(key: tuple[str, ...], text: str, lang: str) -> str | None:
    """How ``text`` writes the phrase of tokens ``key`` (its first occurrence, not part of a
    hyphenated word, its words apart by spaces or hyphens only: "Hamlin , Denny" of a table
    is no phrase), or ``None``."""
    if lang == "zh" and all(_HAN_ONLY.match(t) for t in key):
        return "".join(key) if "".join(key) in text else None
    found = re.search(r"(?<![\w-])" + r"[ \t-]*".join(re.escape(t) for t in key) + r"(?![\w-])", text, re.IGNORECASE)
    return found.group(0) if found else None


def phrase_pattern(phrase: str, lang: str) -> re.Pattern[str]:
    """The phrase in any case, as whole words, not part of a hyphenated one ("Break" is not in
    "Break-glass"; Chinese: anywhere), with an article before it in English (group 1)."""
    words = r"\W+".join(re.escape(w) for w in phrase.split())
    if lang == "zh":
        return re.compile(f"()(?<![A-Za-z0-9]){words}(?![A-Za-z0-9])", re.IGNORECASE)
    return re.compile(rf"(?<![\w-])(\b(?:the|a|an)\s+)?{words}(?![\w-])", re.IGNORECASE)


def bridge_statement(phrase: str, description: str, lang: str) -> str:
    """The claim that ``description`` tells what ``phrase`` is ("Forge Vault is the store that
    keeps secrets."), which the chunk it was described from must support and the chunk that
    answers the question must not (the quality filter asks the judge).

    Args:
        phrase: The bridge phrase.
        description: What stands for it in the question.
        lang: ``"en"`` or ``"zh"``.
    """
    if lang == "zh":
        return f"{phrase}是{description}。"
    return f"{phrase[:1].upper()}{phrase[1:]} is {description}."


def substitute(question: str, phrase: str, description: str, lang: str) -> str:
    """``question`` with ``description`` in place of every mention of ``phrase``.

    In English an article before the phrase gives way to the description's own ("the" +
    "the library that..." is one "the"), and the question begins with a capital letter.

    Args:
        question: The question naming the phrase.
        phrase: The bridge phrase.
        description: What stands for it.
        lang: ``"en"`` or ``"zh"``.
    """

    def replace(match: re.Match[str]) -> str:
        article = match.group(1) or ""
        return description if _ARTICLE.match(description) else article + description

    composed = phrase_pattern(phrase, lang).sub(replace, question)
    return composed[:1].upper() + composed[1:] if lang != "zh" else composed
