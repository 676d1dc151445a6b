"""Minimal-edit faithfulness pairs: the same passage, a claim and its twin with one value changed.

The rows follow the formats of RGB (Chinese) and ClapNQ (English) but hold text written here.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from ragmeter.bench import edits, rgb, suites
from ragmeter.bench.task import read_rows
from ragmeter.metrics.claims import sentence_claims


def rgb_row(number, query, answer, positive, negative=("无关的段落。",)):
    return {"id": number, "query": query, "answer": answer, "positive": list(positive), "negative": list(negative)}


RGB_ROWS = [
    rgb_row(0, "梧桐市图书馆去年借出多少本书？", ["12万本"], ["梧桐市图书馆去年共借出12万本书，比前年多两成。"]),
    rgb_row(1, "梧桐市图书馆新馆开馆的时间", ["3月8日"], ["新馆于3月8日开馆，首日接待读者五千人。", "新馆位于河边。"]),
    rgb_row(2, "梧桐市图书馆馆长是谁", ["林晓雨"], ["馆长林晓雨表示，新馆将延长开放时间。"]),
    rgb_row(3, "梧桐市剧院院长是谁", ["周明"], ["剧院院长周明介绍了新一季的剧目。"]),
    rgb_row(4, "梧桐市博物馆开馆的时间", ["5月20日"], ["博物馆在5月20日开馆。"]),
    rgb_row(5, "梧桐市科技馆馆长是谁", [["陈一", "陈一博士"]], ["科技馆由陈一博士主持，馆内有三个展厅。"]),
    # The answer is in no positive passage: no pair.
    rgb_row(6, "梧桐市公园占地多少", ["80公顷"], ["公园很大，绿树成荫。"]),
]


def rgb_pairs(limit=None, seed=0, rows=RGB_ROWS):
    order = list(rows)
    random.Random(seed).shuffle(order)
    return edits.rgb_pairs(rows, order, limit, seed)


def by_id(pairs):
    return {s["id"]: s for s in pairs.samples}


def test_the_chinese_claim_is_one_sentence_stating_the_answer():
    assert edits.zh_claim("梧桐市图书馆馆长是谁？ ", "林晓雨") == "梧桐市图书馆馆长是谁：林晓雨。"
    assert edits.zh_claim("新馆开馆的时间", "3月8日") == "新馆开馆的时间：3月8日。"
    assert len(sentence_claims(edits.zh_claim("梧桐市图书馆去年借出多少本书？", "12万本"))) == 1


def test_chinese_answers_have_a_kind():
    assert edits.zh_kind("2021年11月23日") == "date 年月日"
    assert edits.zh_kind("3月8日") == "date 月日"
    assert edits.zh_kind("2022年") == "date 年"
    assert edits.zh_kind("12万本") == edits.zh_kind("6.4%") == edits.zh_kind("SE 3") == "number"
    assert edits.zh_kind("林晓雨") == edits.zh_kind("长津湖之水门桥") == "text"


def test_a_changed_number_differs_in_one_digit_and_keeps_its_unit():
    for seed in range(30):
        wrong = edits.changed_number("472.58亿元", "", random.Random(seed))
        assert wrong is not None and wrong.endswith("亿元") and len(wrong) == len("472.58亿元")
        assert sum(a != b for a, b in zip(wrong, "472.58亿元", strict=True)) == 1
        assert not wrong.startswith("0")
    # Neither the new number nor the new value may occur in the forbidden text.
    forbidden = "".join(f"{d}人" for d in range(10) if d != 7)
    assert edits.changed_number("2人", forbidden, random.Random(0)) == "7人"
    assert edits.changed_number("2人", forbidden + "7", random.Random(0)) is None
    assert edits.changed_number("许多", "", random.Random(0)) is None


def test_rgb_pairs_edit_the_answer_and_keep_the_passage():
    pairs = rgb_pairs()
    samples = by_id(pairs)
    assert [u["label"] for u in pairs.units] == [1, 0] * 6
    for right, edited in zip(pairs.units[::2], pairs.units[1::2], strict=True):
        positive, negative = samples[right["sample"]], samples[edited["sample"]]
        assert right["group"] == edited["group"] and right["sample"].endswith("-right") and edited["sample"].endswith("-edited")
        assert positive["retrieved_contexts"] == negative["retrieved_contexts"] and positive["user_input"] == negative["user_input"]
        passage = positive["retrieved_contexts"][0]
        value, wrong = positive["metadata"]["value"], negative["metadata"]["value"]
        assert positive["response"] == edits.zh_claim(positive["user_input"], value)
        assert negative["response"] == edits.zh_claim(positive["user_input"], wrong)
        assert value in passage and wrong not in passage and wrong != value
        assert edits.zh_kind(wrong) == edits.zh_kind(value) == positive["metadata"]["edit_kind"]


def test_rgb_pairs_pick_a_passage_and_spelling_that_hold_the_answer_and_count_what_they_skip():
    samples = by_id(rgb_pairs())
    assert samples["rgbe-1-right"]["retrieved_contexts"] == ["新馆于3月8日开馆，首日接待读者五千人。"]
    # Dates are swapped for another question's date of the same shape; names for another's name.
    assert samples["rgbe-1-edited"]["metadata"]["value"] == "5月20日"
    assert samples["rgbe-4-edited"]["metadata"]["value"] == "3月8日"
    assert samples["rgbe-2-edited"]["metadata"]["value"] in {"周明", "陈一", "陈一博士"}
    # The first spelling "陈一" is in the passage, and none of the row's own spellings is a wrong answer.
    assert samples["rgbe-5-right"]["response"] == "梧桐市科技馆馆长是谁：陈一。"
    assert samples["rgbe-5-edited"]["metadata"]["value"] in {"林晓雨", "周明"}
    number = samples["rgbe-0-edited"]["metadata"]["value"]
    assert re.fullmatch(r"\d\d万本", number) and number != "12万本"
    pairs = rgb_pairs()
    assert pairs.edited == {"number": 1, "date": 2, "text": 3}
    assert pairs.skipped == {"no positive passage contains the answer": 1}
    assert pairs.counts_text() == "6 of 7 rows edited (date 2, number 1, text 3); skipped 1 (no positive passage contains the answer: 1)"


def test_rgb_pairs_skip_a_row_whose_every_wrong_answer_is_in_the_passage():
    rows = [
        rgb_row(0, "馆长是谁", ["林晓雨"], ["馆长林晓雨和副馆长周明出席。"]),
        rgb_row(1, "院长是谁", ["周明"], ["院长周明出席。"]),
    ]
    pairs = rgb_pairs(rows=rows)
    assert pairs.skipped == {"no wrong text absent from the passage": 1}
    assert [s["id"] for s in pairs.samples] == ["rgbe-1-right", "rgbe-1-edited"]


def test_rgb_pairs_are_seeded_per_row_and_limited_to_rows_with_an_edit():
    everything = by_id(rgb_pairs())
    first = rgb_pairs(limit=2)
    assert len(first.units) == 4 and len({u["group"] for u in first.units}) == 2
    assert all(everything[s["id"]] == s for s in first.samples), "a row's pair does not depend on the limit"
    assert by_id(rgb_pairs(seed=0)) == everything
    others = [by_id(rgb_pairs(seed=seed)) for seed in range(1, 8)]
    assert any(o["rgbe-0-edited"]["response"] != everything["rgbe-0-edited"]["response"] for o in others)


CLAPNQ_ROWS = [
    {
        "id": "a",
        "question": "when did the river library open",
        "passage": "The River Library opened in 1987. It holds 45,000 books and is run by Anna Berg.",
        "reference_answer": "The River Library opened in 1987 and holds 45,000 books.",
    },
    {
        "id": "b",
        "question": "who runs the hill library",
        "passage": "The Hill Library is run by Tom Reyes, who came from the town archive in 2003.",
        "reference_answer": "It is run by Tom Reyes.",
    },
    {
        "id": "c",
        "question": "who runs the lake museum",
        "passage": "The Lake Museum is run by Sara Holm. It shows boats.",
        "reference_answer": "The Lake Museum is run by Sara Holm.",
    },
    {
        "id": "d",
        "question": "what does the lake museum show",
        "passage": "The museum shows old boats and nets; it opens daily.",
        "reference_answer": "It shows boats and nets.",
    },
]


def clapnq_pairs(limit=None, seed=0):
    order = list(CLAPNQ_ROWS)
    random.Random(seed).shuffle(order)
    return edits.clapnq_pairs(CLAPNQ_ROWS, order, limit, seed)


def test_english_values_are_dates_numbers_and_names():
    common = frozenset({"the", "however", "library", "opened"})
    text = "However, the River Library opened on June 19, 2009 with 1,200 books; Anna Berg said it cost 3.5 million in 2008."
    assert edits.en_values(text, common) == [
        ("name 2", "River Library"),
        ("date month day year", "June 19, 2009"),
        ("number", "1,200"),
        ("name 2", "Anna Berg"),
        ("number", "3.5"),
        ("date year", "2008"),
    ]
    # A capitalised ordinary word starting a sentence is not part of a name, alone it is none.
    assert edits.en_values("The River Library opened.", common) == [("name 2", "River Library")]
    assert edits.en_values("Library opened.", common) == []


def test_clapnq_pairs_edit_one_value_the_passage_states():
    pairs = clapnq_pairs()
    samples = by_id(pairs)
    assert pairs.skipped == {"no number, date or name of the answer is in the passage": 1}
    assert sum(pairs.edited.values()) == 3 and [u["label"] for u in pairs.units] == [1, 0] * 3
    for right, edited in zip(pairs.units[::2], pairs.units[1::2], strict=True):
        positive, negative = samples[right["sample"]], samples[edited["sample"]]
        row = next(r for r in CLAPNQ_ROWS if f"cqe-{r['id']}" == right["group"])
        assert positive["response"] == row["reference_answer"] and positive["retrieved_contexts"] == [row["passage"]]
        value, wrong = positive["metadata"]["value"], negative["metadata"]["value"]
        assert value in row["passage"] and wrong not in row["passage"] and wrong not in row["reference_answer"]
        assert negative["response"] == row["reference_answer"].replace(value, wrong)
    # Numbers and dates are edited before names; a name becomes another answer's name of the same length.
    assert samples["cqe-a-right"]["metadata"]["edit_kind"] in {"number", "date year"}
    assert samples["cqe-b-edited"]["response"] in {"It is run by Sara Holm.", "It is run by River Library.", "It is run by Lake Museum."}


def test_the_edit_sets_are_bench_tasks_with_the_embedding_baseline(tmp_path):
    (tmp_path / "rgb_zh_refine.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in RGB_ROWS), encoding="utf-8")
    clapnq = []
    for row in CLAPNQ_ROWS:
        sentences = re.split(r"(?<=\.) ", row["passage"])
        clapnq.append({**row, "title": "", "passage_sentences": sentences, "gold_sentences": sentences[:1], "answerable": True})
    clapnq.append({**clapnq[0], "id": "u", "answerable": False})
    (tmp_path / "clapnq_dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in clapnq), encoding="utf-8")
    tasks = suites.bench_tasks(["rgb/faithfulness_edits", "rgb/embedding_groundedness_edits", "clapnq/faithfulness_edits"], tmp_path, 2, 0)
    zh, zh_baseline, en = tasks
    assert [t.name for t in tasks] == ["rgb/faithfulness_edits", "rgb/embedding_groundedness_edits", "clapnq/faithfulness_edits"]
    assert (zh.metric, zh_baseline.metric, en.metric) == ("faithfulness", "embedding_groundedness", "faithfulness")
    assert zh.units is zh_baseline.units and len(zh.units) == 4 and len(en.units) == 4 and zh.kind == "binary"
    assert "6 of 7 rows edited" in zh.reference and "3 of 4 rows edited" in en.reference, "unanswerable rows are not counted"
    assert all(s.sample.metadata["edit_kind"] for s in en.dataset)
    # The same questions as the easy Chinese set draws, in its order.
    easy = rgb.rgb_faithfulness(read_rows(tmp_path / "rgb_zh_refine.jsonl"), None, 0)[0]
    easy_order = [u["group"].removeprefix("rgb-") for u in easy.units[::2] if u["group"] != "rgb-6"]
    assert [u["group"].removeprefix("rgbe-") for u in zh.units[::2]] == easy_order[:2]


@pytest.mark.parametrize("name", ["rgb/faithfulness_edits", "clapnq/embedding_groundedness_edits"])
def test_a_missing_file_names_the_data_folder_option(tmp_path, name):
    with pytest.raises(FileNotFoundError, match="--data-dir"):
        suites.bench_tasks([name], tmp_path, 2, 0)
