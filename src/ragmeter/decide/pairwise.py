"""Pairwise judging: which of two responses to the same question is better for a criterion.

Each pair is judged twice, with the responses in both orders (A shown first, then B shown
first), through the judge's ``pairwise`` prompt: ``judge.scale("pairwise", shared,
["1", "2"], lang)`` gives P(the response shown first is better).

Definitions:

- **Verdict of one order**: the first response when P(first) > 0.5 + margin, the second
  when P(first) < 0.5 - margin, no preference inside [0.5 - margin, 0.5 + margin]
  (with the default margin 0, only P = 0.5 exactly is no preference).
- **Winner of a pair**: the response both orders prefer; a tie otherwise (the orders
  disagree, so the verdict depends on position, or one or both orders have no
  preference).
- **Position consistency**: share of judged pairs whose two orders give the same verdict
  about the underlying responses (both A, both B, or both no preference).
- **First-position rate**: share of order verdicts with a preference that chose the
  response shown first (0.5 for a judge without position bias).
- **Win rate of B over A**: (B wins + ties / 2) / judged pairs, with a Wilson score
  interval on that proportion (ties counting half a success). A tie varies less than a
  coin flip, so with ties the interval is slightly conservative.
- **Length bias**: among pairs the judge decided whose responses differ in length (in
  words; Chinese segmented), the share the longer response won (X); among pairs a
  reference signal decided (a label, or a metric score), the share where the longer
  response is the better one (Y). Length bias = X - Y: how much more often the judge
  picks the longer response than it deserves.

Pairs that cannot be judged (a judge error) are kept with the error and left out of the
statistics, and counted.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ragmeter.data.schema import Sample
from ragmeter.data.secrets import redact
from ragmeter.data.text import tokenize
from ragmeter.decide.pairs import Pair
from ragmeter.judges.base import LLMJudge
from ragmeter.metrics.claims import language_of
from ragmeter.results.inference import wilson_interval
from ragmeter.run.sync import run_sync

TASK = "pairwise"
OPTIONS = ("1", "2")
DEFAULT_CRITERION = "Factually correct and answers the question."
DEFAULT_CONCURRENCY = 4
_SIDES = ("a", "b")


# ---- pairs and verdicts --------------------------------------------------------------------


@dataclass
class PairVerdict:
    """The judge's verdicts on one pair.

    Attributes:
        key, question, reference, lang: From the :class:`Pair`.
        p_a_first: P(A is better) with A shown first.
        p_b_first: P(B is better) with B shown first.
        order_ab: Verdict with A first: ``"a"``, ``"b"`` or ``None`` (no preference).
        order_ba: Verdict with B first, about the same underlying responses.
        winner: ``"a"``, ``"b"`` or ``"tie"``; ``None`` when the pair was not judged.
        consistent: Both orders gave the same verdict.
        length_a, length_b: Lengths of the responses in words.
        error: Why the pair was not judged.
    """

    key: str
    question: str
    length_a: int
    length_b: int
    reference: str | None = None
    lang: str = "en"
    p_a_first: float | None = None
    p_b_first: float | None = None
    order_ab: str | None = None
    order_ba: str | None = None
    winner: str | None = None
    consistent: bool | None = None
    error: str | None = None

    @property
    def judged(self) -> bool:
        return self.winner is not None

    @property
    def longer(self) -> str | None:
        """``"a"`` or ``"b"``, whichever response is longer; ``None`` for equal lengths."""
        if self.length_a == self.length_b:
            return None
        return "a" if self.length_a > self.length_b else "b"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def order_verdict(p_first: float, margin: float = 0.0) -> str | None:
    """``"first"``, ``"second"`` or ``None``: the preference of one order, from P(first is
    better); inside [0.5 - margin, 0.5 + margin] there is no preference."""
    if p_first > 0.5 + margin:
        return "first"
    if p_first < 0.5 - margin:
        return "second"
    return None


def combine(order_ab: str | None, order_ba: str | None) -> tuple[str, bool]:
    """Winner (``"a"``, ``"b"`` or ``"tie"``) and consistency from the two orders' verdicts,
    both expressed about the underlying responses (``"a"``, ``"b"`` or ``None``)."""
    consistent = order_ab == order_ba
    if consistent and order_ab is not None:
        return order_ab, True
    return "tie", consistent


def _check_margin(margin: float) -> None:
    if not 0.0 <= margin < 0.5:
        raise ValueError(f"margin must be in [0, 0.5), got {margin}")


def _length(text: str) -> int:
    return len(tokenize(text))


def _lang(pair: Pair) -> str:
    if pair.lang:
        return pair.lang
    return language_of(Sample(user_input=pair.question, response=pair.response_a))


async def _p_first(judge: LLMJudge, question: str, criterion: str, first: str, second: str, lang: str) -> float:
    shared = {"question": question, "criterion": criterion, "response_1": first, "response_2": second}
    probabilities = await judge.scale(TASK, shared, list(OPTIONS), lang)
    p1, p2 = float(probabilities.get("1", 0.0)), float(probabilities.get("2", 0.0))
    if not (math.isfinite(p1) and math.isfinite(p2)) or p1 < 0 or p2 < 0 or p1 + p2 <= 0:
        raise ValueError(f"the judge gave no usable probabilities for options 1 and 2: {probabilities}")
    return p1 / (p1 + p2)


async def judge_pair(judge: LLMJudge, pair: Pair, criterion: str = DEFAULT_CRITERION, margin: float = 0.0) -> PairVerdict:
    """Judge one pair in both orders. A judge error is recorded in ``error``, never raised."""
    _check_margin(margin)
    verdict = PairVerdict(
        key=pair.key,
        question=pair.question,
        length_a=_length(pair.response_a),
        length_b=_length(pair.response_b),
        reference=pair.reference,
    )
    try:
        verdict.lang = _lang(pair)
        p_a_first, p_b_first = await asyncio.gather(
            _p_first(judge, pair.question, criterion, pair.response_a, pair.response_b, verdict.lang),
            _p_first(judge, pair.question, criterion, pair.response_b, pair.response_a, verdict.lang),
        )
    except Exception as exc:  # one pair must not end the run
        verdict.error = redact(f"{type(exc).__name__}: {exc}")
        return verdict
    to_side_ab = {"first": "a", "second": "b", None: None}
    to_side_ba = {"first": "b", "second": "a", None: None}
    verdict.p_a_first, verdict.p_b_first = p_a_first, p_b_first
    verdict.order_ab = to_side_ab[order_verdict(p_a_first, margin)]
    verdict.order_ba = to_side_ba[order_verdict(p_b_first, margin)]
    verdict.winner, verdict.consistent = combine(verdict.order_ab, verdict.order_ba)
    return verdict


# ---- statistics ----------------------------------------------------------------------------


def _share(hits: int, n: int) -> float | None:
    return hits / n if n else None


def summarize(verdicts: Sequence[PairVerdict], confidence: float = 0.95) -> dict[str, Any]:
    """Win rate of B over A with its Wilson interval, tie rate, position consistency,
    first-position rate, agreement with the reference and length bias (see the module
    docstring for the definitions)."""
    judged = [v for v in verdicts if v.judged]
    n = len(judged)
    wins_a = sum(v.winner == "a" for v in judged)
    wins_b = sum(v.winner == "b" for v in judged)
    ties = n - wins_a - wins_b
    interval = wilson_interval(wins_b + ties / 2, n, confidence)
    order_votes = [(v.order_ab, "a") for v in judged] + [(v.order_ba, "b") for v in judged]
    preferences = [(chosen, first) for chosen, first in order_votes if chosen is not None]
    decided = [v for v in judged if v.winner in _SIDES and v.longer is not None]
    referenced = [v for v in verdicts if v.reference in _SIDES and v.longer is not None]
    longer_wins = _share(sum(v.winner == v.longer for v in decided), len(decided))
    longer_better = _share(sum(v.reference == v.longer for v in referenced), len(referenced))
    with_reference = [v for v in judged if v.reference in _SIDES]
    return {
        "n_pairs": len(verdicts),
        "n_judged": n,
        "n_failed": len(verdicts) - n,
        "wins_a": wins_a,
        "wins_b": wins_b,
        "ties": ties,
        "win_rate_b": {
            "value": (wins_b + ties / 2) / n if n else None,
            "ci_low": interval[0] if interval else None,
            "ci_high": interval[1] if interval else None,
            "confidence": confidence,
            "method": "Wilson score interval on (B wins + ties/2) / judged pairs",
        },
        "tie_rate": _share(ties, n),
        "position_consistency": _share(sum(bool(v.consistent) for v in judged), n),
        "first_position_rate": _share(sum(chosen == first for chosen, first in preferences), len(preferences)),
        "reference_agreement": {
            "value": _share(sum(v.winner == v.reference for v in with_reference), len(with_reference)),
            "n": len(with_reference),
            "definition": "share of judged pairs with a reference winner where the judge's winner is the same (a tie counts as a miss)",
        },
        "length_bias": {
            "longer_wins": longer_wins,
            "n_decided": len(decided),
            "longer_is_better": longer_better,
            "n_reference": len(referenced),
            "bias": longer_wins - longer_better if longer_wins is not None and longer_better is not None else None,
        },
    }


# ---- running -------------------------------------------------------------------------------


@dataclass
class PairwiseReport:
    """Verdicts on every pair, the statistics, and what could not be paired.

    Attributes:
        criterion: The criterion judged.
        margin: No-preference margin around 0.5.
        verdicts: One per pair, in input order.
        statistics: See :func:`summarize`.
        matching: How the two sides were matched and what was left over (from
            :func:`match_samples`), when they were.
        settings: Judge and inputs, for the record.
    """

    criterion: str
    margin: float
    verdicts: list[PairVerdict]
    statistics: dict[str, Any]
    matching: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "margin": self.margin,
            "settings": self.settings,
            "statistics": self.statistics,
            "matching": self.matching,
            "pairs": [v.to_dict() for v in self.verdicts],
        }


async def ajudge_pairs(
    pairs: Iterable[Pair],
    judge: LLMJudge,
    criterion: str = DEFAULT_CRITERION,
    *,
    margin: float = 0.0,
    concurrency: int = DEFAULT_CONCURRENCY,
    confidence: float = 0.95,
) -> PairwiseReport:
    """Judge every pair in both orders, at most ``concurrency`` pairs at a time."""
    _check_margin(margin)
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if not criterion or not criterion.strip():
        raise ValueError("the criterion must not be empty")
    pairs = list(pairs)
    gate = asyncio.Semaphore(concurrency)

    async def one(pair: Pair) -> PairVerdict:
        async with gate:
            return await judge_pair(judge, pair, criterion, margin)

    verdicts = list(await asyncio.gather(*(one(p) for p in pairs)))
    return PairwiseReport(
        criterion=criterion,
        margin=margin,
        verdicts=verdicts,
        statistics=summarize(verdicts, confidence),
        settings={"judge": judge.describe()},
    )


def judge_pairs(
    pairs: Iterable[Pair], judge: LLMJudge, criterion: str = DEFAULT_CRITERION, *, close: bool = False, **options: Any
) -> PairwiseReport:
    """Blocking :func:`ajudge_pairs` (also from inside a running event loop); ``close``
    releases the judge afterwards (its model memory, its connections)."""

    async def run() -> PairwiseReport:
        try:
            return await ajudge_pairs(pairs, judge, criterion, **options)
        finally:
            if close:
                await judge.aclose()

    return run_sync(run())
