"""The base of LLM-judged metrics, and the helpers they share to decide and explain.

LLM metrics derive from :class:`LLMMetric`: it finds the sample's language and turns any
:class:`~ragmeter.judges.base.JudgeError` (including a ``ContextTooLong`` no strategy could
get around, and malformed generate output) into ``Score.unscored("judge failed: ...",
failed=True)``; other exceptions propagate to the engine, which records them as failed too.

Metrics that split a text into claims and check each against a premise derive from
:class:`ClaimCheckingMetric` (parameters ``threshold`` and ``claims``) and call
:meth:`ClaimCheckingMetric.check_claims`: guard, claims, verdicts, decisions in one place.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragmeter.data.schema import Sample
from ragmeter.data.secrets import redact
from ragmeter.judges.base import JudgeError, Verdict
from ragmeter.metrics.base import Metric, Needs, Score, finite_number
from ragmeter.metrics.claims import CLAIM_MODES, claims_of, language_of
from ragmeter.metrics.details import item_entries
from ragmeter.metrics.evidence import supported

if TYPE_CHECKING:
    from ragmeter.judges import Judges


def check_threshold(name: str, threshold: float, parameter: str = "threshold") -> None:
    """A decision threshold must be a number in (0, 1].

    Args:
        name: The metric's name, for the error message.
        threshold: The value given.
        parameter: The metric's parameter that holds it.
    """
    if finite_number(threshold) is None or not 0 < threshold <= 1:
        raise ValueError(f"{name}: {parameter} must be a number in (0, 1], got {reprlib.repr(threshold)}")


def check_claims_mode(name: str, mode: str) -> None:
    if mode not in CLAIM_MODES:
        raise ValueError(f"{name}: claims must be one of {', '.join(CLAIM_MODES)}, got {mode!r}")


def decide(verdicts: Sequence[Verdict], threshold: float = 0.5) -> list[bool]:
    """Yes when ``p_yes >= threshold``."""
    return [v.p_yes >= threshold for v in verdicts]


def clip(text: str, n: int = 80) -> str:
    """``text`` shortened to ``n`` characters for an explanation."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def chunks_of(sample: Sample) -> list[str]:
    """The retrieved contexts that are not blank."""
    return [c for c in (sample.retrieved_contexts or []) if isinstance(c, str) and c.strip()]


def blank(text: str | None) -> bool:
    return not (text or "").strip()


class LLMMetric(Metric):
    """Base of the LLM-judged metrics: finds the language, and turns judge failures into
    failed unscored scores (``"judge failed: ..."``). Subclasses implement :meth:`judge`."""

    needs = Needs.LLM

    async def score(self, sample: Sample, judges: Judges) -> Score:
        if judges.llm is None:
            return Score.unscored("no LLM judge is configured", failed=True)
        try:
            return await self.judge(sample, judges, language_of(sample))
        except JudgeError as exc:
            return Score.unscored(redact(f"judge failed: {exc}"), failed=True)

    async def judge(self, sample: Sample, judges: Judges, lang: str) -> Score:
        raise NotImplementedError


@dataclass(frozen=True)
class ClaimCheck:
    """The claims of a text and the judge's verdict on each against a premise.

    Attributes:
        claims: The claims, in text order.
        verdicts: One verdict per claim.
        decisions: Whether each claim's p(yes) reaches the metric's threshold.
        strategy: How the premise was read (see :mod:`ragmeter.judges.windowing`).
        threshold: The threshold the decisions used.
        probabilities: Each claim's P(supported), when the metric combines the verdict with
            other evidence (the claim-support head, :mod:`ragmeter.metrics.claim_support`; the
            claim's words, :mod:`ragmeter.metrics.coverage`); the decisions are then taken on it.
    """

    claims: list[str]
    verdicts: list[Verdict]
    decisions: list[bool]
    strategy: str
    threshold: float
    probabilities: list[float] | None = None

    @property
    def n_supported(self) -> int:
        return sum(self.decisions)

    def unsupported(self) -> list[str]:
        """The claims decided no, in order."""
        return [c for c, ok in zip(self.claims, self.decisions, strict=True) if not ok]

    def details(self, yes: str = "supported") -> list[dict[str, Any]]:
        """Per-claim details (see :func:`ragmeter.metrics.details.item_entries`)."""
        return item_entries(self.claims, self.verdicts, self.threshold, yes=yes, probabilities=self.probabilities)


@dataclass(frozen=True)
class ClaimCheckingMetric(LLMMetric):
    """Base of the metrics that split a text into claims and check each against a premise.

    Parameters:
        threshold: A claim holds when the judge's p(yes) reaches it (in (0, 1]).
        claims: ``"sentences"`` (the text's sentences; no model call) or ``"llm"`` (statements
            the judge writes).
    """

    threshold: float = 0.5
    claims: str = "sentences"

    def __post_init__(self) -> None:
        check_threshold(self.name, self.threshold)
        check_claims_mode(self.name, self.claims)
        super().__post_init__()

    async def claims_in(self, text: str, what: str, question: str | None, judges: Judges, lang: str) -> list[str] | Score:
        """The claims of ``text`` (the ``what``: "response", "reference"), or the unscored
        score saying why there are none."""
        if blank(text):
            return Score.unscored(f"{what} is empty")
        claims = await claims_of(text, question, judges, lang, self.claims)
        if not claims:
            return Score.unscored(f"the {what} has no claims to check (claims mode '{self.claims}')")
        return claims

    async def check_claims(self, claims: Sequence[str], premise: str | Sequence[str], judges: Judges, lang: str) -> ClaimCheck:
        """Check each claim against ``premise`` (a text, or retrieved chunks) and decide it."""
        verdicts, strategy = await supported(judges, premise, claims, lang)
        return ClaimCheck(list(claims), verdicts, decide(verdicts, self.threshold), strategy, self.threshold)
