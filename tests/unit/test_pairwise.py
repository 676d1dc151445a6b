"""Pairwise judging: both orders, ties from position-dependent verdicts, length bias, CLI."""

from __future__ import annotations

import asyncio
import json

import pytest
from test_llm_double import ScriptedJudge
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.decide.pairs import Pair, load_side, match_samples, read_preferences
from ragmeter.decide.pairwise import combine, judge_pair, judge_pairs, order_verdict
from ragmeter.judges.base import JudgeError
from ragmeter.report.pairwise import write_report
from ragmeter.results.inference import wilson_interval

# Three pairs where A is right and short, B wrong and long, and one the other way round.
PAIRS = [
    Pair(
        "q1",
        "How long do loans last?",
        "Three weeks.",
        "Loans last for two months, and you can keep them longer if you ask.",
        reference="a",
    ),
    Pair(
        "q2",
        "How many books can I borrow?",
        "Twelve books.",
        "You can borrow as many books as you like at any time of the year.",
        reference="a",
    ),
    Pair(
        "q3",
        "Is the card free?",
        "Yes, free for residents.",
        "It costs fifty euros per year for every member of the library.",
        reference="a",
    ),
    Pair("q4", "借期多久？", "借期三周，可续借两次。", "两个月。", reference="a"),
]
CORRECT = {"Three weeks.", "Twelve books.", "Yes, free for residents.", "借期三周，可续借两次。"}


def first_position(shared):
    return {"1": 0.9, "2": 0.1}


def prefers(better):
    """A scripted judge that says the response ``better(first, second)`` picks is better."""

    def scaled(shared):
        first, second = shared["response_1"], shared["response_2"]
        return {"1": 0.8, "2": 0.2} if better(first, second) == first else {"1": 0.2, "2": 0.8}

    return scaled


def test_order_verdict_and_combination_rules():
    assert order_verdict(0.7) == "first" and order_verdict(0.3) == "second" and order_verdict(0.5) is None
    assert order_verdict(0.55, margin=0.1) is None and order_verdict(0.61, margin=0.1) == "first"
    assert combine("a", "a") == ("a", True)
    assert combine("a", "b") == ("tie", False)  # position decides: a tie
    assert combine(None, None) == ("tie", True)
    assert combine("b", None) == ("tie", False)
    with pytest.raises(ValueError):
        judge_pairs([], ScriptedJudge(), margin=0.5)


def test_a_judge_that_always_prefers_the_first_position_gives_only_ties():
    judge = ScriptedJudge(scaled=first_position)
    report = judge_pairs(PAIRS, judge, "Factually correct and answers the question.")
    s = report.statistics
    assert [v.winner for v in report.verdicts] == ["tie"] * 4
    assert s["ties"] == 4 and s["tie_rate"] == 1.0 and s["position_consistency"] == 0.0
    assert s["first_position_rate"] == 1.0
    assert s["win_rate_b"]["value"] == 0.5
    # Both orders were asked, with the responses swapped, through the real pairwise prompt.
    assert judge.count("scale", "pairwise") == 8
    orders = {(c.shared["response_1"], c.shared["response_2"]) for c in judge.calls}
    for pair in PAIRS:
        assert (pair.response_a, pair.response_b) in orders and (pair.response_b, pair.response_a) in orders
    assert {c.lang for c in judge.calls if "借期" in c.shared["question"]} == {"zh"}
    assert {c.lang for c in judge.calls if "借期" not in c.shared["question"]} == {"en"}


def test_a_judge_that_prefers_the_better_response_in_both_orders_gives_consistent_wins():
    judge = ScriptedJudge(scaled=prefers(lambda x, y: x if x in CORRECT else y))
    report = judge_pairs(PAIRS, judge)
    s = report.statistics
    assert [v.winner for v in report.verdicts] == ["a"] * 4
    assert all(v.consistent for v in report.verdicts)
    assert s["position_consistency"] == 1.0 and s["tie_rate"] == 0.0 and s["first_position_rate"] == 0.5
    assert s["wins_a"] == 4 and s["win_rate_b"]["value"] == 0.0
    low, high = wilson_interval(0, 4)
    assert s["win_rate_b"]["ci_low"] == pytest.approx(low) == 0.0 and s["win_rate_b"]["ci_high"] == pytest.approx(high)
    assert 0.4 < high < 0.5  # Wilson: 0 of 4 still allows up to about 49%
    assert s["reference_agreement"]["value"] == 1.0
    # The judge picked the shorter response in 3 of 4 decided pairs, as the reference does.
    assert s["length_bias"]["longer_wins"] == pytest.approx(0.25)
    assert s["length_bias"]["longer_is_better"] == pytest.approx(0.25)
    assert s["length_bias"]["bias"] == pytest.approx(0.0)


