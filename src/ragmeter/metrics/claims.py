"""Turning a text into the claims a judge verifies, and the language of a sample.

``claims_of`` splits a text into the statements a judge verifies, either by sentences (the
default: free, deterministic, no model call) or by the judge's ``statements`` task
(self-contained statements, pronouns resolved: one ``generate`` call; a text whose statements
do not fit the judge's longest reply, or whose prompt does not fit its window, is split into
two halves of its sentences, each asked for alone, down to one sentence, which is then its own
claim). A sentence fragment
of fewer than :data:`MIN_CLAIM_TOKENS` tokens ("No.", "不能。") is not a claim on its own:
it is merged into the previous sentence, or into the next one when it comes first. A text
made only of such fragments is one claim. Chinese words are long (jieba makes "借期三周"
two words), so a fragment with at least :data:`MIN_CLAIM_HAN` Chinese characters is a claim
whatever its token count.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ragmeter.data.schema import Sample
from ragmeter.data.text import HAN, detect_language, join_text, split_sentences, tokenize
from ragmeter.judges.base import ContextTooLong, MalformedOutput, ReplyCutOff

if TYPE_CHECKING:
    from ragmeter.judges import Judges

#: A sentence with fewer tokens than this is merged into a neighbour instead of being a claim.
MIN_CLAIM_TOKENS = 3
#: ... unless it has at least this many Chinese characters.
MIN_CLAIM_HAN = 4
#: Ways of turning a text into claims.
CLAIM_MODES = ("sentences", "llm")

STATEMENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"statements": {"type": "array", "items": {"type": "string"}}},
    "required": ["statements"],
}

_LETTER = re.compile(r"[^\W\d_]")
_HAN = re.compile(f"[{HAN}]")


def language_of(sample: Sample) -> str:
    """``"zh"`` or ``"en"``: the language of the question, else (a question with no letters)
    of the response, else of the reference; ``"en"`` when none has letters."""
    for text in (sample.user_input, sample.response, sample.reference):
        if text and _LETTER.search(text):
            return detect_language(text)
    return "en"


def is_fragment(sentence: str) -> bool:
    """Too short to be a claim: fewer than :data:`MIN_CLAIM_TOKENS` tokens and fewer than
    :data:`MIN_CLAIM_HAN` Chinese characters."""
    return len(tokenize(sentence)) < MIN_CLAIM_TOKENS and len(_HAN.findall(sentence)) < MIN_CLAIM_HAN


def sentence_claims(text: str) -> list[str]:
    """Sentences of ``text``; a fragment (:func:`is_fragment`) is merged into the previous
    sentence (into the next when it comes first)."""
    claims: list[str] = []
    leading = ""
    for sentence in split_sentences(text):
        if is_fragment(sentence):
            if claims:
                claims[-1] = join_text(claims[-1], sentence)
            else:
                leading = join_text(leading, sentence)
            continue
        claims.append(join_text(leading, sentence))
        leading = ""
    if leading:  # only short fragments: the whole text is one claim
        claims.append(leading)
    return claims


def string_list(reply: Any, key: str, task: str) -> list[str]:
    """The list of strings under ``key`` in a generate reply, stripped, blanks and
    duplicates dropped; numbers are accepted as text.

    Raises:
        MalformedOutput: The reply is not an object, lacks ``key``, or holds something
            other than a list of strings there.
    """
    if not isinstance(reply, Mapping):
        raise MalformedOutput(f"the '{task}' answer is not a JSON object: {str(reply)[:120]!r}")
    if key not in reply:
        raise MalformedOutput(f"the '{task}' answer has no '{key}' (keys: {', '.join(map(str, reply)) or 'none'})")
    value = reply[key]
    if not isinstance(value, list):
        raise MalformedOutput(f"'{key}' in the '{task}' answer is a {type(value).__name__}, not a list")
    out: list[str] = []
    for entry in value:
        if isinstance(entry, bool) or not isinstance(entry, (str, int, float)):
            raise MalformedOutput(f"'{key}' in the '{task}' answer holds a {type(entry).__name__}, not text: {entry!r}")
        text = str(entry).strip()
        if text and text not in out:
            out.append(text)
    return out


async def claims_of(text: str, question: str | None, judges: Judges, lang: str, mode: str = "sentences") -> list[str]:
    """The claims of ``text`` to verify.

    Args:
        text: A response or a reference.
        question: The question ``text`` answers (helps the ``llm`` mode resolve "it").
        judges: The judges (``llm`` mode uses ``judges.llm``).
        lang: Prompt language.
        mode: ``"sentences"`` (no model call) or ``"llm"`` (one ``statements`` call; more
            for a text whose statements do not fit one reply: see the module).

    Raises:
        MalformedOutput: ``llm`` mode and the judge's answer has no list of statements.
    """
    if mode not in CLAIM_MODES:
        raise ValueError(f"claims mode must be one of {', '.join(CLAIM_MODES)}, got {mode!r}")
    if not text or not text.strip():
        return []
    if mode == "sentences":
        return sentence_claims(text)
    return await _statements(text, question, judges, lang)


async def _statements(text: str, question: str | None, judges: Judges, lang: str) -> list[str]:
    """The judge's statements of ``text``; of each half of its sentences when the reply is cut
    off or the prompt is too long; a lone sentence that still fails is its own statement."""
    try:
        reply = await judges.require_llm().generate("statements", {"question": question or None, "answer": text}, STATEMENTS_SCHEMA, lang)
    except (ReplyCutOff, ContextTooLong):
        sentences = sentence_claims(text)
        if len(sentences) <= 1:
            return [text.strip()]
        half = len(sentences) // 2
        found = []
        for part in (sentences[:half], sentences[half:]):
            found += await _statements(functools.reduce(join_text, part), question, judges, lang)
        return list(dict.fromkeys(found))
    return string_list(reply, "statements", "statements")
