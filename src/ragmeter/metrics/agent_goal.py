"""Goal accuracy judged by the LLM judge: did a conversation (an agent trace, see
:mod:`ragmeter.data.conversation`) reach its goal? The model-free ``goal_accuracy``
(:mod:`ragmeter.metrics.agents`) looks for the goal's words in the last answer; this one lets
the judge read the whole conversation, tool calls and results included, so a goal reached in
other words counts, and one only promised, or contradicted by a failed tool call, does not."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ragmeter.data.conversation import CONVERSATION
from ragmeter.data.schema import Sample
from ragmeter.judges.windowing import ask
from ragmeter.metrics.base import Score
from ragmeter.metrics.details import ensemble_entries
from ragmeter.metrics.llm import LLMMetric, blank, check_threshold
from ragmeter.metrics.registry import register

#: The goal the judge checks when the sample has no reference (reference-free).
REQUEST_FULFILLED = {
    "en": "The assistant did what the user asked for, completely and correctly.",
    "zh": "助手完整、正确地完成了用户的请求。",
}
#: How each kind of message is shown to the judge, per language.
LABELS = {
    "en": {"human": "User: ", "ai": "Assistant: ", "tool": "Tool result: ", "call": "Assistant calls "},
    "zh": {"human": "用户：", "ai": "助手：", "tool": "工具结果：", "call": "助手调用 "},
}


def transcript(messages: list[dict[str, Any]], lang: str) -> str:
    """The conversation as the judge reads it: one line per message, each tool call on its own
    line with its arguments as JSON (``lang`` picks the labels; unknown languages read English)."""
    labels = LABELS.get(lang, LABELS["en"])
    lines = []
    for message in messages:
        kind = message.get("type")
        text = " ".join(str(message.get("content") or "").split())
        if kind in labels and text:
            lines.append(labels[kind] + text)
        calls = (message.get("tool_calls") or []) if kind == "ai" else []
        for call in calls:
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False, sort_keys=True)
            lines.append(f"{labels['call']}{call.get('name')}({arguments})")
    return "\n".join(lines)


@register
@dataclass(frozen=True)
class GoalAccuracyLLM(LLMMetric):
    """1 when the judge finds that the conversation reached its goal, else 0: one yes/no
    verdict on the whole transcript (user, assistant and tool messages, tool calls with their
    arguments), P(yes) against ``threshold``.

    The goal is the sample's ``reference`` when it has one (write it as the outcome: "a table
    for two is booked at Chez Lu for 20:00"); without one the metric is reference-free and the
    judge decides whether the assistant did what the user asked, completely and correctly.
    Details give P(yes), the goal shown and whether it came from the reference.

    Args:
        threshold: The P(yes) from which the goal counts as reached, in (0, 1].
    """

    name = "goal_accuracy_llm"
    family = "agents"
    required = ("metadata.conversation",)
    threshold: float = 0.5

    def __post_init__(self) -> None:
        check_threshold(self.name, self.threshold)
        super().__post_init__()

    async def judge(self, sample: Sample, judges, lang: str) -> Score:
        messages = sample.metadata.get(CONVERSATION)
        shown = transcript(messages, lang) if isinstance(messages, list) else ""
        if not shown:
            return Score.unscored("the conversation has no message with text or tool call to judge")
        with_reference = not blank(sample.reference)
        goal = (sample.reference or "").strip() if with_reference else REQUEST_FULFILLED.get(lang, REQUEST_FULFILLED["en"])
        (verdict,) = await ask(judges.require_llm(), "goal", {"conversation": shown}, [goal], lang)
        reached = verdict.p_yes >= self.threshold
        details: dict[str, Any] = {
            "p_yes": round(verdict.p_yes, 4),
            "reached": reached,
            "threshold": self.threshold,
            "goal": goal,
            "with_reference": with_reference,
        }
        if verdict.reason:
            details["reason"] = verdict.reason
        details.update(ensemble_entries(verdict))
        said = "reached" if reached else "did not reach"
        kind = "its goal" if with_reference else "what the user asked for (no reference)"
        return Score(1.0 if reached else 0.0, f"the conversation {said} {kind} (p={verdict.p_yes:.2f})", details=details)
