"""Conversations loaded in RAGAS MultiTurnSample form, and the agent metrics against values
computed by hand: tool-call accuracy in order and in any order, goal accuracy, and the use of
contexts across turns."""

from __future__ import annotations

import asyncio
import json

import pytest

from ragmeter import Sample, evaluate
from ragmeter.data import load_dataset
from ragmeter.metrics import create_metric


def human(text):
    return {"type": "human", "content": text}


def ai(text="", calls=None, contexts=None):
    message = {"type": "ai", "content": text}
    if calls is not None:
        message["tool_calls"] = [{"name": name, "args": args} for name, args in calls]
    if contexts is not None:
        message["retrieved_contexts"] = contexts
    return message


def conversation(messages, expected_calls=None, reference=None) -> Sample:
    record = {"id": "c", "user_input": messages, "reference": reference}
    if expected_calls is not None:
        record["reference_tool_calls"] = [{"name": name, "args": args} for name, args in expected_calls]
    return Sample.from_record(record)


def score(metric_id: str, sample: Sample):
    metric = (
        create_metric("tool_call_accuracy", strict_order=False)
        if metric_id == "tool_call_accuracy(any_order)"
        else create_metric(metric_id)
    )
    assert metric.id == metric_id
    return asyncio.run(metric.score(sample, None))


def test_a_multi_turn_record_loads_as_the_sample_of_its_last_turn(tmp_path):
    record = {
        "id": "c1",
        "user_input": [
            human("Book a table for two"),
            ai(calls=[("find", {"party": 2})]),
            {"type": "tool", "content": "Chez Lu is free at 20:00"},
            ai("Chez Lu at 20:00.", contexts=["Chez Lu opens at 19:00"]),
        ],
        "reference": "Chez Lu",
        "reference_tool_calls": [{"name": "find", "args": {"party": 2}}],
    }
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    sample = load_dataset(path).samples[0].sample
    assert sample.user_input == "Book a table for two" and sample.response == "Chez Lu at 20:00." and sample.reference == "Chez Lu"
    assert sample.retrieved_contexts == ["Chez Lu is free at 20:00", "Chez Lu opens at 19:00"]
    assert [m["type"] for m in sample.metadata["conversation"]] == ["human", "ai", "tool", "ai"]
    assert sample.metadata["reference_tool_calls"] == [{"name": "find", "args": {"party": 2}}]


