"""Agents and conversations (see :mod:`ragmeter.data.conversation`): did the agent call the
expected tools with the expected arguments, did the conversation reach its goal, and do the
system's answers draw on what was retrieved along the way. All three need no model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from ragmeter.data.conversation import CONVERSATION, REFERENCE_TOOL_CALLS, contexts_of
from ragmeter.data.schema import Sample
from ragmeter.metrics.base import Metric, Score
from ragmeter.metrics.lexical import StringPresence, answer_tokens
from ragmeter.metrics.registry import register


def call_match(predicted: dict[str, Any], expected: dict[str, Any]) -> float:
    """How well one call matches an expected one: 0 for another tool; otherwise the share of
    the expected arguments given with the expected value (values compared exactly, as JSON
    values; arguments the expected call does not name are not counted), 1 when it names none."""
    if predicted.get("name") != expected.get("name"):
        return 0.0
    wanted, given = expected.get("args") or {}, predicted.get("args") or {}
    if not wanted:
        return 1.0
    return sum(1 for key, value in wanted.items() if key in given and given[key] == value) / len(wanted)


def best_alignment(
    predicted: Sequence[dict[str, Any]], expected: Sequence[dict[str, Any]], strict_order: bool
) -> list[tuple[int, int, float]]:
    """The (predicted index, expected index, match) pairs that maximise the total match:
    in the same order on both sides (``strict_order``: a weighted longest common
    subsequence) or in any order (an optimal assignment). Pairs that match 0 are left out."""
    scores = np.array([[call_match(p, e) for e in expected] for p in predicted]).reshape(len(predicted), len(expected))
    if not strict_order:
        rows, cols = linear_sum_assignment(scores, maximize=True)
        return [(int(i), int(j), float(scores[i, j])) for i, j in zip(rows, cols, strict=True) if scores[i, j] > 0]
    total = np.zeros((len(predicted) + 1, len(expected) + 1))
    for i in range(1, len(predicted) + 1):
        for j in range(1, len(expected) + 1):
            paired = total[i - 1, j - 1] + scores[i - 1, j - 1] if scores[i - 1, j - 1] > 0 else 0.0
            total[i, j] = max(total[i - 1, j], total[i, j - 1], paired)
    pairs, i, j = [], len(predicted), len(expected)
    while i > 0 and j > 0:
        if scores[i - 1, j - 1] > 0 and np.isclose(total[i, j], total[i - 1, j - 1] + scores[i - 1, j - 1]):
            pairs.append((i - 1, j - 1, float(scores[i - 1, j - 1])))
            i, j = i - 1, j - 1
        elif total[i, j] == total[i - 1, j]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def _conversation(sample: Sample) -> list[dict[str, Any]]:
    messages = sample.metadata.get(CONVERSATION)
    return messages if isinstance(messages, list) else []


@register
@dataclass(frozen=True)
class ToolCallAccuracy(Metric):
    """How well the agent's tool calls match the expected ones (``reference_tool_calls``):
    the best total match between the calls made and the calls expected, over the larger of
    the two counts, so a missing call and a needless one both cost. A call matches an
    expected one by name, then by the share of expected arguments it gives with the expected
    value. ``strict_order`` (default) pairs calls only in the same order; ``strict_order: false``
    (id ``tool_call_accuracy(any_order)``) pairs them in any order. No call made when none was
    expected scores 1.
    """

    name = "tool_call_accuracy"
    family = "agents"
    required = ("metadata.conversation", "metadata.reference_tool_calls")
    strict_order: bool = True

    @property
    def id(self) -> str:
        return self.name if self.strict_order else f"{self.name}(any_order)"

    async def score(self, sample, judges):
        made = [call for m in _conversation(sample) if m.get("type") == "ai" for call in m.get("tool_calls") or []]
        expected = sample.metadata.get(REFERENCE_TOOL_CALLS) or []
        if not made and not expected:
            return Score(1.0, "no tool call was expected and none was made")
        pairs = best_alignment(made, expected, self.strict_order)
        value = sum(match for _, _, match in pairs) / max(len(made), len(expected))
        details = {
            "calls_made": [c.get("name") for c in made],
            "calls_expected": [c.get("name") for c in expected],
            "pairs": [{"made": i, "expected": j, "match": round(match, 4)} for i, j, match in pairs],
        }
        order = "in order" if self.strict_order else "in any order"
        return Score(value, f"{len(pairs)} of {len(expected)} expected call(s) matched {order}, {len(made)} made", details=details)


@register
@dataclass(frozen=True)
class GoalAccuracy(Metric):
    """1 when the conversation's last answer states the goal written in ``reference``
    (the normalised reference found in the normalised last ai message, whole words, as
    ``string_presence`` decides), else 0. Exact, not judged by a model: write the reference
    as the short outcome the answer must state ("booked for 20:00")."""

    name = "goal_accuracy"
    family = "agents"
    required = ("metadata.conversation", "reference")

    async def score(self, sample, judges):
        answers = [m.get("content") or "" for m in _conversation(sample) if m.get("type") == "ai" and (m.get("content") or "").strip()]
        if not answers:
            return Score.unscored("the conversation has no ai message with text to check the goal against")
        reached = StringPresence().compare(answers[-1], sample.reference or "").value == 1.0
        return Score(float(reached), "the last answer states the goal" if reached else "the last answer does not state the goal")


@register
@dataclass(frozen=True)
class ContextUseAcrossTurns(Metric):
    """How much the system's answers draw on what the conversation retrieved: for each ai
    message with text that has contexts to draw on (every context retrieved up to its turn,
    tool results included), the share of its words found in those contexts; the mean over
    such messages. Details give, per message, the share of its words found only in contexts
    of earlier turns (knowledge carried across turns)."""

    name = "context_use_across_turns"
    family = "agents"
    required = ("metadata.conversation",)

    async def score(self, sample, judges):
        earlier: set[str] = set()  # words of the contexts of earlier turns
        current: set[str] = set()  # words of the contexts of this turn so far
        turns = []
        for number, message in enumerate(_conversation(sample)):
            if message.get("type") == "human":  # a new turn
                earlier, current = earlier | current, set()
                continue
            for text in contexts_of(message):
                current.update(answer_tokens(text))
            words = answer_tokens(message.get("content") or "") if message.get("type") == "ai" else []
            available = earlier | current
            if not words or not available:
                continue
            found = sum(1 for w in words if w in available)
            carried = sum(1 for w in words if w in earlier and w not in current)
            turns.append({"message": number, "use": round(found / len(words), 4), "from_earlier_turns": round(carried / len(words), 4)})
        if not turns:
            return Score.unscored("no ai message with text had retrieved contexts to draw on")
        value = sum(t["use"] for t in turns) / len(turns)
        return Score(
            value, f"mean over {len(turns)} answer(s) of the share of words found in the contexts so far", details={"turns": turns}
        )
