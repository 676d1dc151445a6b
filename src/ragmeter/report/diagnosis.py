"""Read the pattern of retrieval, correctness and groundedness scores, sample by sample.

Three signals are taken from whichever metric of the run measures them best (the first
present in :data:`SIGNALS`), and each is read as low, middling or high against that
metric's thresholds. The combination names what went wrong, for example: high
correctness with low recall and low groundedness means the model answered from its own
knowledge, not from the knowledge base.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ragmeter.results import Result

#: For each signal, candidate metrics best first, with (low below, high from) thresholds.
#: Embedding cosines of unrelated texts sit near 0.2-0.3, hence their higher cut-offs.
SIGNALS: dict[str, list[tuple[str, float, float]]] = {
    "retrieval": [
        ("context_recall", 0.5, 0.7),
        ("retrieval_recall", 0.5, 0.5),
        ("nonllm_context_recall", 0.5, 0.5),
        ("embedding_context_recall", 0.45, 0.55),
    ],
    "correctness": [
        ("answer_correctness", 0.5, 0.7),
        ("factual_correctness", 0.5, 0.7),
        ("embedding_correctness", 0.45, 0.55),
        ("semantic_similarity", 0.5, 0.65),
        ("token_f1", 0.3, 0.5),
        ("rougeL", 0.3, 0.5),
    ],
    "groundedness": [
        ("faithfulness", 0.5, 0.8),
        ("embedding_groundedness", 0.45, 0.55),
    ],
}


@dataclass(frozen=True)
class Pattern:
    """A named combination of signal levels and what it means."""

    name: str
    title: str
    advice: str


PATTERNS: dict[str, Pattern] = {
    p.name: p
    for p in (
        Pattern(
            "parametric_answer",
            "Answered from the model's own knowledge",
            "The answer agrees with the reference, but the right knowledge was not retrieved and the response "
            "is not supported by what was: the model answered from its own knowledge, not from the knowledge "
            "base. It happened to be right; fix retrieval before trusting such answers.",
        ),
        Pattern(
            "retrieval_miss",
            "Retrieval missed, answer wrong",
            "The knowledge needed was not retrieved and the answer is wrong or vague. Improve retrieval "
            "(chunking, embedding model, query rewriting, top-k) before tuning generation.",
        ),
        Pattern(
            "wrong_context",
            "Grounded in the wrong documents",
            "The response follows the retrieved text, but that text is not the knowledge that answers the "
            "question. Retrieval returned plausible but wrong documents.",
        ),
        Pattern(
            "unfaithful",
            "Right context, unsupported answer",
            "The right knowledge was retrieved but the response is not supported by it: the generator "
            "hallucinated or ignored the context. Tighten the prompt, lower temperature, or require citations.",
        ),
        Pattern(
            "grounded_but_wrong",
            "Faithful to the context, yet wrong",
            "The response follows the retrieved knowledge but disagrees with the reference: the knowledge "
            "base may be outdated or contradictory, the answer incomplete, or the reference wrong.",
        ),
        Pattern(
            "answered_unanswerable",
            "Answered a question that has no answer",
            "The knowledge base does not hold the answer, yet the system answered: likely a hallucination. "
            "Teach the system to say when the documents do not cover a question.",
        ),
        Pattern(
            "refused_answerable",
            "Refused a question it could answer",
            "The question is answerable from the knowledge base, but the system declined. Check retrieval "
            "for these questions and whether the refusal instruction is too eager.",
        ),
        Pattern("correct_refusal", "Correct refusal", "The question is not answerable and the system said so."),
        Pattern("healthy", "Healthy", "Retrieval, groundedness and correctness are all good."),
        Pattern(
            "inconclusive",
            "Inconclusive",
            "Some signal is missing or middling; read the scores of these samples directly.",
        ),
    )
}


def _level(value: float | None, low: float, high: float) -> str | None:
    if value is None:
        return None
    if value < low:
        return "low"
    return "high" if value >= high else "mid"


def signal_metrics(result: Result) -> dict[str, tuple[str, float, float]]:
    """The metric (with thresholds) that stands for each signal in this run."""
    present = set(result.metric_ids)
    chosen = {}
    for signal, candidates in SIGNALS.items():
        for metric_id, low, high in candidates:
            if metric_id in present:
                chosen[signal] = (metric_id, low, high)
                break
    return chosen


def classify(levels: dict[str, str | None], answerable: Any, refused: bool | None) -> str:
    """Name the pattern of one sample from its signal levels and refusal behaviour."""
    r, c, g = levels.get("retrieval"), levels.get("correctness"), levels.get("groundedness")
    if answerable is False and refused is not None:
        return "correct_refusal" if refused else "answered_unanswerable"
    if answerable is True and refused:
        # Declining is the right call when retrieval found nothing useful.
        return "retrieval_miss" if r == "low" else "refused_answerable"
    if r == "low" and c == "high" and g in ("low", None):
        return "parametric_answer"
    if r == "low" and c == "low":
        return "wrong_context" if g == "high" else "retrieval_miss"
    if r == "high" and g == "low":
        return "unfaithful"
    if r == "high" and g == "high" and c == "low":
        return "grounded_but_wrong"
    if r == "high" and c == "high" and g in ("high", None):
        return "healthy"
    return "inconclusive"


def _refused(answerable: bool | None, refusal_accuracy: float) -> bool | None:
    """Whether the system declined, from ``refusal_accuracy`` (1 when it answered an
    answerable question or declined an unanswerable one) and the sample's ``answerable``."""
    if answerable is None or math.isnan(refusal_accuracy):
        return None
    return refusal_accuracy == 0.0 if answerable else refusal_accuracy == 1.0


def diagnose(result: Result) -> dict[str, Any]:
    """The diagnosis of a run: which metric stands for each signal, each sample's pattern,
    and the patterns with their counts and sample keys, most frequent problem first."""
    chosen = signal_metrics(result)
    table = result.table
    columns = {signal: table.column(metric_id) for signal, (metric_id, _, _) in chosen.items()}
    refusals = table.column("refusal_accuracy") if "refusal_accuracy" in table.columns else None
    per_sample: dict[str, dict[str, Any]] = {}
    members: dict[str, list[str]] = defaultdict(list)
    for row, key in enumerate(table.keys):
        levels = {}
        for signal, (_, low, high) in chosen.items():
            value = columns[signal][row]
            levels[signal] = None if math.isnan(value) else _level(float(value), low, high)
        answerable = table.answerable[row]
        refused = _refused(answerable, refusals[row]) if refusals is not None else None
        pattern = classify(levels, answerable, refused)
        per_sample[key] = {"pattern": pattern, "levels": levels}
        members[pattern].append(key)
    problems_first = sorted(members, key=lambda p: (p in ("healthy", "correct_refusal", "inconclusive"), -len(members[p])))
    return {
        "signals": {s: {"metric": m, "low_below": lo, "high_from": hi} for s, (m, lo, hi) in chosen.items()},
        "patterns": [
            {
                "name": p,
                "title": PATTERNS[p].title,
                "advice": PATTERNS[p].advice,
                "count": len(members[p]),
                "share": len(members[p]) / max(1, len(table)),
                "samples": members[p],
            }
            for p in problems_first
        ],
        "per_sample": per_sample,
    }
