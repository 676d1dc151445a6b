"""Claim support: the judge's P(yes) combined with model-free evidence, calibrated.

The packaged 1.5B judge ranks claims fairly well, but its P(yes) for an unsupported claim
is mostly above 0.5, and a calibration fitted on one data set moves the 0.5 line to where
it suits that set only. Evidence the judge does not weigh well is cheap to compute:
numbers, names and words of the claim that the premise never mentions, a negation the
evidence lacks, and how close the claim's embedding comes to any premise sentence.

Faithfulness turns each claim's P(yes) into a calibrated P(supported) here
(:func:`supported_probability`). Everything else is pure:

- :func:`lexical_evidence`: model-free features of (claim, premise, evidence sentences),
  English and Chinese (Chinese words by rjieba, Arabic and Chinese numerals).
- :class:`ClaimSupportHead`: a few coefficients (``resources/claim_support_head.json``,
  fitted by ``benchmarks/claim_support_eval.py`` on several labelled sources and chosen by
  leave-one-source-out) that map logit(P(yes)) and the features to a calibrated
  P(supported) = sigmoid(w . x + b).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ragmeter.data.numerals import chinese_numbers
from ragmeter.data.text import HAN, split_sentences, tokenize, without_citations
from ragmeter.judges.base import Verdict
from ragmeter.metrics.evidence import SCREENED

#: P(yes) is kept in [LOGIT_FLOOR, 1 - LOGIT_FLOOR] before taking its logit.
LOGIT_FLOOR = 1e-4

_EN_STOPWORDS = frozenset(
    """a an the and or but if then than so as of at by for from in into on onto to with without about over under
    after before between during through up down out off again further once here there when where why how all any both
    each few more most other some such only own same too very can will just should now is are was were be been being
    have has had having do does did doing would could may might must shall this that these those it its it's they them
    their theirs he him his she her hers we us our you your i me my who whom which what whose also not no nor never
    said says say told one while because until upon within via per""".split()  # noqa: SIM905
)
_ZH_STOPWORDS = frozenset(
    "的 了 是 在 和 与 及 或 也 都 就 而 但 并 把 被 对 于 为 以 从 到 这 那 其 之 个 有 要 会 可 能 将 等 中 上 下 他 她 它 们 我 你 着 过 又".split()  # noqa: SIM905
)
_EN_NEGATIONS = frozenset("not no never without none nobody nothing neither nor cannot".split())  # noqa: SIM905
_ZH_NEGATIONS = frozenset("不 没 没有 无 未 非 别 勿 无需 不能 不得 不可 不要 不需要 不用 不会 不是 禁止 无法 不再".split())  # noqa: SIM905
#: rjieba keeps many negated verbs whole ("不算", "没收到", "未经"): a word that starts with one
#: of these characters is a negation, unless it starts with a word that negates nothing.
_ZH_NEGATION_HEADS = ("不", "没", "未")
_ZH_NOT_NEGATING = ("不过", "不断", "不仅", "不但", "不少", "不久", "不论", "不管", "不如", "不同", "不错", "不止", "未来", "没收")
#: Negations inside a word rjieba keeps whole ("并非如此", "从未"), at its start.
_ZH_INNER_NEGATIONS = (
    "并非",
    "并不",
    "并没",
    "并未",
    "从不",
    "从未",
    "从没",
    "绝不",
    "决不",
    "毫不",
    "永不",
    "绝非",
    "尚未",
    "仍未",
    "还没",
    "还未",
)
_NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "dozen": 12,
}  # fmt: skip
_DIGIT_NUMBER = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?::(\d{2}))?")
_CAPITALISED = re.compile(r"(?<![\w'’])[A-Z][\w]*(?:['’][sS])?")
_HAN_CHAR = re.compile(f"[{HAN}]")


@dataclass(frozen=True)
class ClaimEvidence:
    """Model-free evidence about one claim (see :func:`lexical_evidence`).

    Attributes:
        novel_numbers: Numbers, times and counts in the claim that the premise never states.
        novel_names: Capitalised names (English) or Latin-script names (in Chinese text) of
            the claim that the premise never mentions.
        novel_word_share: Share of the claim's content words the premise never uses (0 to 1).
        negation_added: 1.0 when the claim has more negations than its evidence sentences.
        claim_tokens: Words in the claim.
    """

    novel_numbers: float
    novel_names: float
    novel_word_share: float
    negation_added: float
    claim_tokens: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def numbers_in(text: str) -> set[str]:
    """The numbers of ``text`` as canonical strings: "1,000" -> "1000", "3.50" -> "3.5",
    "09:00" -> "9" (a whole hour) and "9:30" -> "9:30", "two" -> "2", "十二个" -> "12"."""
    text = unicodedata.normalize("NFKC", text)
    found: set[str] = set()
    for whole, fraction, minutes in _DIGIT_NUMBER.findall(text):
        value = str(int(whole.replace(",", "")))
        if minutes and minutes != "00":
            value = f"{value}:{minutes}"
        elif fraction and fraction.strip("0"):
            value = f"{value}.{fraction.rstrip('0')}"
        found.add(value)
    for word in tokenize(text):
        if word in _NUMBER_WORDS:
            found.add(str(_NUMBER_WORDS[word]))
    found.update(str(value) for _, value in chinese_numbers(text))
    return found


def names_in(text: str) -> set[str]:
    """Capitalised words of ``text``, lower-cased, possessive dropped. The first word of a
    sentence counts only when it is an acronym, holds a digit, or is capitalised elsewhere
    in ``text`` too; capitalised stop words ("The", "It") never count."""
    later: set[str] = set()
    first: set[str] = set()
    for sentence in split_sentences(text) or [text]:
        lead = re.search(r"\w", sentence)
        for match in _CAPITALISED.finditer(sentence):
            word = re.sub(r"['’][sS]$", "", match.group(0))
            (first if lead and match.start() == lead.start() else later).add(word)
    acronym = {w for w in first if (w.isupper() and len(w) > 1) or any(ch.isdigit() for ch in w)}
    keep = later | acronym | (first & later)
    return {w.lower() for w in keep if w.lower() not in _EN_STOPWORDS}


_SUFFIXES = ("ingly", "edly", "ings", "ing", "ies", "ied", "ed", "es", "s", "ly")


def stem(word: str) -> str:
    """A crude English stem for matching inflections: "opens", "opened", "opening" ->
    "open"; "studies" -> "study"; at most 6 characters ("protesters" -> "protes")."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    return word.rstrip("e")[:6] if len(word) > 3 else word


