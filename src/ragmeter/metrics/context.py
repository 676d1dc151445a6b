"""Retrieved contexts judged by an LLM: useful, relevant, covering the reference, used.

Every metric here makes one verdicts call for all the chunks (or all the claims) of a
sample, except context relevance, which asks once per chunk (the chunk first, then the
question), and claims checked by a judge with ``evidence_sentences``, each against the
context sentences closest to it (see ``evidence.supported``). Blank retrieved contexts
are never sent to the judge: they count as not useful / not relevant where the metric
ranks or counts chunks, and are left out of premises.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from ragmeter.data.schema import Sample
from ragmeter.data.text import normalize
from ragmeter.judges.base import Verdict
from ragmeter.judges.windowing import item_verdicts, premise_verdicts
from ragmeter.metrics import ranking
from ragmeter.metrics.base import Score
from ragmeter.metrics.claims import string_list
from ragmeter.metrics.coverage import check_counting, claim_details, claim_share, with_word_coverage
from ragmeter.metrics.details import context_entries
from ragmeter.metrics.llm import ClaimCheckingMetric, LLMMetric, blank, check_threshold, chunks_of, clip
from ragmeter.metrics.registry import register

ENTITIES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"entities": {"type": "array", "items": {"type": "string"}}},
    "required": ["entities"],
}

#: rapidfuzz partial_ratio (0-100) from which an entity counts as found in a context.
ENTITY_MATCH = 90


def _judged_chunks(sample: Sample) -> tuple[list[str], list[int]]:
    """All retrieved contexts, and the positions of those that are not blank."""
    retrieved = [c if isinstance(c, str) else "" for c in (sample.retrieved_contexts or [])]
    return retrieved, [i for i, c in enumerate(retrieved) if c.strip()]


def _per_chunk(retrieved: list[str], asked: list[int], verdicts: list[Verdict], threshold: float, yes: str) -> list[dict[str, Any]]:
    """Details per retrieved context, blank ones included (never asked, decided no)."""
    return context_entries([clip(text, 100) for text in retrieved], dict(zip(asked, verdicts, strict=True)), threshold, yes)


@dataclass(frozen=True)
class _UsefulPrecision(LLMMetric):
    family = "retrieval"
    threshold: float = 0.5
    answer_field = "reference"

    def __post_init__(self) -> None:
        check_threshold(self.name, self.threshold)
        super().__post_init__()

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        answer = sample.get(self.answer_field)
        if blank(sample.user_input):
            return Score.unscored("question is empty")
        if blank(answer):
            return Score.unscored(f"{self.answer_field} is empty")
        retrieved, asked = _judged_chunks(sample)
        if not asked:
            return Score.unscored("nothing was retrieved, so precision is undefined")
        verdicts, strategy = await item_verdicts(
            judges.require_llm(), "useful", {"question": sample.user_input, "answer": answer}, [retrieved[i] for i in asked], lang
        )
        contexts = _per_chunk(retrieved, asked, verdicts, self.threshold, "useful")
        useful = [c["useful"] for c in contexts]
        details = {"contexts": contexts, "strategy": strategy, "threshold": self.threshold}
        n_useful = sum(useful)
        if n_useful == 0:
            return Score(0.0, f"none of the {len(useful)} retrieved contexts is useful for the {self.answer_field}", details=details)
        ranks = [c["rank"] for c in contexts if c["useful"]]
        return Score(
            ranking.average_precision(useful, n_useful),
            f"{n_useful} of {len(useful)} retrieved contexts are useful for the {self.answer_field}, at rank(s) {', '.join(map(str, ranks))}",
            details=details,
        )


@register
@dataclass(frozen=True)
class ContextPrecision(_UsefulPrecision):
    """Rank-aware precision of the retrieved contexts judged useful for arriving at the
    reference answer: Σ_k precision@k · v_k / (number of useful contexts), where v_k is 1
    when the context at rank k is useful; 0 when none is.

    One verdicts call judges every retrieved context against the question and the
    reference; a context is useful when p(yes) reaches ``threshold``. Useful contexts
    ranked first score higher. Unscored when nothing was retrieved.
    """

    name = "context_precision"
    required = ("user_input", "retrieved_contexts", "reference")


@register
@dataclass(frozen=True)
class ContextPrecisionWithoutReference(_UsefulPrecision):
    """Rank-aware precision of the retrieved contexts judged useful for arriving at the
    response (no reference needed): Σ_k precision@k · v_k / (number of useful contexts);
    0 when none is useful.

    Like ``context_precision`` with the response in place of the reference answer: it
    measures whether the contexts the generator could use were ranked first, not whether
    the response is right.
    """

    name = "context_precision_without_reference"
    required = ("user_input", "retrieved_contexts", "response")
    answer_field = "response"


@register
@dataclass(frozen=True)
class ContextRecall(ClaimCheckingMetric):
    """Share of the reference answer's claims that the retrieved contexts support.

    Claims are the reference's sentences (``claims="llm"``: judge-written statements), all
    checked in one verdicts call against all retrieved contexts (against the closest
    context sentences with a judge that has ``evidence_sentences``). A claim's probability
    of being supported is the mean of the judge's p(yes) and the share of its content words
    the contexts use (``word_coverage``, true by default; false: the p(yes) alone; see
    :mod:`ragmeter.metrics.coverage`). The share is that probability's mean over the claims
    (``counting="expected"``, the default) or the share of claims whose probability reaches
    ``threshold`` (``"decided"``, as RAGAS counts). 0 when nothing was retrieved (none of
    the reference is covered).

    The mean was chosen on RAGChecker's completeness, before any ClapNQ context recall was
    read (see :mod:`ragmeter.metrics.coverage`). On 30 ClapNQ questions read when it was
    adopted here and 30 never read, with some annotator-selected
    answer sentences left out of the contexts, the Pearson with the share left in was 0.774
    and 0.737 decided on the judge's p(yes), 0.839 and 0.727 expected, and 0.901 and 0.836
    expected with word coverage (paired bootstrap interval of the gain on the unread 30, 0.013
    to 0.223; ``benchmarks/results/recall_words.md``).
    """

    name = "context_recall"
    family = "retrieval"
    required = ("user_input", "retrieved_contexts", "reference")
    counting: str = "expected"
    word_coverage: bool = True

    def __post_init__(self) -> None:
        check_counting(self.name, self.counting)
        super().__post_init__()

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        claims = await self.claims_in(sample.reference or "", "reference", sample.user_input, judges, lang)
        if isinstance(claims, Score):
            return claims
        contexts = chunks_of(sample)
        if not contexts:
            return Score(0.0, f"nothing was retrieved: none of the {len(claims)} reference claims is covered", details={"claims": claims})
        check = await self.check_claims(claims, contexts, judges, lang)
        coverage: list[float | None] = []
        if self.word_coverage:
            check, coverage = with_word_coverage(check, contexts)
        value = claim_share(check, self.counting)
        details = {
            "claims": claim_details(check, coverage, "supported"),
            "strategy": check.strategy,
            "threshold": self.threshold,
            "counting": self.counting,
        }
        explanation = f"{check.n_supported} of {len(claims)} reference claims are supported by the retrieved contexts"
        if self.counting == "expected":
            explanation += f" (expected share {value:.2f})"
        if check.unsupported():
            explanation += f"; missing: {clip(check.unsupported()[0])}"
        return Score(value, explanation, details=details)


#: Default P(yes) at or above which context_relevance counts a context relevant. At 0.5 the
#: packaged judge called most same-topic passages relevant: balanced accuracy 0.574 on MS MARCO
#: hard negatives and 0.744 on RGB zh (60 pairs each, `ragmeter bench msmarco
#: rgb/context_relevance --limit 60`, benchmarks/results/agreement.md). A line fitted on one set
#: and measured on the other does better on both: 0.626 on MS MARCO (fitted on RGB, 0.76) and
#: 0.833 on RGB (fitted on MS MARCO, 0.87). 0.8 is the best line over both sets (0.83), rounded
#: down: 0.655 and 0.889 there.
RELEVANT_LINE = 0.8


@register
@dataclass(frozen=True)
class ContextRelevance(LLMMetric):
    """Share of the retrieved contexts that state the answer to the question, or part of
    it: relevant contexts / retrieved contexts.

    One verdict per context, no reference needed: the judge reads the context, then the
    question. In that order the packaged 1.5B judge tells contexts that answer from
    same-topic ones far better than with the question first (ROC-AUC 0.71 against 0.58 on
    MS MARCO hard negatives, 0.92 against 0.75 on RGB Chinese, development split:
    benchmarks/results/relevance_prompts.md). A context is relevant when p(yes) reaches
    ``threshold`` (default :data:`RELEVANT_LINE`); a context too long for the judge is read in
    windows and is relevant when one window is. Blank contexts count as not relevant.
    Unscored when nothing was retrieved.
    """

    name = "context_relevance"
    family = "retrieval"
    required = ("user_input", "retrieved_contexts")
    threshold: float = RELEVANT_LINE

    def __post_init__(self) -> None:
        check_threshold(self.name, self.threshold)
        super().__post_init__()

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        if blank(sample.user_input):
            return Score.unscored("question is empty")
        retrieved, asked = _judged_chunks(sample)
        if not asked:
            return Score.unscored("nothing was retrieved, so relevance is undefined")
        judged_chunks = await asyncio.gather(
            *(
                premise_verdicts(judges.require_llm(), "relevant", retrieved[i], [sample.user_input or ""], lang, field="context")
                for i in asked
            )
        )
        verdicts = [chunk_verdicts[0] for chunk_verdicts, _ in judged_chunks]
        strategy = "windows" if any(s == "windows" for _, s in judged_chunks) else "per_chunk"
        contexts = _per_chunk(retrieved, asked, verdicts, self.threshold, "relevant")
        n = sum(c["relevant"] for c in contexts)
        return Score(
            n / len(contexts),
            f"{n} of {len(contexts)} retrieved contexts state (part of) the answer to the question",
            details={"contexts": contexts, "strategy": strategy, "threshold": self.threshold},
        )


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", normalize(text))


def entity_found(entity: str, contexts: list[str]) -> tuple[bool, float, int | None]:
    """Is ``entity`` in one of ``contexts``? Found, best match score (0-100), context rank.

    Exact match of the normalised entity (NFKC, lower case) inside a normalised context,
    with or without whitespace ("12 本" matches "12本"); else rapidfuzz ``partial_ratio``
    (best alignment of the entity with a substring of the context) of at least
    :data:`ENTITY_MATCH`. For entities under ten characters that is in effect an exact match.
    """
    wanted, squashed = normalize(entity), _squash(entity)
    best, where = 0.0, None
    for rank, context in enumerate(contexts, start=1):
        text = normalize(context)
        if wanted in text or (squashed and squashed in _squash(context)):
            return True, 100.0, rank
        score = fuzz.partial_ratio(wanted, text, score_cutoff=ENTITY_MATCH)
        if score > best:
            best, where = score, rank
    return best >= ENTITY_MATCH, best, where


@register
@dataclass(frozen=True)
class ContextEntityRecall(LLMMetric):
    """Share of the reference answer's entities (names, places, dates, numbers...) found in
    the retrieved contexts: found entities / entities.

    One generate call lists the reference's entities; each is then looked up in the
    contexts by string match, without any model call over the long contexts: exact match
    of the normalised entity (NFKC, lower case, optionally ignoring whitespace), else
    rapidfuzz partial_ratio >= 90. Unscored when the judge finds no entity.
    """

    name = "context_entity_recall"
    family = "retrieval"
    required = ("retrieved_contexts", "reference")

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        if blank(sample.reference):
            return Score.unscored("reference is empty")
        reply = await judges.require_llm().generate("entities", {"text": sample.reference}, ENTITIES_SCHEMA, lang)
        # Entities that differ only in case or width are one entity.
        unique: dict[str, str] = {}
        for entity in string_list(reply, "entities", "entities"):
            unique.setdefault(normalize(entity), entity)
        entities = list(unique.values())
        if not entities:
            return Score.unscored("the judge found no entities in the reference", {"entities": []})
        contexts = chunks_of(sample)
        found: list[dict[str, Any]] = []
        for entity in entities:
            ok, score, rank = entity_found(entity, contexts)
            found.append({"entity": entity, "found": ok, "match": round(score, 1), "context_rank": rank if ok else None})
        n = sum(f["found"] for f in found)
        missing = [f["entity"] for f in found if not f["found"]]
        explanation = f"{n} of {len(entities)} reference entities found in the retrieved contexts"
        if not contexts:
            explanation = f"nothing was retrieved: none of the {len(entities)} reference entities is found"
        elif missing:
            explanation += f"; missing: {', '.join(missing[:5])}"
        return Score(n / len(entities), explanation, details={"entities": found, "match_threshold": ENTITY_MATCH})


@register
@dataclass(frozen=True)
class ContextUtilization(ClaimCheckingMetric):
    """How much of the useful retrieved information the response uses (RAGChecker):
    reference claims supported by the contexts AND by the response / reference claims
    supported by the contexts.

    Two verdicts calls: the reference claims against the contexts (the same call as
    ``context_recall``, so a cached judge answers it once for both) and against the
    response. Unscored when no reference claim is in the contexts: there was nothing
    useful to use.
    """

    name = "context_utilization"
    family = "groundedness"
    required = ("user_input", "retrieved_contexts", "response", "reference")

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        if blank(sample.response):
            return Score.unscored("response is empty")
        contexts = chunks_of(sample)
        if not contexts and not blank(sample.reference):
            return Score.unscored("nothing was retrieved: there is no context to utilise")
        claims = await self.claims_in(sample.reference or "", "reference", sample.user_input, judges, lang)
        if isinstance(claims, Score):
            return claims
        in_context, in_response = await asyncio.gather(
            self.check_claims(claims, contexts, judges, lang), self.check_claims(claims, sample.response or "", judges, lang)
        )
        details = {
            "claims": [
                {"claim": c, "p_in_contexts": round(a.p_yes, 4), "in_contexts": x, "p_in_response": round(b.p_yes, 4), "in_response": y}
                for c, a, b, x, y in zip(
                    claims, in_context.verdicts, in_response.verdicts, in_context.decisions, in_response.decisions, strict=True
                )
            ],
            "strategy": in_context.strategy,
            "threshold": self.threshold,
        }
        available = in_context.n_supported
        if available == 0:
            return Score.unscored(
                f"none of the {len(claims)} reference claims is in the retrieved contexts: there was nothing useful to utilise",
                details,
            )
        n = sum(x and y for x, y in zip(in_context.decisions, in_response.decisions, strict=True))
        return Score(
            n / available,
            f"the response uses {n} of the {available} reference claims found in the retrieved contexts",
            details=details,
        )
