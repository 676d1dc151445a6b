"""Text handling shared by the metrics: normalisation, language detection, tokens, sentences.

Chinese has no spaces between words, so tokenisers written for English either drop it
(``rouge-score`` scores a Chinese paraphrase 0.0) or treat a whole clause as one word.
Here runs of Han characters are segmented into words with ``rjieba``; everything else is
split into words and numbers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import rjieba

# The Han (Chinese) character ranges, to put inside a regex character class.
HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_RUN = re.compile(f"[{HAN}]+")
_WORD = f"[^\\W_{HAN}]+"
_TOKEN = re.compile(f"[{HAN}]+|{_WORD}(?:[.'’]{_WORD})*", re.UNICODE)
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_CJK_END = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]$")
_CJK_START = re.compile(r"^[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")

# Characters that can drive a terminal or reorder a line: C0 controls but tab, DEL and the C1
# controls, the line and paragraph separators, bidirectional embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

# A sentence ends after Chinese end punctuation, or after . ! ? followed by a space, or at
# a line break. Decimal numbers ("3.5") and common abbreviations are not sentence ends.
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "mr.", "mrs.", "dr.", "fig.", "approx.")
_SENTENCE_END = re.compile(r"(?<=[。！？；!?])\s*|(?<=[.])\s+|\n+")
# A piece that ends with an abbreviation as a whole word ("e.g.", not "piano." or
# "config."), or is only a numbered-list marker ("1."), runs on into the next piece.
_RUNS_ON = re.compile(
    r"(?:(?<![\w.])(?:" + "|".join(re.escape(a) for a in _ABBREVIATIONS) + r")|^\d{1,3}\.)$",
    re.IGNORECASE,
)


# [1], [1, 3], [^2], [doc-id#2], 【1】, ［1］ : a bracket holding ids without spaces. Not an
# index (array[0]: a Latin letter or digit right before) and not a Markdown link ([text](url)).
CITATION = re.compile(r"(?<![A-Za-z0-9_])[\[【［]\^?\s*([\w\-#./:@|]+(?:\s*[,，;；]\s*[\w\-#./:@|]+)*)\s*[\]】］](?!\()")


#: A run of citations with what separates them: "[1], [2]", "【1】【3】".
_CITATION_RUN = re.compile(rf"{CITATION.pattern}(?:\s*[,，、;；]?\s*{CITATION.pattern})*")


def without_citations(text: str) -> str:
    """``text`` without its bracketed citations (``[1]``, ``[1], [2]``, ``[runbook#2]``,
    ``【1】``) and the spaces they leave: they name sources, they are not part of what the
    text states."""
    text = re.sub(r"[ \t]{2,}", " ", _CITATION_RUN.sub("", text))
    return re.sub(r"[ \t]+(?=[.,;:!?。，；：！？)]|$)", "", text).strip()


def normalize(text: str) -> str:
    """NFKC-normalise (full-width to half-width), lower-case and collapse whitespace."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def han_ratio(text: str) -> float:
    """Share of letters in ``text`` that are Han (Chinese) characters."""
    letters = _LETTER.findall(text)
    if not letters:
        return 0.0
    return sum(1 for ch in letters if _HAN_RUN.match(ch)) / len(letters)


def detect_language(text: str) -> str:
    """``"zh"`` when at least a fifth of the letters are Chinese characters, else ``"en"``.

    A fifth, not a half: Chinese technical text is full of English names ("MR", "CI",
    "DBA") yet must be segmented as Chinese.
    """
    return "zh" if han_ratio(text) >= 0.2 else "en"


@lru_cache(maxsize=65536)
def _segment(run: str) -> tuple[str, ...]:
    return tuple(rjieba.cut(run))


def tokenize(text: str) -> list[str]:
    """Words of ``text``, lower-cased; Chinese runs are segmented into words; no punctuation."""
    return list(_tokenize(text))


@lru_cache(maxsize=16384)
def _tokenize(text: str) -> tuple[str, ...]:
    # Cached: every lexical metric tokenizes the same response and reference.
    tokens: list[str] = []
    for match in _TOKEN.finditer(normalize(text)):
        piece = match.group(0)
        if _HAN_RUN.fullmatch(piece):
            tokens.extend(_segment(piece))
        else:
            tokens.append(piece)
    return tuple(tokens)


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences (English and Chinese punctuation, line breaks).

    Bullet markers at the start of a line are kept with their sentence. Empty pieces are
    dropped, so the result is empty only when ``text`` has no words.
    """
    pieces: list[str] = []
    carry = ""
    for part in _SENTENCE_END.split(text):
        if not part or not part.strip():
            continue
        part = (carry + " " + part.strip()) if carry else part.strip()
        carry = ""
        if _RUNS_ON.search(part):
            carry = part
            continue
        pieces.append(part)
    if carry:
        pieces.append(carry)
    return [p for p in pieces if _TOKEN.search(p)]


#: A dialogue turn's speaker at the start of a sentence: "Ann: ...", "Dr. Lee: ...", "Speaker 2: ...", "张三：...".
_SPEAKER = re.compile(rf"^((?:[A-Z][\w.'’-]*)(?: (?:[A-Z][\w.'’-]*|\d+)){{0,2}}|[{HAN}]{{1,6}})\s*([:：])\s*(?=\S)")


def is_dialogue(sentences: Sequence[str]) -> bool:
    """Are these sentences a dialogue? At least three of them start with a speaker ("Ann: ...",
    "张三：..."), at least half of them do, there are two speakers or more, and one of them
    speaks more than once (prose with "Note: ..." and "Warning: ..." is no dialogue).

    Args:
        sentences: The text's sentences in order (:func:`split_sentences`).
    """
    named = [m.group(1) for m in map(_SPEAKER.match, sentences) if m]
    return len(named) >= 3 and 2 * len(named) >= len(sentences) and len(set(named)) >= 2 and len(set(named)) < len(named)


def with_speakers(sentences: Sequence[str]) -> list[str]:
    """The sentences of a dialogue, each naming its speaker: a sentence that continues a turn
    ("Ann: I will check. Yes, there is some." gives "Yes, there is some.") gets the speaker
    of the sentence before it ("Ann: Yes, there is some."), so that it still says who speaks
    when read alone. Text that is not a dialogue (:func:`is_dialogue`) is returned as it is.

    Args:
        sentences: The text's sentences in order (:func:`split_sentences`).
    """
    if not is_dialogue(sentences):
        return list(sentences)
    out, current = [], None
    for sentence, match in zip(sentences, map(_SPEAKER.match, sentences), strict=True):
        if match:
            current = match.group(1) + match.group(2) + ("" if match.group(2) == "：" else " ")
        elif current is not None:
            sentence = current + sentence
        out.append(sentence)
    return out


def join_text(a: str, b: str) -> str:
    """Two pieces of text joined with a space, or with nothing between Chinese characters."""
    if not a:
        return b
    if not b:
        return a
    return a + ("" if _CJK_END.search(a) and _CJK_START.search(b) else " ") + b


def visible_controls(text: str) -> str:
    """``text`` with each character that could move the cursor, change colours, start a
    hyperlink, break the line or reverse its direction shown as its Python escape (``\\x1b``,
    ``\\n``, ``\\u202e``), so text from the data stays one inert line in a terminal or a
    CI log."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
