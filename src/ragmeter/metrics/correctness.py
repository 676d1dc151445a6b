"""Correctness judged by an LLM: claims of the response checked against the reference, and
claims of the reference checked against the response.

Counts, shared by both metrics (a claim counts when its probability reaches ``threshold``:
the judge's p(yes), or for a reference claim with ``word_coverage`` its combination with the
claim's words, see below):

- TP: response claims the reference supports; FP: response claims it does not.
- reference claims the response covers; FN: reference claims it does not.
- precision = TP / (TP + FP); recall = covered reference claims / reference claims;
  F-beta = (1 + β²) · P · R / (β² · P + R), 0 when P and R are both 0.

With ``counting="expected"`` (the default) precision and recall are the expected shares
under the judge's probabilities instead: the mean p(yes) of the claims, so a claim judged
0.45 is not counted as absent and one judged 0.55 as present. With a judge that answers
only yes or no (p 0 or 1) the two countings agree. Expected shares follow people more
closely: on 120 RAGChecker response pairs judged by the local judge, the score difference
correlates with the annotators' overall preference at Pearson 0.467 (answer correctness)
and 0.456 (factual correctness) counted as expected shares, 0.332 and 0.289 decided
(``ragmeter bench ragchecker --limit 120``).

With ``word_coverage=True`` a reference claim is in the response with the mean of the
judge's p(yes) and the share of the claim's content words the response uses
(:mod:`ragmeter.metrics.coverage`, as ``context_recall`` counts by default). It is off by
default here: on the RAGChecker response pairs it was chosen on, the completeness Pearson of
``factual_correctness(recall)`` rose from 0.414 to 0.496, and on the next 60 pairs of the same
draw it fell from 0.474 to 0.460 (``benchmarks/results/recall_words.md``).

Recall is counted over reference claims. RAGAS computes TP / (TP + FN), mixing a count of
response claims with a count of reference claims: ten supported response sentences and a
reference of two facts, one of them missing, give it a recall of 10/11 where the reference
is half covered; the two agree when the texts are split alike.
"""

from __future__ import annotations

import asyncio
import math
import reprlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter.data.schema import Sample
from ragmeter.metrics.base import Score, finite_number
from ragmeter.metrics.coverage import check_counting, claim_details, claim_share, with_word_coverage
from ragmeter.metrics.llm import ClaimCheckingMetric, blank, clip
from ragmeter.metrics.registry import register

MODES = ("precision", "recall", "f1")


def f_beta(precision: float, recall: float, beta: float = 1.0) -> float:
    """Weighted harmonic mean of precision and recall; recall counts β times as much."""
    b2 = beta * beta
    denominator = b2 * precision + recall
    return 0.0 if denominator == 0 else (1 + b2) * precision * recall / denominator


def _check_beta(name: str, beta: float) -> None:
    if finite_number(beta) is None or beta <= 0:
        raise ValueError(f"{name}: beta must be a positive number, got {reprlib.repr(beta)}")


def _summary(counts: dict[str, Any]) -> str:
    parts = []
    expected = counts["details"]["counting"] == "expected"
    if "precision" in counts:
        share = f" (expected share {counts['precision']:.2f})" if expected else ""
        parts.append(f"{counts['tp']} of {counts['tp'] + counts['fp']} response claims are in the reference{share}")
    if "recall" in counts:
        share = f" (expected share {counts['recall']:.2f})" if expected else ""
        parts.append(f"{counts['covered']} of {counts['covered'] + counts['fn']} reference claims are in the response{share}")
    text = "; ".join(parts)
    if counts.get("unsupported"):
        text += f"; not in the reference: {clip(counts['unsupported'][0], 60)}"
    if counts.get("missing"):
        text += f"; missing: {clip(counts['missing'][0], 60)}"
    return text


@dataclass(frozen=True)
class _ClaimAgreement(ClaimCheckingMetric):
    """Shared by the correctness metrics: response claims checked against the reference
    (precision side) and reference claims against the response (recall side)."""

    family = "correctness"
    required = ("user_input", "response", "reference")
    beta: float = 1.0
    counting: str = "expected"
    word_coverage: bool = False

    def __post_init__(self) -> None:
        check_counting(self.name, self.counting)
        _check_beta(self.name, self.beta)
        super().__post_init__()

    async def _counts(self, sample: Sample, judges, lang: str, precision: bool, recall: bool) -> dict[str, Any] | Score:
        """Claims, verdicts and counts for the sides asked for, or why the sample cannot be scored."""
        if blank(sample.response):
            return Score.unscored("response is empty")
        response, reference = sample.response or "", sample.reference or ""
        sides = []
        if precision:
            sides.append(("response", response, reference, "in_reference"))
        if recall:
            sides.append(("reference", reference, response, "in_response"))
        claims = []
        for what, text, _, _ in sides:
            found = await self.claims_in(text, what, sample.user_input, judges, lang)
            if isinstance(found, Score):
                return found
            claims.append(found)
        checks = await asyncio.gather(
            *(self.check_claims(c, premise, judges, lang) for c, (_, _, premise, _) in zip(claims, sides, strict=True))
        )
        out: dict[str, Any] = {}
        details: dict[str, Any] = {"threshold": self.threshold}
        for (what, _, premise, yes), check in zip(sides, checks, strict=True):
            coverage: list[float | None] = []
            if what == "reference" and self.word_coverage:
                check, coverage = with_word_coverage(check, premise)
            details[f"{what}_claims"] = claim_details(check, coverage, yes)
            share = claim_share(check, self.counting)
            if what == "response":
                out.update(tp=check.n_supported, fp=len(check.claims) - check.n_supported, precision=share, unsupported=check.unsupported())
                details.update(tp=out["tp"], fp=out["fp"], precision=round(share, 4))
            else:
                out.update(covered=check.n_supported, fn=len(check.claims) - check.n_supported, recall=share, missing=check.unsupported())
                details.update(reference_covered=out["covered"], fn=out["fn"], recall=round(share, 4))
        details["counting"] = self.counting
        out["details"] = details
        return out


