"""Groundedness judged by an LLM: are the response's claims supported by the retrieved contexts?"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmeter.data.schema import Sample
from ragmeter.metrics.base import Score
from ragmeter.metrics.checks import declines_only
from ragmeter.metrics.claim_support import packaged_head, supported_probability
from ragmeter.metrics.llm import ClaimCheck, ClaimCheckingMetric, blank, chunks_of, clip
from ragmeter.metrics.registry import register


@register
@dataclass(frozen=True)
class Faithfulness(ClaimCheckingMetric):
    """How likely the response's least-supported claim is supported by the retrieved
    contexts: the lowest calibrated P(supported) over its claims. Below 0.5, at least one
    claim is more likely unsupported than supported.

    Claims are the response's sentences (``claims="llm"``: statements written by the
    judge); one verdicts call checks them all against all retrieved contexts. A judge with
    ``evidence_sentences`` (the local judge: 3) checks each claim against the sentences of
    the contexts closest to it instead; the details show that evidence. Over-long contexts
    are checked chunk by chunk, then window by window (the details give the strategy).

    Each claim's P(supported) combines the judge's P(yes) with evidence the judge weighs
    poorly: numbers and names of the claim the contexts never state, and a negation the
    evidence lacks (:mod:`ragmeter.metrics.claim_support`; the features and coefficients
    were fitted on six labelled sources and chosen by leave-one-source-out). A claim is supported when its
    P(supported) reaches ``threshold``; the details give each claim's P(yes) and
    P(supported) and the share of supported claims.

    Parameters:
        combine_evidence: ``False`` scores the share of claims whose P(yes) alone reaches
            ``threshold`` (the judge's verdicts, uncombined).

    A claim that does nothing but decline to answer ("I don't know.", "The context does not
    mention the pay rate.", :func:`~ragmeter.metrics.checks.declines_only`) states nothing the
    contexts could fail to support: it is set aside, listed in the details as ``declines``,
    and a response that only declines scores 1.0 (the judge gave such sentences P(supported)
    0.01 to 0.05, as low as a made-up fact). Whether declining was right is what
    ``refusal_accuracy`` and ``negative_rejection`` score.

    Unscored when the response is empty or nothing was retrieved: faithfulness is undefined
    without contexts. Text in the response that addresses the judge is just another claim,
    and never a supported one.
    """

    name = "faithfulness"
    family = "groundedness"
    required = ("user_input", "response", "retrieved_contexts")

    combine_evidence: bool = True

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        contexts = chunks_of(sample)
        if not contexts and not blank(sample.response):
            return Score.unscored("nothing retrieved to ground the response in")
        found = await self.claims_in(sample.response or "", "response", sample.user_input, judges, lang)
        if isinstance(found, Score):
            return found
        declines = [claim for claim in found if declines_only(claim, sample.user_input or "")]
        claims = [claim for claim in found if claim not in declines]
        if not claims:
            return Score(
                1.0,
                f"the response only declines to answer ({clip(declines[0])}): it states nothing the contexts could fail to support",
                details={"claims": [], "declines": declines},
            )
        check = await self.check_claims(claims, contexts, judges, lang)
        if not self.combine_evidence:
            return self.share_score(check, declines)
        check = self.combined(check, contexts)
        probabilities = check.probabilities or []
        weakest = min(range(len(claims)), key=probabilities.__getitem__)
        explanation = (
            f"{check.n_supported} of {len(claims)} claims are supported by the retrieved contexts; "
            f"least supported (P {probabilities[weakest]:.2f}): {clip(claims[weakest])}"
        )
        if declines:
            explanation += f"; {len(declines)} more only decline to answer"
        details = {
            "claims": check.details(),
            "strategy": check.strategy,
            "threshold": self.threshold,
            "supported_share": round(check.n_supported / len(claims), 4),
            "claim_support": packaged_head().description,
        }
        if declines:
            details["declines"] = declines
        return Score(min(probabilities), explanation, details=details)

    def combined(self, check: ClaimCheck, contexts: Sequence[str]) -> ClaimCheck:
        """``check`` with each claim's calibrated P(supported), and decisions taken on it."""
        head = packaged_head()
        probabilities = [
            supported_probability(head, claim, contexts, verdict) for claim, verdict in zip(check.claims, check.verdicts, strict=True)
        ]
        decisions = [p >= self.threshold for p in probabilities]
        return dataclasses.replace(check, probabilities=probabilities, decisions=decisions)

    def share_score(self, check: ClaimCheck, declines: list[str]) -> Score:
        """The share of claims whose P(yes) reaches the threshold (``declines``: the
        sentences set aside as refusals, listed in the details)."""
        details: dict[str, Any] = {"claims": check.details(), "strategy": check.strategy, "threshold": self.threshold}
        if declines:
            details["declines"] = declines
        explanation = f"{check.n_supported} of {len(check.claims)} claims are supported by the retrieved contexts"
        if check.unsupported():
            explanation += f"; unsupported: {clip(check.unsupported()[0])}"
        return Score(check.n_supported / len(check.claims), explanation, details=details)