def test_a_judge_that_prefers_the_longer_response_shows_length_bias():
    pairs = PAIRS[:3]  # the reference says the shorter one is better in all three
    judge = ScriptedJudge(scaled=prefers(lambda x, y: x if len(x) > len(y) else y))
    s = judge_pairs(pairs, judge).statistics
    assert s["wins_b"] == 3 and s["position_consistency"] == 1.0
    bias = s["length_bias"]
    assert bias["longer_wins"] == 1.0 and bias["longer_is_better"] == 0.0 and bias["bias"] == 1.0
    assert bias["n_decided"] == 3 and bias["n_reference"] == 3
    assert s["reference_agreement"]["value"] == 0.0


def test_the_margin_turns_weak_preferences_into_no_preference():
    judge = ScriptedJudge(scaled={"1": 0.55, "2": 0.45})
    s = judge_pairs(PAIRS, judge, margin=0.1).statistics
    assert s["ties"] == 4 and s["position_consistency"] == 1.0 and s["first_position_rate"] is None


def test_a_judge_error_is_recorded_per_pair_and_left_out_of_the_statistics():
    def fail(kind, task, shared, items):
        return JudgeError("model unavailable") if "card" in shared["question"] else None

    judge = ScriptedJudge(scaled=prefers(lambda x, y: x if x in CORRECT else y), fail=fail)
    report = judge_pairs(PAIRS, judge)
    failed = [v for v in report.verdicts if v.error]
    assert [v.key for v in failed] == ["q3"] and "model unavailable" in failed[0].error and failed[0].winner is None
    assert report.statistics["n_judged"] == 3 and report.statistics["n_failed"] == 1


def test_wilson_interval_matches_the_formula():
    low, high = wilson_interval(7, 10)
    assert low == pytest.approx(0.3968, abs=1e-4) and high == pytest.approx(0.8922, abs=1e-4)
    assert wilson_interval(0, 0) is None
    assert wilson_interval(2.5, 5)[0] < 0.5 < wilson_interval(2.5, 5)[1]


def test_judge_pair_reads_p_first_from_the_scale_probabilities():
    judge = ScriptedJudge(scaled=lambda shared: {"1": 0.3, "2": 0.1} if shared["response_1"] == "x" else {"1": 0.1, "2": 0.3})
    verdict = asyncio.run(judge_pair(judge, Pair("k", "q?", "x", "y")))
    assert verdict.p_a_first == pytest.approx(0.75) and verdict.p_b_first == pytest.approx(0.25)
    assert verdict.order_ab == "a" and verdict.order_ba == "a" and verdict.winner == "a"


# ---- inputs and CLI ------------------------------------------------------------------------


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_samples_are_matched_by_id_and_leftovers_reported(tmp_path):
    a = _jsonl(
        tmp_path / "a.jsonl",
        [
            {"id": "1", "user_input": "Q1?", "response": "a1", "score": 0.9},
            {"id": "2", "user_input": "Q2?", "response": "a2", "score": 0.1},
            {"id": "3", "user_input": "Q3?"},
            {"id": "4", "user_input": "Q4?", "response": "a4"},
        ],
    )
    b = _jsonl(
        tmp_path / "b.jsonl",
        [
            {"id": "2", "user_input": "Q2?", "response": "b2", "score": 0.8},
            {"id": "1", "user_input": "Q1?", "response": "b1", "score": 0.2},
            {"id": "3", "user_input": "Q3?", "response": "b3"},
            {"id": "5", "user_input": "Q5?", "response": "b5"},
        ],
    )
    pairs, report = match_samples(load_side(a), load_side(b), reference_metric="score")
    assert report["by"] == "id"
    assert [(p.key, p.response_a, p.response_b, p.reference) for p in pairs] == [("1", "a1", "b1", "a"), ("2", "a2", "b2", "b")]
    assert [u["key"] for u in report["unmatched_a"]] == ["4"] and [u["key"] for u in report["unmatched_b"]] == ["3", "5"]
    assert report["unusable"] == [{"side": "A", "key": "3", "reason": "no response"}]


