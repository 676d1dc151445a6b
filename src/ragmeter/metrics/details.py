"""The parts of a score's details that other code reads: written and read only here.

A score's ``details`` are mostly for people (reports show them whole), but a few keys are
read by other packages: the meta-evaluation (:mod:`ragmeter.bench`) reads each claim's and
each context's P(yes) and decision, and negative rejection's P(answerable). An ensemble
judge's verdicts add each member's P(yes) and their spread. Those entries
are built by the functions below and read back by the accessors below, so the contract
between the metrics and their readers is written once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.judges.base import Verdict

#: Details key of the per-claim verdicts (a list of :func:`item_entries`).
CLAIMS = "claims"
#: Details key of the per-context verdicts (a list of :func:`context_entries`).
CONTEXTS = "contexts"
#: Details key of negative rejection's P(the contexts contain the answer).
P_ANSWERABLE = "p_answerable"
#: Negative rejection's line for :data:`P_ANSWERABLE` (its ``answered`` parameter).
ANSWERED = "answered"
#: Details key of a claim's calibrated P(supported) (faithfulness).
P_SUPPORTED = "p_supported"
#: Details key of the decision threshold.
THRESHOLD = "threshold"


def item_entries(
    texts: Sequence[str],
    verdicts: Sequence[Verdict],
    threshold: float,
    key: str = "claim",
    yes: str = "supported",
    probabilities: Sequence[float] | None = None,
) -> list[dict[str, Any]]:
    """Per-item details: the text under ``key``, ``p_yes`` (4 decimals), the decision under
    ``yes``, and the judge's reason and evidence when given. With ``probabilities`` (a
    P(supported) per item that combines the verdict with other evidence) each entry also has
    ``p_supported`` and the decision is taken on it instead of ``p_yes``."""
    out = []
    for i, (text, verdict) in enumerate(zip(texts, verdicts, strict=True)):
        entry: dict[str, Any] = {key: text, "p_yes": round(verdict.p_yes, 4), yes: verdict.p_yes >= threshold}
        if probabilities is not None:
            entry.update({P_SUPPORTED: round(probabilities[i], 4), yes: probabilities[i] >= threshold})
        if verdict.reason:
            entry["reason"] = verdict.reason
        if verdict.evidence:
            entry["evidence"] = verdict.evidence
        entry.update(ensemble_entries(verdict))
        out.append(entry)
    return out


def ensemble_entries(verdict: Verdict) -> dict[str, Any]:
    """An ensemble's verdict: each member's P(yes) (``p_yes_members``) and their standard
    deviation (``p_yes_spread``); nothing for a single judge's verdict."""
    if verdict.members is None:
        return {}
    return {"p_yes_members": list(verdict.members), "p_yes_spread": verdict.spread}


def context_entries(shown: Sequence[str], verdicts: Mapping[int, Verdict], threshold: float, yes: str) -> list[dict[str, Any]]:
    """Per retrieved context (``shown``: each context, shortened), its rank, P(yes) and the
    decision under ``yes``; a context without a verdict (blank, never asked) is decided no."""
    out = []
    for i, text in enumerate(shown):
        verdict = verdicts.get(i)
        entry: dict[str, Any] = {"rank": i + 1, "context": text}
        if verdict is None:
            entry.update({"p_yes": None, yes: False, "blank": True})
        else:
            entry.update({"p_yes": round(verdict.p_yes, 4), yes: verdict.p_yes >= threshold})
            if verdict.reason:
                entry["reason"] = verdict.reason
            entry.update(ensemble_entries(verdict))
        out.append(entry)
    return out


def claim_probabilities(details: Mapping[str, Any]) -> list[float]:
    """Each claim's P(yes), in order (empty when the details hold no claims)."""
    return [float(entry["p_yes"]) for entry in details.get(CLAIMS) or [] if isinstance(entry, Mapping) and entry.get("p_yes") is not None]


def claims_calibrated(details: Mapping[str, Any]) -> bool:
    """Whether the claims carry a calibrated P(supported) (then the score itself is one)."""
    claims = details.get(CLAIMS) or []
    return bool(claims) and all(isinstance(entry, Mapping) and P_SUPPORTED in entry for entry in claims)


def context_verdict(details: Mapping[str, Any], index: int) -> tuple[float, int | None] | None:
    """The P(yes) and decision (1 or 0) of the context at ``index``, or ``None`` when it has
    no verdict. The decision is the entry's one boolean besides ``blank``."""
    contexts = details.get(CONTEXTS) or []
    if index >= len(contexts) or contexts[index].get("p_yes") is None:
        return None
    entry = contexts[index]
    decision = next((v for k, v in entry.items() if isinstance(v, bool) and k != "blank"), None)
    return float(entry["p_yes"]), None if decision is None else int(decision)


def answerable_probability(details: Mapping[str, Any]) -> tuple[float, float] | None:
    """Negative rejection's P(the contexts contain the answer) and its line, or ``None``
    (results written before the line had its own entry used ``threshold``)."""
    p = details.get(P_ANSWERABLE)
    return None if p is None else (float(p), float(details.get(ANSWERED, details.get(THRESHOLD, 0.5))))