def content_words(text: str) -> list[str]:
    """Words of ``text`` that carry content: no stop words, no words with digits, no
    one-character words (Chinese ones included: mostly particles and measure words)."""
    words = []
    for word in tokenize(text):
        word = re.sub(r"['’]s$", "", word)
        if word in _EN_STOPWORDS or word in _ZH_STOPWORDS or any(ch.isdigit() for ch in word):
            continue
        if len(word) > 1:
            words.append(word)
    return words


def _is_novel(word: str, premise_stems: set[str], premise_text: str) -> bool:
    if _HAN_CHAR.search(word):  # Chinese: segmentations differ, so look for the characters
        return word not in premise_text
    return stem(word) not in premise_stems


def negations(text: str) -> int:
    """Negation cues in ``text``: "not", "never", "n't"..., 不, 没有, 无需, and Chinese words
    that hold one ("不算", "未经", "并非如此"; not "不过", "未来", "非常")."""
    count = 0
    for word in tokenize(text):
        if word in _EN_NEGATIONS or word in _ZH_NEGATIONS or word.endswith(("n't", "n’t")) or _negated_chinese_word(word):
            count += 1
    return count


def _negated_chinese_word(word: str) -> bool:
    if word.startswith(_ZH_INNER_NEGATIONS):
        return True
    return word.startswith(_ZH_NEGATION_HEADS) and not word.startswith(_ZH_NOT_NEGATING)


