"""The Chinese answer correctness task built from RGB rows (``rgb/answer_correctness``), on
rows written here."""

from __future__ import annotations

import json

import pytest

from ragmeter.bench import rgb, suites
from ragmeter.bench.task import read_rows

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
