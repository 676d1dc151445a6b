"""Lexical overlap between the response and the reference answer.

All metrics here compare ``response`` with ``reference`` and need no model. Chinese is
segmented into words (see :mod:`ragmeter.text`) before ROUGE and token F1; BLEU uses
sacrebleu's ``zh`` tokenizer for Chinese and ``13a`` otherwise; chrF works on characters
in every language.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from rapidfuzz.distance import LCSseq, Levenshtein
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF

from ragmeter.data.schema import Sample
from ragmeter.data.text import HAN, detect_language, normalize, tokenize
from ragmeter.metrics.base import Metric, Score
from ragmeter.metrics.registry import register

_ARTICLES = frozenset({"a", "an", "the"})
_PUNCTUATION = re.compile(r"[^\w\s]", re.UNICODE)


def answer_tokens(text: str) -> list[str]:
    """Tokens for answer comparison: words of :func:`tokenize` without English articles."""
    return [t for t in tokenize(text) if t not in _ARTICLES]


def normalize_answer(text: str) -> str:
    """Normalised answer text for exact comparison: lower case, no punctuation or articles."""
    return " ".join(answer_tokens(_PUNCTUATION.sub(" ", normalize(text))))


def token_f1(prediction: str, reference: str) -> tuple[float, dict]:
    """SQuAD-style bag-of-tokens F1 and the counts behind it."""
    predicted, expected = answer_tokens(prediction), answer_tokens(reference)
    common = Counter(predicted) & Counter(expected)
    overlap = sum(common.values())
    details = {"overlap": overlap, "response_tokens": len(predicted), "reference_tokens": len(expected)}
    if not predicted or not expected:
        return float(predicted == expected), details
    if overlap == 0:
        return 0.0, details
    p, r = overlap / len(predicted), overlap / len(expected)
    return _f_measure(p, r), {**details, "precision": p, "recall": r}


def _f_measure(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def rouge(response: str, reference: str, variant: str) -> tuple[float, float, float]:
    """ROUGE precision, recall and F-measure of ``response`` against ``reference``.

    ``variant`` is ``"rouge1"``, ``"rouge2"`` (n-gram overlap) or ``"rougeL"`` (longest
    common subsequence). Same definitions as Google's ``rouge-score`` (no stemming), but on
    :func:`ragmeter.text.tokenize` tokens, which keep Chinese; rouge-score's own tokenizer
    deletes it and scores any Chinese pair 0.
    """
    predicted, expected = tokenize(response), tokenize(reference)
    if variant == "rougeL":
        common = LCSseq.similarity(predicted, expected) if predicted and expected else 0
        n_predicted, n_expected = len(predicted), len(expected)
    else:
        n = int(variant.removeprefix("rouge"))
        predicted_ngrams, expected_ngrams = _ngrams(predicted, n), _ngrams(expected, n)
        common = sum((predicted_ngrams & expected_ngrams).values())
        n_predicted, n_expected = sum(predicted_ngrams.values()), sum(expected_ngrams.values())
    precision = common / n_predicted if n_predicted else 0.0
    recall = common / n_expected if n_expected else 0.0
    return precision, recall, _f_measure(precision, recall)


@lru_cache(maxsize=4)
def _bleu(tokenizer: str) -> SacreBLEU:
    # The settings of sacrebleu.sentence_bleu: exponential smoothing, effective order.
    return SacreBLEU(tokenize=tokenizer, effective_order=True)


@lru_cache(maxsize=1)
def _chrf() -> SacreCHRF:
    return SacreCHRF()


class _ResponseVsReference(Metric):
    family = "lexical"
    required = ("response", "reference")
    #: Compares words: a reference without any ("-", "the") cannot be scored.
    compares_words: ClassVar[bool] = False

    async def score(self, sample: Sample, judges) -> Score:
        response, reference = sample.response or "", sample.reference or ""
        if not reference.strip():
            return Score.unscored("reference is empty")
        if not response.strip():
            return Score.unscored("response is empty")
        if self.compares_words and not answer_tokens(reference):
            return Score.unscored("reference has no words to compare (only punctuation or articles)")
        return self.compare(response, reference)

    def compare(self, response: str, reference: str) -> Score:
        raise NotImplementedError


@register
@dataclass(frozen=True)
class ExactMatch(_ResponseVsReference):
    """1 when response and reference are equal after normalisation (case, width,
    punctuation, English articles and whitespace ignored), else 0."""

    name = "exact_match"
    compares_words = True

    def compare(self, response, reference):
        match = normalize_answer(response) == normalize_answer(reference)
        return Score(float(match), "normalised texts are equal" if match else "normalised texts differ")


@register
@dataclass(frozen=True)
class StringPresence(_ResponseVsReference):
    """1 when the normalised reference appears inside the normalised response, else 0.
    Suited to short references (a number, a name)."""

    name = "string_presence"
    compares_words = True

    def compare(self, response, reference):
        # Whole words only: "5" is not present in "15", nor "cat" in "concatenate".
        # Chinese words may still match inside a longer word (segmentation varies).
        edge = f"[^\\W{HAN}]"
        pattern = f"(?<!{edge}){re.escape(normalize_answer(reference))}(?!{edge})"
        present = re.search(pattern, normalize_answer(response)) is not None
        return Score(float(present), "reference found in response" if present else "reference not found in response")


@register
@dataclass(frozen=True)
class TokenF1(_ResponseVsReference):
    """SQuAD-style token F1 between response and reference: 2PR/(P+R) over the multiset
    of shared words, Chinese segmented into words."""

    name = "token_f1"
    compares_words = True

    def compare(self, response, reference):
        value, details = token_f1(response, reference)
        return Score(value, f"{details['overlap']} shared tokens", details=details)


@register
@dataclass(frozen=True)
class BLEU(_ResponseVsReference):
    """Sentence BLEU (sacrebleu, exponential smoothing) / 100; Chinese uses the ``zh``
    tokenizer (characters), other text ``13a``."""

    name = "bleu"

    def compare(self, response, reference):
        tokenizer = "zh" if detect_language(reference) == "zh" else "13a"
        result = _bleu(tokenizer).sentence_score(response, [reference])
        details = {"tokenize": tokenizer, "precisions": [round(p, 2) for p in result.precisions], "bp": round(result.bp, 4)}
        return Score(min(result.score / 100, 1.0), f"BLEU {result.score:.1f}", details=details)


class _Rouge(_ResponseVsReference):
    variant: ClassVar[str]
    compares_words = True

    def compare(self, response, reference):
        precision, recall, f_measure = rouge(response, reference, self.variant)
        details = {"precision": round(precision, 4), "recall": round(recall, 4)}
        return Score(f_measure, f"{self.variant} F-measure", details=details)


@register
@dataclass(frozen=True)
class Rouge1(_Rouge):
    """ROUGE-1 F-measure: overlap of single words (Chinese segmented into words)."""

    name = "rouge1"
    variant = "rouge1"


@register
@dataclass(frozen=True)
class Rouge2(_Rouge):
    """ROUGE-2 F-measure: overlap of word bigrams (Chinese segmented into words)."""

    name = "rouge2"
    variant = "rouge2"


@register
@dataclass(frozen=True)
class RougeL(_Rouge):
    """ROUGE-L F-measure: longest common word subsequence (Chinese segmented into words)."""

    name = "rougeL"
    variant = "rougeL"


@register
@dataclass(frozen=True)
class ChrF(_ResponseVsReference):
    """Sentence chrF (sacrebleu, character n-grams up to 6, beta 2) / 100."""

    name = "chrf"

    def compare(self, response, reference):
        result = _chrf().sentence_score(response, [reference])
        return Score(min(result.score / 100, 1.0), f"chrF {result.score:.1f}")


@register
@dataclass(frozen=True)
class LevenshteinSimilarity(_ResponseVsReference):
    """1 - Levenshtein distance / length of the longer text, on normalised texts
    (rapidfuzz ``normalized_similarity``)."""

    name = "levenshtein_similarity"

    def compare(self, response, reference):
        a, b = normalize(response), normalize(reference)
        distance = Levenshtein.distance(a, b)
        return Score(Levenshtein.normalized_similarity(a, b), f"{distance} character edits", details={"distance": distance})