def test_samples_without_ids_are_matched_by_question(tmp_path):
    a = _jsonl(tmp_path / "a.jsonl", [{"user_input": "How long?", "response": "x"}, {"user_input": "Why?", "response": "y"}])
    b = _jsonl(tmp_path / "b.jsonl", [{"user_input": "how  long?", "response": "z"}])
    pairs, report = match_samples(load_side(a), load_side(b))
    assert report["by"] == "question" and [(p.response_a, p.response_b) for p in pairs] == [("x", "z")]
    assert len(report["unmatched_a"]) == 1 and report["unmatched_b"] == []


def test_labels_file_gives_the_reference(tmp_path):
    path = _jsonl(tmp_path / "labels.jsonl", [{"id": "1", "better": "B"}, {"id": "2", "better": "maybe"}])
    found = read_preferences(path)
    labels, problems = found.by_id, found.problems
    assert labels == {"1": "b"} and len(problems) == 1 and "line 2" in problems[0]


def test_report_files_are_written(tmp_path):
    report = judge_pairs(PAIRS, ScriptedJudge(scaled=first_position))
    json_path, md_path = write_report(report, tmp_path / "out")
    document = json.loads(json_path.read_text())
    assert document["statistics"]["ties"] == 4 and len(document["pairs"]) == 4
    text = md_path.read_text()
    assert "position consistency" in text and "depends on the order" in text


def test_cli_pairwise_writes_json_and_markdown(tmp_path, monkeypatch):
    a = _jsonl(tmp_path / "a.jsonl", [{"id": p.key, "user_input": p.question, "response": p.response_a} for p in PAIRS])
    b = _jsonl(tmp_path / "b.jsonl", [{"id": p.key, "user_input": p.question, "response": p.response_b} for p in PAIRS[:3]])
    judge = ScriptedJudge(scaled=prefers(lambda x, y: x if x in CORRECT else y))
    monkeypatch.setattr("ragmeter.judges.config.JudgeConfig.build", lambda self, *a, **k: judge)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["pairwise", str(a), str(b), "--criterion", "Factually correct.", "--out", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads((out / "pairwise.json").read_text())
    assert document["statistics"]["wins_a"] == 3 and [u["key"] for u in document["matching"]["unmatched_a"]] == ["q4"]
    assert (out / "pairwise.md").exists()
    assert "win rate of B over A" in result.output and "q4" in result.output


def test_cli_pairwise_fails_cleanly_on_a_missing_input(tmp_path):
    result = CliRunner().invoke(app, ["pairwise", str(tmp_path / "nope.jsonl"), str(tmp_path / "nope2.jsonl")])
    assert result.exit_code == 2 and "nope.jsonl" in result.output


def test_cli_pairwise_says_plainly_why_there_is_no_pair(tmp_path, monkeypatch):
    """It said "no question has a response on both sides (a, b); matched by nothing": 'matched by
    nothing' meant no pair, and a question may well have had a response on both sides, unpaired
    (an id on one side only). It now says the rule and what each side's samples missed."""
    a = _jsonl(tmp_path / "a.jsonl", [{"id": "1", "user_input": "Q1?", "response": "a1"}, {"id": "2", "user_input": "Q2?"}])
    b = _jsonl(tmp_path / "b.jsonl", [{"user_input": "Q1?", "response": "b1"}, {"id": "2", "user_input": "Q2?", "response": "b2"}])
    monkeypatch.setattr("ragmeter.judges.config.JudgeConfig.build", lambda self, *a, **k: pytest.fail("no judge is built"))
    result = CliRunner().invoke(app, ["pairwise", str(a), str(b), "--out", str(tmp_path / "out")], terminal_width=400)
    assert result.exit_code == 2 and "matched by" not in result.output
    assert " ".join(result.output.split()) == (
        f"error: nothing to judge: no sample of {a} pairs with one of {b} (samples pair by id, else by question, and need a "
        "question and a response): A has 2 sample(s), B 2; 1 of A and 2 of B have no counterpart on the other side; "
        "1 left out without a question or a response"
    )
    assert not (tmp_path / "out").exists()
