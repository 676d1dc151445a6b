"""How much of a set of reference claims a text covers: the share of the claims that hold,
counted as expected under each claim's probability or as decided, and a claim's probability
of being covered from the judge's verdict and the claim's own words.

A recall miss is an omission. The 1.5B judge reads a reference sentence as present when part
of it is (median p(yes) 0.71 on RAGChecker's responses, ``benchmarks/results/reference_claims.md``),
while the share of the claim's content words the text uses falls with each part left out. So
a reference claim's probability of being covered can be the mean of the two
(:func:`with_word_coverage`), with nothing fitted. ``context_recall`` counts so by default:
on ClapNQ questions it never saw when it was chosen, the Pearson with the share of answer
sentences kept rose from 0.737 to 0.836. ``factual_correctness`` and ``answer_correctness``
do not: on the RAGChecker pairs held out, completeness did not follow it
(``benchmarks/results/recall_words.md``). On the precision side, where a wrong claim mostly
uses the right words, words did worse than the judge alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ragmeter.metrics.claim_support import content_words, lexical_evidence
from ragmeter.metrics.llm import ClaimCheck

#: How a share of claims is counted: ``expected`` (the mean probability of the claims) or
#: ``decided`` (the share whose probability reaches the metric's threshold).
COUNTINGS = ("expected", "decided")
#: Per-claim detail key of a claim's word coverage.
WORD_COVERAGE = "word_coverage"


def check_counting(name: str, counting: str) -> None:
    """``counting`` must be one of :data:`COUNTINGS` (``name``: the metric's, for the error)."""
    if counting not in COUNTINGS:
        raise ValueError(f"{name}: counting must be one of {', '.join(COUNTINGS)}, got {counting!r}")


def claim_share(check: ClaimCheck, counting: str) -> float:
    """Share of ``check``'s claims that hold: expected under each claim's probability (its
    combined one when ``check`` has them, else the judge's p(yes)), or of those decided yes."""
    if counting == "expected":
        probabilities = check.probabilities or [v.p_yes for v in check.verdicts]
        return sum(probabilities) / len(probabilities)
    return check.n_supported / len(check.claims)


def word_coverage(claim: str, text: str | Sequence[str]) -> float | None:
    """Share of ``claim``'s content words that ``text`` uses (English by stem, Chinese by
    characters; see :func:`~ragmeter.metrics.claim_support.lexical_evidence`), or ``None``
    when the claim has no content word ("It is so.").

    Args:
        claim: One reference claim.
        text: What should cover it: a response, or the retrieved contexts.
    """
    if not content_words(claim):
        return None
    return 1.0 - lexical_evidence(claim, text).novel_word_share


def with_word_coverage(check: ClaimCheck, text: str | Sequence[str]) -> tuple[ClaimCheck, list[float | None]]:
    """``check`` of reference claims against ``text``, each claim's probability the mean of
    the judge's p(yes) and the claim's :func:`word_coverage` (the p(yes) alone for a claim
    without content words), its decisions taken on that probability; and each claim's word
    coverage, in order.

    Args:
        check: The judge's verdicts on the reference claims.
        text: What they were checked against.
    """
    coverage = [word_coverage(claim, text) for claim in check.claims]
    probabilities = [v.p_yes if c is None else (v.p_yes + c) / 2 for v, c in zip(check.verdicts, coverage, strict=True)]
    decisions = [p >= check.threshold for p in probabilities]
    return dataclasses.replace(check, probabilities=probabilities, decisions=decisions), coverage


def claim_details(check: ClaimCheck, coverage: Sequence[float | None], yes: str) -> list[dict[str, Any]]:
    """``check``'s per-claim details (decision under ``yes``), each with its word coverage
    when it has one (``coverage``: empty when words were not counted)."""
    entries = check.details(yes=yes)
    for entry, share in zip(entries, coverage, strict=False):
        if share is not None:
            entry[WORD_COVERAGE] = round(share, 4)
    return entries