def lexical_evidence(claim: str, premise: str | Sequence[str], evidence: str | Sequence[str] | None = None) -> ClaimEvidence:
    """Model-free evidence that ``claim`` says more than ``premise``.

    Args:
        claim: One statement (a sentence of a response); its bracketed citations are ignored.
        premise: What it should be supported by: a text or several (retrieved contexts).
        evidence: The premise sentences the judge was shown (the closest ones); default
            the whole premise. Only the negation check uses it: a whole premise almost
            always has a negation somewhere.
    """
    claim = without_citations(claim)  # "[runbook#2]" is a source, not a number or a name the claim states
    premise_text = premise if isinstance(premise, str) else "\n".join(premise)
    evidence_text = premise_text if evidence is None else (evidence if isinstance(evidence, str) else "\n".join(evidence))
    premise_norm = unicodedata.normalize("NFKC", premise_text).lower()
    premise_tokens = {re.sub(r"['’]s$", "", w) for w in tokenize(premise_text)}
    premise_stems = {stem(w) for w in premise_tokens}
    numbers = numbers_in(claim) - numbers_in(premise_text)
    names = {n for n in names_in(claim) if n not in premise_tokens and n not in premise_norm}
    words = content_words(claim)
    novel = sum(_is_novel(w, premise_stems, premise_norm) for w in words)
    return ClaimEvidence(
        novel_numbers=float(len(numbers)),
        novel_names=float(len(names)),
        novel_word_share=novel / len(words) if words else 0.0,
        negation_added=float(negations(claim) > negations(evidence_text)),
        claim_tokens=float(len(tokenize(claim))),
    )


def logit(p: float) -> float:
    """log(p / (1 - p)) with ``p`` kept in [LOGIT_FLOOR, 1 - LOGIT_FLOOR]."""
    p = min(max(p, LOGIT_FLOOR), 1 - LOGIT_FLOOR)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class ClaimSupportHead:
    """P(supported) = sigmoid(intercept + sum of coefficient * feature).

    Attributes:
        coefficients: Weight of each feature by name. ``logit_p_yes`` is the judge's
            logit(P(yes)) (:func:`logit`); the others are :class:`ClaimEvidence` fields and
            :func:`embedding_evidence` keys. Transforms are part of the name:
            ``log1p_claim_tokens`` is log(1 + claim_tokens), ``any_novel_numbers`` is 1.0
            when novel_numbers > 0.
        intercept: The bias term.
        description: What it was fitted on (for reports).
    """

    coefficients: Mapping[str, float]
    intercept: float
    description: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClaimSupportHead:
        """A head from its JSON form (``coefficients``, ``intercept``, ``description``)."""
        return cls(dict(data["coefficients"]), float(data["intercept"]), str(data.get("description", "")))

    def score(self, p_yes: float, features: Mapping[str, float]) -> float:
        """The linear score w . x + b (log-odds of support)."""
        values = derived_features(p_yes, features)
        missing = [name for name in self.coefficients if name not in values]
        if missing:
            raise KeyError(f"the claim-support head needs feature(s) {', '.join(missing)}")
        return self.intercept + sum(weight * values[name] for name, weight in self.coefficients.items())

    def probability(self, p_yes: float, features: Mapping[str, float]) -> float:
        """Calibrated P(supported) from the judge's P(yes) and the claim's features."""
        z = self.score(p_yes, features)
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def derived_features(p_yes: float | None, features: Mapping[str, float]) -> dict[str, float]:
    """``features`` plus the transforms a head may use (see :class:`ClaimSupportHead`);
    ``p_yes`` None leaves out ``logit_p_yes`` (a head without the judge)."""
    values = dict(features)
    if p_yes is not None:
        values["logit_p_yes"] = logit(p_yes)
    if "claim_tokens" in values:
        values["log1p_claim_tokens"] = math.log1p(values["claim_tokens"])
    for name in ("novel_numbers", "novel_names"):
        if name in values:
            values[f"any_{name}"] = float(values[name] > 0)
    return values


@lru_cache(maxsize=1)
def packaged_head() -> ClaimSupportHead:
    """The head in ``resources/claim_support_head.json`` (fitted for the packaged model)."""
    data = json.loads(resources.files("ragmeter.resources").joinpath("claim_support_head.json").read_text(encoding="utf-8"))
    return ClaimSupportHead.from_dict(data["head"])


def supported_probability(head: ClaimSupportHead, claim: str, premise: str | Sequence[str], verdict: Verdict) -> float:
    """Calibrated P(supported) of ``claim`` (see :class:`ClaimSupportHead`).

    Args:
        head: The coefficients (normally :func:`packaged_head`).
        claim: The statement judged.
        premise: The text or chunks it was judged against.
        verdict: The judge's verdict on it (P(yes), and the evidence sentences it was shown).

    A claim screened as an instruction to the judge is never supported (0.0).
    """
    if verdict.method == SCREENED.method:
        return 0.0
    return head.probability(verdict.p_yes, lexical_evidence(claim, premise, verdict.evidence).as_dict())