@register
@dataclass(frozen=True)
class AnswerCorrectness(_ClaimAgreement):
    """Agreement of the response with the reference: w_f · F-beta(claims) + w_sim · cosine
    similarity (clipped at 0); weights 0.75 and 0.25 by default.

    F-beta combines precision (response claims the reference supports / response claims)
    and recall (reference claims the response covers / reference claims); two verdicts
    calls and one embedding of the two texts. Parameters: ``beta`` (recall weight, 1),
    ``weights`` (F-beta and similarity, summing to 1), ``counting`` (``"expected"``: shares
    are mean probabilities; ``"decided"``: shares of claims whose probability reaches
    ``threshold``), ``threshold``, ``claims``, ``word_coverage`` (false, the default: each
    claim by the judge's p(yes); true: a reference claim's probability of being in the
    response is the mean of the judge's p(yes) and the share of its content words the
    response uses).
    """

    name = "answer_correctness"
    weights: tuple[float, float] = (0.75, 0.25)

    def __post_init__(self) -> None:
        weights = tuple(self.weights) if isinstance(self.weights, (list, tuple)) else ()
        numbers = [finite_number(w) for w in weights]
        if len(numbers) != 2 or not all(w is not None and w >= 0 for w in numbers) or not math.isclose(sum(weights), 1.0, abs_tol=1e-9):
            raise ValueError(
                f"{self.name}: weights must be two non-negative numbers summing to 1 (F-beta, similarity), got {reprlib.repr(self.weights)}"
            )
        object.__setattr__(self, "weights", tuple(numbers))
        super().__post_init__()

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        counts = await self._counts(sample, judges, lang, precision=True, recall=True)
        if isinstance(counts, Score):
            return counts
        f = f_beta(counts["precision"], counts["recall"], self.beta)
        w_f, w_sim = self.weights
        details = counts["details"]
        details.update(f_beta=round(f, 4), beta=self.beta, weights=list(self.weights))
        similarity = 0.0
        if w_sim > 0:
            vectors = np.asarray(await judges.embedder.embed([sample.response, sample.reference]), dtype=np.float64)
            norms = np.linalg.norm(vectors, axis=1)
            similarity = 0.0 if not norms.all() else float(np.clip(vectors[0] @ vectors[1] / (norms[0] * norms[1]), 0.0, 1.0))
            details["similarity"] = round(similarity, 4)
        value = w_f * f + w_sim * similarity
        explanation = f"F{self.beta:g} {f:.2f}" + (f", similarity {similarity:.2f}" if w_sim > 0 else "") + f": {_summary(counts)}"
        return Score(min(max(value, 0.0), 1.0), explanation, details=details)


@register
@dataclass(frozen=True)
class FactualCorrectness(_ClaimAgreement):
    """Claim-level agreement of the response with the reference: precision (response claims
    the reference supports / response claims), recall (reference claims the response covers
    / reference claims) or their F-beta, by ``mode`` (default ``f1``); no embeddings.

    One verdicts call for ``precision`` or ``recall``, two for ``f1``. The metric's id
    names a non-default mode: ``factual_correctness(recall)``. ``counting``, ``threshold``,
    ``claims`` and ``word_coverage`` as for answer correctness.
    """

    name = "factual_correctness"
    mode: str = "f1"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"{self.name}: mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        super().__post_init__()

    @property
    def id(self) -> str:
        return self.name if self.mode == "f1" else f"{self.name}({self.mode})"

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        counts = await self._counts(sample, judges, lang, precision=self.mode != "recall", recall=self.mode != "precision")
        if isinstance(counts, Score):
            return counts
        details = counts["details"]
        if self.mode == "precision":
            value, label = counts["precision"], "precision"
        elif self.mode == "recall":
            value, label = counts["recall"], "recall"
        else:
            value, label = f_beta(counts["precision"], counts["recall"], self.beta), f"F{self.beta:g}"
            details.update(f_beta=round(value, 4), beta=self.beta)
        return Score(value, f"{label} {value:.2f}: {_summary(counts)}", details=details)
