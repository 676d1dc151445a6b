"""Two small extractive generators for ragmeter's robustness suite, written for its tests and
benchmark (no model; Chinese and English): ``generate(question, passages) -> answer``.

- :func:`naive` answers with the sentence of the passages that shares the most character
  bigrams with the question; it never declines and trusts any passage.
- :func:`hardened` answers each part of a question joined by "；" on its own; declines
  ("资料不足，无法回答。") when no sentence covers enough of the question; and among the
  sentences that cover it about as well as the best, takes the one whose content most other
  passages repeat, so a single passage contradicting the others is outvoted.
"""

from __future__ import annotations

import re

REFUSAL = "资料不足，无法回答。"
_SENTENCE_END = re.compile(r"(?<=[。！？!?；;\n])")
_WORD = re.compile(r"[\w\u4e00-\u9fff]")


def _bigrams(text: str) -> set[str]:
    chars = "".join(_WORD.findall(text.lower()))
    return {chars[i : i + 2] for i in range(len(chars) - 1)}


def _sentences(passages: list[str]) -> list[tuple[int, str]]:
    return [(n, s.strip()) for n, p in enumerate(passages) for s in _SENTENCE_END.split(p) if len(s.strip()) > 1]


def _coverage(question: set[str], sentence: str) -> float:
    return len(question & _bigrams(sentence)) / len(question) if question else 0.0


def naive(question: str, passages: list[str]) -> str:
    """The sentence that covers most of the question's character bigrams (the first on ties)."""
    wanted = _bigrams(question)
    sentences = _sentences(passages)
    return max(sentences, key=lambda s: _coverage(wanted, s[1]))[1] if sentences else ""


def hardened(question: str, passages: list[str], min_coverage: float = 0.5, margin: float = 0.15) -> str:
    """See the module docstring; ``min_coverage`` is the share of the question's bigrams the best
    sentence must hold, ``margin`` how far below the best a sentence may be to take part in the vote."""
    parts = [p for p in re.split(r"[；;]", question) if p.strip()]
    if len(parts) > 1:
        answers = [hardened(part, passages, min_coverage, margin) for part in parts]
        found = [a for a in answers if a != REFUSAL]
        return "；".join(found) if found else REFUSAL
    wanted = _bigrams(question)
    scored = [(_coverage(wanted, s), n, s) for n, s in _sentences(passages)]
    if not scored or max(c for c, _, _ in scored) < min_coverage:
        return REFUSAL
    best = max(c for c, _, _ in scored)
    candidates = [(c, n, s) for c, n, s in scored if c >= best - margin]

    def support(candidate: tuple[float, int, str]) -> tuple[int, float]:
        """Other passages that repeat the sentence's content, then its coverage (on ties)."""
        coverage, number, sentence = candidate
        content = _bigrams(sentence) - wanted
        repeated = sum(1 for n, p in enumerate(passages) if n != number and len(content & _bigrams(p)) >= 0.6 * len(content))
        return repeated, coverage

    return max(candidates, key=support)[2]