def test_a_bad_message_is_an_issue_naming_its_line_and_field(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [
        {"id": "ok", "user_input": [human("hi"), ai("hello")]},
        {"id": "bad", "user_input": [human("hi"), {"type": "robot", "content": "beep"}]},
        {"id": "nameless", "user_input": [human("hi")], "reference_tool_calls": [{"args": {}}]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["ok"]
    assert [(i.location, i.field) for i in dataset.issues] == [("line 2", "user_input[1].type"), ("line 3", "reference_tool_calls[0].name")]


@pytest.mark.parametrize(
    ("metric_id", "made", "expected", "value"),
    [
        # search matches fully, book gives 1 of its 2 expected arguments, notify is needless: (1 + 0.5) / 3.
        (
            "tool_call_accuracy",
            [("search", {"q": "a"}), ("book", {"party": 2, "time": "20:00"}), ("notify", {})],
            [("search", {"q": "a"}), ("book", {"party": 2, "time": "19:00"})],
            1.5 / 3,
        ),
        # The right calls in the wrong order: in order only one of the two can pair (1 / 2).
        ("tool_call_accuracy", [("book", {"party": 2}), ("search", {"q": "a"})], [("search", {"q": "a"}), ("book", {"party": 2})], 0.5),
        (
            "tool_call_accuracy(any_order)",
            [("book", {"party": 2}), ("search", {"q": "a"})],
            [("search", {"q": "a"}), ("book", {"party": 2})],
            1.0,
        ),
        # Another tool with the same arguments matches nothing.
        ("tool_call_accuracy", [("lookup", {"q": "a"})], [("search", {"q": "a"})], 0.0),
        # An argument the expected call does not name is not counted; an argument value differing by type is wrong.
        ("tool_call_accuracy", [("ping", {"x": 1})], [("ping", {})], 1.0),
        ("tool_call_accuracy", [("book", {"party": "2"})], [("book", {"party": 2})], 0.0),
        # No call expected: none made scores 1, one made scores 0.
        ("tool_call_accuracy", [], [], 1.0),
        ("tool_call_accuracy", [("search", {"q": "a"})], [], 0.0),
        # Expected twice, made once: one of two.
        ("tool_call_accuracy(any_order)", [("search", {"q": "a"})], [("search", {"q": "a"}), ("search", {"q": "b"})], 0.5),
    ],
)
def test_tool_call_accuracy_by_hand(metric_id, made, expected, value):
    messages = [human("go"), ai(calls=made[:1]), {"type": "tool", "content": "done"}, ai("ok", calls=made[1:])]
    result = score(metric_id, conversation(messages, expected))
    assert result.value == pytest.approx(value)


def test_tool_call_accuracy_says_which_calls_paired():
    made = [("search", {"q": "a"}), ("book", {"party": 2, "time": "20:00"})]
    expected = [("search", {"q": "a"}), ("book", {"party": 2, "time": "19:00"})]
    result = score("tool_call_accuracy", conversation([human("go"), ai(calls=made)], expected))
    assert result.details["pairs"] == [{"made": 0, "expected": 0, "match": 1.0}, {"made": 1, "expected": 1, "match": 0.5}]
    assert result.value == pytest.approx(0.75)


def test_the_metrics_need_a_conversation_and_expected_calls():
    single = Sample(id="s", user_input="q", response="a", reference="a")
    result = evaluate([single], ["tool_call_accuracy", "goal_accuracy", "context_use_across_turns"])
    reasons = {m: s.reason for m, s in result.samples[0].scores.items()}
    assert all("missing required field(s): metadata.conversation" in r for r in reasons.values())


def test_goal_accuracy_checks_the_last_answer_for_the_reference_outcome():
    messages = [
        human("Book it"),
        ai("Looking.", calls=[("book", {})]),
        {"type": "tool", "content": "ok"},
        ai("Your table is booked for 20:00."),
    ]
    assert score("goal_accuracy", conversation(messages, reference="booked for 20:00")).value == 1.0
    assert score("goal_accuracy", conversation(messages, reference="booked for 19:00")).value == 0.0
    # Only the last answer counts: the goal stated earlier and then withdrawn is not reached.
    withdrawn = [human("Book it"), ai("Booked for 20:00."), human("Sure?"), ai("Sorry, the booking failed.")]
    assert score("goal_accuracy", conversation(withdrawn, reference="booked for 20:00")).value == 0.0
    silent = score("goal_accuracy", conversation([human("Book it"), ai(calls=[("book", {})])], reference="booked"))
    assert silent.value is None and "no ai message with text" in silent.reason


def test_context_use_across_turns_by_hand():
    messages = [
        human("When are you open?"),
        ai("open nine to five", contexts=["The shop is open nine to five"]),  # 4 of 4 words in the contexts
        human("And on Saturday?"),
        ai("closed saturday open nine", contexts=["Saturday: closed"]),  # 4 of 4; open and nine only from turn 1
        human("Is there parking?"),
        ai("no idea sorry"),  # 0 of 3: the contexts so far say nothing of it
    ]
    result = score("context_use_across_turns", conversation(messages))
    assert result.value == pytest.approx((1 + 1 + 0) / 3)
    assert result.details["turns"] == [
        {"message": 1, "use": 1.0, "from_earlier_turns": 0.0},
        {"message": 3, "use": 1.0, "from_earlier_turns": 0.5},
        {"message": 5, "use": 0.0, "from_earlier_turns": 0.0},
    ]


def test_context_use_counts_tool_results_and_skips_answers_with_nothing_to_draw_on():
    messages = [
        human("hi"),
        ai("hello there"),
        human("price?"),
        ai(calls=[("price", {})]),
        {"type": "tool", "content": "price 12 euros"},
        ai("12 euros"),
    ]
    result = score("context_use_across_turns", conversation(messages))
    assert result.value == 1.0 and [t["message"] for t in result.details["turns"]] == [5]
    nothing = score("context_use_across_turns", conversation([human("hi"), ai("hello")]))
    assert nothing.value is None and "no ai message" in nothing.reason
