"""The RGB-style robustness suite on hand-made questions: how each condition is built, how a
response is decided, that one failing call does not stop the suite, the per-condition rates
and the paired comparison, and the report; plus the two example generators."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from cli_helpers import one_line_error, runner

from ragmeter.cli import app
from ragmeter.decide.robustness_suite import (
    COUNTERFACTUAL,
    INTEGRATION,
    NEGATIVE_REJECTION,
    Case,
    answer_found,
    compare_suites,
    judge_case,
    load_rgb,
    rgb_cases,
    run_suite,
    summarise,
    write_suite_report,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from rgb_readers import REFUSAL, hardened, naive


def row(key: str, city: str, answer: str) -> dict:
    return {
        "id": key,
        "query": f"{city}的人口是多少",
        "answer": [answer],
        "positive": [f"{city}的人口是{answer}。", f"据统计，{city}人口为{answer}。", f"{city}目前人口{answer}。"],
        "negative": [f"{city}的面积很大。", f"{city}有很多公园。", f"{city}的气候温和。", f"{city}的交通便利。", f"{city}的美食有名。"],
    }


ROWS = [row("a", "甲市", "300万"), row("b", "乙市", "120万")]


def test_each_condition_gets_the_passages_it_promises():
    cases = rgb_cases(ROWS, passages=5, noise_ratios=(0.0, 0.4, 0.8))
    by = {(c.condition, c.key): c for c in cases}
    assert [c.condition for c in cases if c.key == "a"] == [
        "noise_0",
        "noise_0.4",
        "noise_0.8",
        NEGATIVE_REJECTION,
        COUNTERFACTUAL,
        INTEGRATION,
    ]
    negatives = set(ROWS[0]["negative"])
    for ratio, noisy in (("0", 0), ("0.4", 2), ("0.8", 4)):
        passages = by[(f"noise_{ratio}", "a")].passages
        assert sum(p in negatives for p in passages) == noisy and len(passages) == min(5, noisy + 3)
    assert set(by[(NEGATIVE_REJECTION, "a")].passages) <= negatives
    counterfactual = by[(COUNTERFACTUAL, "a")]
    assert counterfactual.false_answer == "120万" and sum("120万" in p for p in counterfactual.passages) == 1
    assert sum("300万" in p for p in counterfactual.passages) == 2 and len(counterfactual.passages) == 5
    integration = by[(INTEGRATION, "a")]
    assert integration.question == "甲市的人口是多少；乙市的人口是多少" and integration.answer == ["300万", "120万"]
    assert any("300万" in p for p in integration.passages) and any("120万" in p for p in integration.passages)
    assert rgb_cases(ROWS) == rgb_cases(ROWS)  # the seed fixes every draw


def test_answers_are_decided_by_rgb_rules_and_refusal_patterns():
    assert answer_found("RCEP: 中国、日本", ["中国", "日本"]) and not answer_found("只有中国", ["中国", "日本"])
    assert answer_found("12 people", [["12人", "12 people"]]) and not answer_found("", [])
    case = Case("noise_0", "a", "q", [], ["300万"])
    assert judge_case(case, "人口是300万").correct and not judge_case(case, "资料不足，无法回答。300万").correct
    rejection = Case(NEGATIVE_REJECTION, "a", "q", [], ["300万"])
    assert judge_case(rejection, "资料不足，无法回答。").correct and not judge_case(rejection, "人口是300万").correct
    planted = Case(COUNTERFACTUAL, "a", "q", [], ["300万"], false_answer="120万")
    misled = judge_case(planted, "有人说120万，也有人说300万")
    assert misled.misled and not misled.correct


def test_rates_comparison_and_report_by_hand(tmp_path):
    cases = [Case("noise_0", k, "q", [], ["x"]) for k in "abcd"] + [Case(NEGATIVE_REJECTION, k, "q", [], ["x"]) for k in "abcd"]
    a = [judge_case(c, "x" if c.key in "ab" else "y") for c in cases]  # 2 of 4 right under noise, no refusal
    b = [judge_case(c, "x" if c.condition == "noise_0" else "我不知道") for c in cases]  # 4 of 4, and refuses all 4
    summary = summarise(b)
    assert summary["noise_0"]["accuracy"]["rate"] == 1.0 and summary[NEGATIVE_REJECTION]["refusal"]["rate"] == 1.0
    assert summary["noise_0"]["accuracy"]["ci_low"] == pytest.approx(0.5101, abs=1e-4)  # Wilson, 4 of 4
    comparison = compare_suites(a, b, label_a="naive", label_b="hardened")
    noise, rejection = comparison.conditions["noise_0"], comparison.conditions[NEGATIVE_REJECTION]
    assert noise["accuracy_diff"] == 0.5 and noise["p"] == pytest.approx(0.5)  # 2 of 4 sign flips reach |sum| 2: exact
    assert rejection["accuracy_diff"] == 1.0 and rejection["p"] == pytest.approx(2 / 16)
    assert rejection["p_holm"] == pytest.approx(0.25) and rejection["verdict"] == "no significant difference"
    paths = write_suite_report(comparison, tmp_path / "out", "hand-made")
    assert json.loads(paths[0].read_text(encoding="utf-8"))["conditions"]["noise_0"]["n_pairs"] == 4
    assert "| negative_rejection | 4 |" in paths[1].read_text(encoding="utf-8")


def test_a_failing_or_slow_generator_call_is_that_case_s_error_only():
    def flaky(question, passages):
        if question == "boom":
            raise RuntimeError("index down")
        return 42 if question == "number" else "x"

    async def slow(question, passages):
        await asyncio.sleep(5)

    cases = [Case("noise_0", k, k, [], ["x"]) for k in ("boom", "number", "fine")]
    outcomes = asyncio.run(run_suite(flaky, cases))
    assert [o.error for o in outcomes] == ["RuntimeError: index down", "TypeError: the generator returned int, not text", None]
    assert [o.correct for o in outcomes] == [False, False, True]
    late = asyncio.run(run_suite(slow, cases[:1], timeout=0.05))
    assert late[0].error.startswith("TimeoutError")


def test_rgb_files_are_checked_line_and_field(tmp_path):
    path = tmp_path / "rgb.jsonl"
    path.write_text(
        json.dumps(ROWS[0], ensure_ascii=False)
        + "\n"
        + json.dumps({"query": "q", "answer": [], "positive": ["p"], "negative": ["n"]})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"rgb.jsonl, line 2, field 'answer': expected a non-empty list"):
        load_rgb(path)
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1: invalid JSON"):
        load_rgb(path)


def test_the_example_generators_differ_where_they_should():
    passages = ["甲市的人口是300万。", "甲市的面积很大。"]
    assert naive("甲市的人口是多少", passages) == "甲市的人口是300万。" == hardened("甲市的人口是多少", passages)
    assert (
        hardened("乙市的人口是多少", ["丙县有很多公园。"]) == REFUSAL
        and naive("乙市的人口是多少", ["丙县有很多公园。"]) == "丙县有很多公园。"
    )
    both = hardened("甲市的人口是多少；乙市的人口是多少", ["甲市的人口是300万。", "乙市的人口是120万。"])
    assert "300万" in both and "120万" in both
    # Two passages say 300万, one says 120万: the hardened generator goes with the two.
    outvoted = ["甲市的人口是120万。", "甲市的人口是300万。", "据统计，甲市的人口是300万。"]
    assert "300万" in hardened("甲市的人口是多少", outvoted) and "120万" in naive("甲市的人口是多少", outvoted)


def test_the_robustness_command_compares_a_generator_with_a_baseline(tmp_path):
    from typer.testing import CliRunner

    from ragmeter.cli import app

    data = tmp_path / "rgb.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    out = tmp_path / "out"
    args = ["robustness", str(data), "--generator", "rgb_readers:hardened", "--baseline", "rgb_readers:naive", "-o", str(out)]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    document = json.loads((out / "robustness.json").read_text(encoding="utf-8"))
    assert document["label_b"] == "rgb_readers:hardened" and document["conditions"][NEGATIVE_REJECTION]["accuracy_diff"] == 1.0
    assert "negative_rejection" in result.output
    bad = CliRunner().invoke(app, ["robustness", str(tmp_path / "missing.jsonl"), "--generator", "rgb_readers:naive", "-o", str(out)])
    assert bad.exit_code == 2 and "missing.jsonl" in bad.output and "Traceback" not in bad.output


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"answer": [""]}, "field 'answer': item 1 ('') must be a non-blank string"),
        ({"answer": ["300万", " "]}, "field 'answer': item 2 (' ') must be a non-blank string"),
        ({"answer": [[1]]}, "field 'answer': item 1: alternative 1 must be a non-blank string"),
        ({"answer": [[]]}, "field 'answer': item 1 is an empty list of alternatives"),
        ({"answer": [3]}, "field 'answer': item 1 (3) must be a non-blank string"),
        ({"positive": [1, 2, 3]}, "field 'positive': item 1 (1) must be a non-blank string"),
        ({"negative": ["ok", None]}, "field 'negative': item 2 (None) must be a non-blank string"),
        ({"query": "  "}, "field 'query': expected a non-blank string"),
    ],
)
def test_the_robustness_command_names_a_bad_rgb_field_and_writes_no_report(tmp_path, change, message):
    """An empty gold answer would count every response as right, and a non-text item crashed
    the suite: both are named by file, line and field before anything is asked."""
    data = tmp_path / "rgb.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [ROWS[0], {**ROWS[1], **change}]), encoding="utf-8")
    result = runner.invoke(app, ["robustness", str(data), "--generator", "rgb_readers:naive", "-o", str(tmp_path / "out")])
    one_line_error(result, f"rgb.jsonl, line 2, {message}")
    assert not (tmp_path / "out").exists()


def test_an_rgb_file_without_a_question_is_an_error_not_an_empty_report(tmp_path):
    data = tmp_path / "rgb.jsonl"
    data.write_text("\n", encoding="utf-8")
    result = runner.invoke(app, ["robustness", str(data), "--generator", "rgb_readers:naive", "-o", str(tmp_path / "out")])
    one_line_error(result, "rgb.jsonl: no question in the file")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "data, said",
    [
        ('{"query": "caf\u00e9"}\n'.encode("latin-1"), "line 1: invalid UTF-8 (byte 0xe9 at column 15); the file may be in"),
        ('{"query": "q"}\n'.encode("utf-16-le"), "looks like UTF-16LE without a byte-order mark"),
    ],
)
def test_load_rgb_names_the_file_that_is_not_utf8(tmp_path, data, said):
    path = tmp_path / "questions.jsonl"
    path.write_bytes(data)
    with pytest.raises(ValueError) as raised:
        load_rgb(path)
    assert str(raised.value).startswith(f"{path}, ") and said in str(raised.value)
