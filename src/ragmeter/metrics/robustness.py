"""Robustness judged by an LLM: does noise in the contexts end up in the response, and does
the system decline when the contexts do not hold the answer?"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ragmeter.data.schema import Sample
from ragmeter.judges.base import ANSWERABLE_LINE, Verdict
from ragmeter.judges.windowing import ask, premise_verdicts
from ragmeter.metrics.base import Score
from ragmeter.metrics.checks import refusal_phrase
from ragmeter.metrics.details import ANSWERED, P_ANSWERABLE
from ragmeter.metrics.evidence import supported
from ragmeter.metrics.llm import ClaimCheckingMetric, LLMMetric, blank, check_threshold, chunks_of, clip, decide
from ragmeter.metrics.registry import register

NOISE_MODES = ("relevant", "irrelevant")


@register
@dataclass(frozen=True)
class NoiseSensitivity(ClaimCheckingMetric):
    """Share of the response's claims that are wrong (not supported by the reference) and
    taken from a relevant retrieved chunk (``mode="relevant"``, default) or from an
    irrelevant one (``mode="irrelevant"``): such claims / response claims. Lower is better.

    As in RAGAS: a chunk is relevant when it supports at least one reference claim; a
    claim supported by both kinds of chunk counts as coming from a relevant one. Each chunk
    is read once: one verdicts call per chunk judges the reference claims and the response
    claims together, plus one call checking the response claims against the reference.
    The id names a non-default mode: ``noise_sensitivity(irrelevant)``.
    """

    name = "noise_sensitivity"
    family = "robustness"
    required = ("user_input", "response", "reference", "retrieved_contexts")
    higher_is_better = False
    mode: str = "relevant"

    def __post_init__(self) -> None:
        if self.mode not in NOISE_MODES:
            raise ValueError(f"{self.name}: mode must be one of {', '.join(NOISE_MODES)}, got {self.mode!r}")
        super().__post_init__()

    @property
    def id(self) -> str:
        return self.name if self.mode == "relevant" else f"{self.name}({self.mode})"

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        if not chunks_of(sample) and not blank(sample.response) and not blank(sample.reference):
            return Score.unscored("nothing was retrieved: there is no retrieved chunk, relevant or not, to be sensitive to")
        response_claims = await self.claims_in(sample.response or "", "response", sample.user_input, judges, lang)
        if isinstance(response_claims, Score):
            return response_claims
        reference_claims = await self.claims_in(sample.reference or "", "reference", sample.user_input, judges, lang)
        if isinstance(reference_claims, Score):
            return reference_claims
        contexts = chunks_of(sample)
        items = list(dict.fromkeys(reference_claims + response_claims))
        (correct_verdicts, _), *per_chunk = await asyncio.gather(
            supported(judges, sample.reference or "", response_claims, lang),
            *(supported(judges, chunk, items, lang) for chunk in contexts),
        )
        correct = decide(correct_verdicts, self.threshold)
        chunk_details, sources, strategy = self._sources(per_chunk, items, reference_claims, response_claims)
        claims: list[dict[str, Any]] = []
        for j, claim in enumerate(response_claims):
            relevant, irrelevant = sources[j]
            from_kind = bool(relevant) if self.mode == "relevant" else bool(irrelevant) and not relevant
            claims.append(
                {
                    "claim": claim,
                    "p_correct": round(correct_verdicts[j].p_yes, 4),
                    "correct": correct[j],
                    "relevant_chunks": sorted(relevant),
                    "irrelevant_chunks": sorted(irrelevant),
                    "counted": not correct[j] and from_kind,
                }
            )
        counted = sum(c["counted"] for c in claims)
        details = {
            "mode": self.mode,
            "claims": claims,
            "chunks": chunk_details,
            "strategy": strategy,
            "threshold": self.threshold,
        }
        n_relevant_chunks = sum(c["relevant"] for c in chunk_details)
        kind = "relevant" if self.mode == "relevant" else "irrelevant"
        explanation = (
            f"{counted} of {len(response_claims)} response claims are wrong and come from a {kind} chunk "
            f"({n_relevant_chunks} of {len(contexts)} chunks are relevant)"
        )
        wrong = [c["claim"] for c in claims if c["counted"]]
        if wrong:
            explanation += f"; e.g. {clip(wrong[0], 60)}"
        return Score(counted / len(response_claims), explanation, details=details)

    def _sources(
        self, per_chunk: list[tuple[list[Verdict], str]], items: list[str], reference_claims: list[str], response_claims: list[str]
    ) -> tuple[list[dict[str, Any]], list[tuple[set[int], set[int]]], str]:
        """Per chunk: whether it is relevant (supports a reference claim); per response claim:
        the ranks of the relevant and of the irrelevant chunks that support it; the strategy."""
        chunks: list[dict[str, Any]] = []
        sources: list[tuple[set[int], set[int]]] = [(set(), set()) for _ in response_claims]
        strategies = set()
        for rank, (verdicts, strategy) in enumerate(per_chunk, start=1):
            strategies.add(strategy)
            by_item = {item: v.p_yes >= self.threshold for item, v in zip(items, verdicts, strict=True)}
            relevant = any(by_item[c] for c in reference_claims)
            chunks.append({"rank": rank, "relevant": relevant, "reference_claims_supported": sum(by_item[c] for c in reference_claims)})
            for j, claim in enumerate(response_claims):
                if by_item[claim]:
                    sources[j][0 if relevant else 1].add(rank)
        strategy = "whole" if strategies == {"whole"} else ("windows" if "windows" in strategies else "per_chunk")
        return chunks, sources, strategy


@register
@dataclass(frozen=True)
class NegativeRejection(LLMMetric):
    """When the retrieved contexts do not contain the answer: 1 if the response declines to
    answer, else 0 (RGB's negative rejection).

    First one verdict: do the contexts contain the answer to the question? If they do (p(yes)
    at least ``answered``), the sample is unscored (negative rejection does not apply); if not,
    a second verdict says whether the response declines (p(yes) at least ``threshold``). With
    nothing retrieved only the second verdict is asked.

    Args:
        threshold: The response declines when the judge's p(yes) reaches it (in (0, 1]).
        answered: The contexts contain the answer when the judge's p(yes) reaches it (in (0, 1];
            default :data:`~ragmeter.judges.base.ANSWERABLE_LINE`: at 0.5 the packaged judge
            finds the answer in most contexts that are on the question's topic and lack it).
    """

    name = "negative_rejection"
    family = "robustness"
    required = ("user_input", "retrieved_contexts", "response")
    threshold: float = 0.5
    answered: float = ANSWERABLE_LINE

    def __post_init__(self) -> None:
        check_threshold(self.name, self.threshold)
        check_threshold(self.name, self.answered, "answered")
        super().__post_init__()

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        if blank(sample.user_input):
            return Score.unscored("question is empty")
        if blank(sample.response):
            return Score.unscored("response is empty: it neither answers nor declines")
        contexts = chunks_of(sample)
        details: dict[str, Any] = {"threshold": self.threshold, ANSWERED: self.answered}
        if contexts:
            (answerable,), strategy = await premise_verdicts(judges.require_llm(), "answerable", contexts, [sample.user_input or ""], lang)
            details.update({P_ANSWERABLE: round(answerable.p_yes, 4), "strategy": strategy})
            if answerable.p_yes >= self.answered:
                return Score.unscored(
                    f"the contexts contain the answer (p={answerable.p_yes:.2f}): negative rejection applies only when they do not",
                    details,
                )
        else:
            details[P_ANSWERABLE] = None
        (refusal,) = await ask(judges.require_llm(), "refusal", {"question": sample.user_input}, [sample.response or ""], lang)
        declined = refusal.p_yes >= self.threshold
        details.update(p_declines=round(refusal.p_yes, 4), declines=declined, refusal_phrase=refusal_phrase(sample.response or ""))
        if refusal.reason:
            details["reason"] = refusal.reason
        where = "nothing was retrieved" if not contexts else f"the contexts do not contain the answer (p={details['p_answerable']:.2f})"
        if declined:
            return Score(1.0, f"{where}, and the response declines (p={refusal.p_yes:.2f})", details=details)
        return Score(0.0, f"{where}, yet the response answers (p(declines)={refusal.p_yes:.2f})", details=details)
