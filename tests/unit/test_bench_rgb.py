"""The Chinese answer correctness and noise sensitivity tasks built from RGB rows
(``rgb/answer_correctness``, ``rgb/noise_sensitivity``), on rows written here."""

from __future__ import annotations

import json

import pytest
from test_llm_double import FixedVectors, ScriptedJudge, core, premise_text

from ragmeter.bench import rgb, suites
from ragmeter.bench.runner import run_task
from ragmeter.bench.task import read_rows
from ragmeter.judges import BatchingEmbedder, Judges

ROWS = [
    {
        "id": 0,
        "query": "北河大桥哪年通车？",
        "answer": [["2019年", "二〇一九年"]],
        "positive": ["北河大桥全长两公里。北河大桥于2019年正式通车。", "大桥通车当天车流很大。"],
        "negative": ["北河大桥的设计方案曾经三次修改。北河大桥通车仪式很隆重。", "天气很好。"],
    },
    # No positive sentence holds the answer: left out.
    {"id": 1, "query": "南湖公园门票多少钱？", "answer": ["10元"], "positive": ["南湖公园很美。"], "negative": ["公园门票涨价了。"]},
    # Every negative sentence holds the answer: left out.
    {"id": 2, "query": "东山隧道有多长？", "answer": ["3公里"], "positive": ["东山隧道长3公里。"], "negative": ["隧道长3公里左右。"]},
    {
        "id": 3,
        "query": "西岭滑雪场何时开业？",
        "answer": ["12月1日"],
        "positive": ["西岭滑雪场将于12月1日开业。"],
        "negative": ["西岭滑雪场开业时间尚未确定，" + "雪" * 300 + "。", "西岭滑雪场的门票价格公布。"],
    },
]


def rgb_dir(tmp_path):
    with (tmp_path / "rgb_zh_refine.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in ROWS)
    return tmp_path


def rgb_rows(tmp_path):
    return read_rows(rgb_dir(tmp_path) / "rgb_zh_refine.jsonl")


def samples_of(task):
    return {s.sample.id: s.sample for s in task.dataset}


def test_each_kept_question_has_a_sentence_with_the_answer_and_a_related_one_without(tmp_path):
    task = rgb.rgb_answer_correctness(rgb_rows(tmp_path), None, 0)
    assert (task.name, task.metric, task.kind) == ("rgb/answer_correctness", "answer_correctness", "binary")
    by_id = samples_of(task)
    assert sorted(by_id) == ["rgbc-0-right", "rgbc-0-wrong", "rgbc-3-right", "rgbc-3-wrong"]
    assert by_id["rgbc-0-right"].response == "北河大桥于2019年正式通车。"
    # The negative sentence sharing the most characters with the query, not the first one.
    assert by_id["rgbc-0-wrong"].response == "北河大桥通车仪式很隆重。"
    # A page-long unpunctuated run is no answer: the shorter related sentence is taken.
    assert by_id["rgbc-3-wrong"].response == "西岭滑雪场的门票价格公布。"
    assert by_id["rgbc-0-right"].reference == by_id["rgbc-0-wrong"].reference == "北河大桥哪年通车：2019年。"
    labels = {u["sample"]: (u["label"], u["group"]) for u in task.units}
    assert labels["rgbc-0-right"] == (1, "rgbc-0") and labels["rgbc-0-wrong"] == (0, "rgbc-0")


def test_the_limit_counts_kept_questions(tmp_path):
    task = rgb.rgb_answer_correctness(rgb_rows(tmp_path), 1, 0)
    assert len(task.dataset) == 2 and len({u["group"] for u in task.units}) == 1


def test_a_set_whose_file_lacks_a_field_is_named_with_the_field(tmp_path):
    """It ended in "unexpected error: KeyError: 'negative'", naming no set and no file."""
    rows = [{key: value for key, value in row.items() if key != "negative"} for row in ROWS]
    with (tmp_path / "rgb_zh_refine.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    with pytest.raises(ValueError, match=r"set rgb: a row of its file in .* has no field 'negative'"):
        suites.bench_tasks(["rgb"], tmp_path, None, 0)


def test_noise_sensitivity_has_an_answer_sentence_and_noise_from_each_kind_of_passage(tmp_path):
    relevant, irrelevant = rgb.rgb_noise_sensitivity(rgb_rows(tmp_path), None, 0)
    assert (relevant.name, relevant.metric, relevant.params) == ("rgb/noise_sensitivity", "noise_sensitivity", {})
    assert (irrelevant.name, irrelevant.params) == ("rgb/noise_sensitivity(irrelevant)", {"mode": "irrelevant"})
    by_id = samples_of(relevant)
    # Question 3's positive passage has no sentence without the answer: left out, as are 1 and 2.
    assert sorted(by_id) == ["rgbn-0-irrelevant", "rgbn-0-relevant", "rgbn-0-right"]
    assert by_id["rgbn-0-right"].response == "北河大桥于2019年正式通车。"
    assert by_id["rgbn-0-relevant"].response == "北河大桥全长两公里。"
    assert by_id["rgbn-0-irrelevant"].response == "北河大桥通车仪式很隆重。"
    # Both passages the responses come from are retrieved, and every response has the same reference.
    assert {tuple(s.retrieved_contexts) for s in by_id.values()} == {(ROWS[0]["positive"][0], ROWS[0]["negative"][0])}
    assert {s.reference for s in by_id.values()} == {"北河大桥哪年通车：2019年。"}
    assert [(u["sample"], u["label"]) for u in relevant.units] == [("rgbn-0-right", 0), ("rgbn-0-relevant", 1)]
    assert [(u["sample"], u["label"]) for u in irrelevant.units] == [("rgbn-0-right", 0), ("rgbn-0-irrelevant", 1)]


def test_noise_sensitivity_tasks_score_the_noise_they_label(tmp_path):
    # A stand-in judge: a text supports a claim it contains, or that shares the gold answer with it.
    def rule(task, shared, item):
        premise = premise_text(shared)
        return float(core(item) in premise or ("2019年" in item and "2019年" in premise))

    judges = Judges(llm=ScriptedJudge(rule=rule), embedder=BatchingEmbedder(FixedVectors({})))
    for task in rgb.rgb_noise_sensitivity(rgb_rows(tmp_path), None, 0):
        measured = run_task(task, judges, progress=False)
        assert [(u["score"], u["label"]) for u in measured.units] == [(0.0, 0), (1.0, 1)], task.name
        assert measured.statistics["roc_auc"]["value"] == 1.0
