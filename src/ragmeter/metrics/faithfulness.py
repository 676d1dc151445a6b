"""Groundedness judged by an LLM: are the response's claims supported by the retrieved contexts?"""

from __future__ import annotations

from dataclasses import dataclass

from ragmeter.data.schema import Sample
from ragmeter.metrics.base import Score
from ragmeter.metrics.llm import ClaimCheckingMetric, blank, chunks_of, clip
from ragmeter.metrics.registry import register


@register
@dataclass(frozen=True)
class Faithfulness(ClaimCheckingMetric):
    """Share of the response's claims that the retrieved contexts support:
    supported claims / claims.

    Claims are the response's sentences (``claims="llm"``: statements written by the
    judge); one verdicts call checks them all against all retrieved contexts, and a claim
    is supported when the judge's p(yes) reaches ``threshold``. A judge with
    ``evidence_sentences`` (the local judge: 3) checks each claim against the sentences of
    the contexts closest to it instead; the details show that evidence. Over-long contexts
    are checked chunk by chunk, then window by window (the details give the strategy). Unscored
    when the response is empty or nothing was retrieved: faithfulness is undefined without
    contexts. Text in the response that addresses the judge is just another claim.
    """

    name = "faithfulness"
    family = "groundedness"
    required = ("user_input", "response", "retrieved_contexts")

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        contexts = chunks_of(sample)
        if not contexts and not blank(sample.response):
            return Score.unscored("nothing retrieved to ground the response in")
        claims = await self.claims_in(sample.response or "", "response", sample.user_input, judges, lang)
        if isinstance(claims, Score):
            return claims
        check = await self.check_claims(claims, contexts, judges, lang)
        details = {"claims": check.details(), "strategy": check.strategy, "threshold": self.threshold}
        explanation = f"{check.n_supported} of {len(claims)} claims are supported by the retrieved contexts"
        if check.unsupported():
            explanation += f"; unsupported: {clip(check.unsupported()[0])}"
        return Score(check.n_supported / len(claims), explanation, details=details)
