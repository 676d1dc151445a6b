"""Groundedness judged by an LLM: are the response's claims supported by the retrieved contexts?"""

from __future__ import annotations

from dataclasses import dataclass

from ragmeter.metrics.base import Score, register
from ragmeter.metrics.llm_support import (
    LLMMetric,
    blank,
    check_claims_mode,
    check_threshold,
    chunks_of,
    claims_of,
    clip,
    decide,
    judged,
    supported,
)
from ragmeter.data.schema import Sample


@register
@dataclass(frozen=True)
class Faithfulness(LLMMetric):
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
    threshold: float = 0.5
    claims: str = "sentences"

    def __post_init__(self) -> None:
        check_threshold(self.name, self.threshold)
        check_claims_mode(self.name, self.claims)

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        if blank(sample.response):
            return Score.unscored("response is empty")
        contexts = chunks_of(sample)
        if not contexts:
            return Score.unscored("nothing retrieved to ground the response in")
        claims = await claims_of(sample.response, sample.user_input, judges, lang, self.claims)
        if not claims:
            return Score.unscored(f"the response has no claims to verify (claims mode '{self.claims}')")
        verdicts, strategy = await supported(judges, contexts, claims, lang)
        decisions = decide(verdicts, self.threshold)
        n = sum(decisions)
        details = {"claims": judged(claims, verdicts, self.threshold), "strategy": strategy, "threshold": self.threshold}
        unsupported = [c for c, ok in zip(claims, decisions) if not ok]
        explanation = f"{n} of {len(claims)} claims are supported by the retrieved contexts"
        if unsupported:
            explanation += f"; unsupported: {clip(unsupported[0])}"
        return Score(n / len(claims), explanation, details=details)
