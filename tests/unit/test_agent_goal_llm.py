"""goal_accuracy_llm with a scripted judge (see test_llm_double.py, which renders the real
prompts): what the judge is shown (the transcript with tool calls and results, the reference
as the goal, or the reference-free goal), the decision at the threshold, Chinese, and the
explicit failures."""

from __future__ import annotations

import asyncio

import pytest
from test_llm_double import ScriptedJudge

from ragmeter import Sample
from ragmeter.judges import Judges
from ragmeter.judges.base import JudgeError
from ragmeter.metrics import Needs, create_metric
from ragmeter.metrics.agent_goal import REQUEST_FULFILLED

BOOKING = [
    {"type": "human", "content": "Book me a table for two tonight"},
    {"type": "ai", "content": "", "tool_calls": [{"name": "find_restaurant", "args": {"party": 2, "when": "tonight"}}]},
    {"type": "tool", "content": "Chez Lu: free at 20:00"},
    {"type": "ai", "content": "Chez Lu has a table for two at 20:00; it is booked."},
]
SHOWN = (
    "User: Book me a table for two tonight\n"
    'Assistant calls find_restaurant({"party": 2, "when": "tonight"})\n'
    "Tool result: Chez Lu: free at 20:00\n"
    "Assistant: Chez Lu has a table for two at 20:00; it is booked."
)


def judged(messages, reference=None, p_yes=0.9, params=None, judge=None):
    judge = judge or ScriptedJudge(rule=lambda task, shared, item: (p_yes, "as scripted"))
    sample = Sample.from_record({"id": "c", "user_input": messages, "reference": reference})
    score = asyncio.run(create_metric("goal_accuracy_llm", **(params or {})).score(sample, Judges(llm=judge)))
    return score, judge


def test_the_judge_reads_the_whole_conversation_against_the_reference_goal():
    score, judge = judged(BOOKING, reference="A table for two is booked at Chez Lu for 20:00.", p_yes=0.83)
    (call,) = judge.calls
    assert call.task == "goal" and call.shared == {"conversation": SHOWN}
    assert call.items == ["A table for two is booked at Chez Lu for 20:00."]
    assert score.value == 1.0 and score.details["p_yes"] == 0.83 and score.details["with_reference"] is True
    assert score.details["reason"] == "as scripted" and "reached its goal" in score.explanation


def test_without_a_reference_the_judge_decides_whether_the_request_was_done():
    score, judge = judged(BOOKING, p_yes=0.3)
    assert judge.calls[0].items == [REQUEST_FULFILLED["en"]]
    assert score.value == 0.0 and score.details["with_reference"] is False and "did not reach" in score.explanation


def test_the_threshold_decides_and_is_checked():
    assert judged(BOOKING, "booked", p_yes=0.6, params={"threshold": 0.7})[0].value == 0.0
    assert judged(BOOKING, "booked", p_yes=0.7, params={"threshold": 0.7})[0].value == 1.0
    with pytest.raises(ValueError, match=r"threshold must be a number in \(0, 1\]"):
        create_metric("goal_accuracy_llm", threshold=0)


def test_a_chinese_conversation_is_shown_with_chinese_labels_and_goal():
    messages = [
        {"type": "human", "content": "帮我把订单 5521 改到 20:00"},
        {"type": "ai", "content": "", "tool_calls": [{"name": "move_booking", "args": {"booking": 5521}}]},
        {"type": "tool", "content": "已修改"},
        {"type": "ai", "content": "好了，订单已改到 20:00。"},
    ]
    score, judge = judged(messages, p_yes=0.95)
    shown = judge.calls[0].shared["conversation"]
    assert shown.splitlines() == [
        "用户：帮我把订单 5521 改到 20:00",
        '助手调用 move_booking({"booking": 5521})',
        "工具结果：已修改",
        "助手：好了，订单已改到 20:00。",
    ]
    assert judge.calls[0].items == [REQUEST_FULFILLED["zh"]] and score.value == 1.0


def test_nothing_to_judge_and_a_judge_error_are_explicit():
    score, judge = judged([{"type": "human", "content": "   "}])
    assert score.value is None and "no message with text or tool call" in score.reason and not judge.calls
    broken = ScriptedJudge(fail=lambda *a: JudgeError("the server is down"))
    failed, _ = judged(BOOKING, "booked", judge=broken)
    assert failed.value is None and failed.failed and "judge failed: the server is down" in failed.reason


def test_it_is_an_llm_metric_of_the_agents_family_that_needs_a_conversation():
    metric = create_metric("goal_accuracy_llm")
    assert metric.needs == Needs.LLM and metric.family == "agents" and metric.required == ("metadata.conversation",)
