"""Pairwise judging with the real embedded judge (the packaged Qwen2.5-Coder-1.5B model).

Clear English and Chinese pairs: the question states the fact (or asks common knowledge),
one response agrees with it and the other contradicts it. Each pair is judged in both
orders; the correct response must win in both, whichever side (A or B) it is on. The CLI
is then run once, with a fresh judge, on two small JSONL files holding one of the pairs,
and must give bit-identical probabilities.

Eight judge calls in all (the runtime is dominated by evaluating each language's few-shot
head once per judge), so the module stays near a minute on two idle cores.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.decide.pairs import Pair
from ragmeter.decide.pairwise import judge_pairs
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.metering import metered

pytestmark = pytest.mark.integration

CRITERION = "Factually correct and answers the question."
PAIRS = [
    Pair(
        "en-approvals",
        "Merge requests into a protected branch need two approvals, and the author's own approval does not count. "
        "How many approvals does a merge request into a protected branch need?",
        "It needs one approval, and the author may approve it.",
        "It needs two approvals; the author's own approval does not count.",
        reference="b",
    ),
    Pair(
        "zh-window",
        "数据库变更只能在每周二和周四 10:00 至 15:00（UTC）执行。数据库变更可以在什么时间执行？",
        "可以在每天任何时间执行。",
        "只能在每周二和周四 10:00 至 15:00（UTC）执行。",
        reference="b",
    ),
    Pair("zh-capital", "法国的首都是哪座城市？", "法国的首都是巴黎。", "法国的首都是柏林。", reference="a"),
]


@pytest.fixture(scope="module")
def report():
    judge = LocalJudge()
    with metered() as usage:
        result = judge_pairs(PAIRS, judge, CRITERION, concurrency=1, close=True)
    return result, usage


def test_the_correct_response_wins_in_both_orders_in_english_and_chinese(report):
    result, usage = report
    by_key = {v.key: v for v in result.verdicts}
    for pair in PAIRS:
        verdict = by_key[pair.key]
        assert verdict.error is None
        assert verdict.lang == ("zh" if pair.key.startswith("zh") else "en")
        # Both orders were asked and each, on its own, prefers the correct response.
        assert 0.0 < verdict.p_a_first < 1.0 and 0.0 < verdict.p_b_first < 1.0
        assert (verdict.order_ab, verdict.order_ba) == (pair.reference, pair.reference), (pair.key, verdict.p_a_first, verdict.p_b_first)
        assert verdict.winner == pair.reference and verdict.consistent
    assert [by_key[p.key].winner for p in PAIRS] == ["b", "b", "a"]
    assert usage.calls == 2 * len(PAIRS), "one model call per pair and order"


def test_the_report_statistics_are_present_and_in_range(report):
    result, _ = report
    s = result.statistics
    assert (s["n_pairs"], s["n_judged"], s["n_failed"]) == (3, 3, 0)
    assert (s["wins_a"], s["wins_b"], s["ties"]) == (1, 2, 0)
    win = s["win_rate_b"]
    assert win["value"] == pytest.approx(2 / 3) and win["confidence"] == 0.95
    assert 0.0 < win["ci_low"] < win["value"] < win["ci_high"] < 1.0
    assert s["tie_rate"] == 0.0 and s["position_consistency"] == 1.0
    assert s["first_position_rate"] == 0.5  # 6 order verdicts, each for the correct side: 3 first, 3 second
    assert s["reference_agreement"] == {**s["reference_agreement"], "value": 1.0, "n": 3}
    # The two pairs whose responses differ in length: the longer one is correct and won.
    bias = s["length_bias"]
    assert (bias["n_decided"], bias["longer_wins"], bias["longer_is_better"], bias["bias"]) == (2, 1.0, 1.0, 0.0)
    assert result.settings["judge"]["backend"] == "local"


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_cli_judges_two_jsonl_files_with_the_real_model(tmp_path, monkeypatch, report):
    for name in ("RAGMETER_JUDGE_BACKEND", "RAGMETER_JUDGE_BASE_URL", "RAGMETER_JUDGE_MODEL", "RAGMETER_GGUF"):
        monkeypatch.delenv(name, raising=False)
    chosen = [PAIRS[2]]  # one pair: the CLI's fresh judge evaluates one language's head only
    a = _jsonl(tmp_path / "a.jsonl", [{"id": p.key, "user_input": p.question, "response": p.response_a} for p in chosen])
    b = _jsonl(tmp_path / "b.jsonl", [{"id": p.key, "user_input": p.question, "response": p.response_b} for p in chosen])
    labels = _jsonl(tmp_path / "labels.jsonl", [{"id": p.key, "better": p.reference.upper()} for p in chosen])
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "pairwise",
            str(a),
            str(b),
            "--criterion",
            CRITERION,
            "--labels",
            str(labels),
            "--out",
            str(out),
            "--judge",
            "local",
            "--no-cache",
            "--concurrency",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "win rate of B over A" in result.output and "position consistency" in result.output
    document = json.loads((out / "pairwise.json").read_text(encoding="utf-8"))
    assert document["criterion"] == CRITERION and document["settings"]["judge"]["backend"] == "local"
    assert document["matching"]["by"] == "id" and document["matching"]["n_matched"] == 1
    s = document["statistics"]
    assert (s["n_judged"], s["wins_a"], s["wins_b"], s["ties"]) == (1, 1, 0, 0)
    assert s["win_rate_b"]["ci_low"] == s["win_rate_b"]["value"] == 0.0 < s["win_rate_b"]["ci_high"] < 1.0
    assert s["position_consistency"] == 1.0 and s["tie_rate"] == 0.0 and s["reference_agreement"]["value"] == 1.0
    earlier = {v.key: v for v in report[0].verdicts}
    for row in document["pairs"]:
        # A fresh judge, through the CLI, gives the same probabilities as the Python API.
        assert (row["p_a_first"], row["p_b_first"]) == (earlier[row["key"]].p_a_first, earlier[row["key"]].p_b_first)
        assert row["winner"] == row["reference"] and row["order_ab"] == row["order_ba"] == row["reference"]
    assert "Pairwise comparison" in (out / "pairwise.md").read_text(encoding="utf-8")
