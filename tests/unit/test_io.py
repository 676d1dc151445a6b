"""Loading samples: every supported format, legacy names, and every kind of bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ragmeter import InputError, Sample, load_dataset

GOOD = {
    "id": "s1",
    "user_input": "How long may a CI job run?",
    "retrieved_contexts": ["Jobs time out after 60 minutes.", "Caches expire after 14 days."],
    "retrieved_context_ids": ["ci#2", "ci#3"],
    "response": "60 minutes [ci#2].",
    "reference": "A CI job may run for 60 minutes by default.",
    "metadata": {"answerable": True},
}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_jsonl_loads_samples_with_keys_and_locations(tmp_path):
    path = write_jsonl(tmp_path / "data.jsonl", [GOOD, {**GOOD, "id": "s2"}])
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["s1", "s2"]
    assert dataset.samples[1].location == "line 2"
    assert dataset.samples[0].sample.retrieved_context_ids == ["ci#2", "ci#3"]
    assert dataset.issues == []


def test_samples_without_id_are_keyed_by_file_and_line(tmp_path):
    row = {k: v for k, v in GOOD.items() if k != "id"}
    path = write_jsonl(tmp_path / "data.jsonl", [row, row])
    assert [s.key for s in load_dataset(path)] == [f"{path}:1", f"{path}:2"]
    (tmp_path / "other").mkdir()
    same_name = write_jsonl(tmp_path / "other" / "data.jsonl", [row])
    assert len(load_dataset(path, same_name)) == 3, "files of the same name in other folders stay apart"


def test_legacy_field_names_are_mapped(tmp_path):
    legacy = {"question": "q?", "contexts": ["c"], "answer": "a", "ground_truth": "g"}
    sample = load_dataset(write_jsonl(tmp_path / "d.jsonl", [legacy])).samples[0].sample
    assert (sample.user_input, sample.retrieved_contexts, sample.response, sample.reference) == ("q?", ["c"], "a", "g")


def test_legacy_and_current_name_together_is_an_issue(tmp_path):
    dataset = load_dataset(write_jsonl(tmp_path / "d.jsonl", [{"question": "a", "user_input": "b"}]))
    assert len(dataset) == 0
    assert "both 'question' and 'user_input' are given" in dataset.issues[0].message


def test_unknown_columns_go_to_metadata_and_numeric_ids_become_text(tmp_path):
    row = {"user_input": "q", "latency_ms": 120, "retrieved_context_ids": [3, 7], "metadata": {"team": "a"}}
    sample = load_dataset(write_jsonl(tmp_path / "d.jsonl", [row])).samples[0].sample
    assert sample.metadata == {"team": "a", "latency_ms": 120}
    assert sample.retrieved_context_ids == ["3", "7"]


def test_wrong_type_names_file_line_and_field(tmp_path):
    bad = {**GOOD, "id": "s2", "retrieved_contexts": ["fine", 42]}
    path = write_jsonl(tmp_path / "data.jsonl", [GOOD, bad, {**GOOD, "id": "s3"}])
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["s1", "s3"], "the bad row is skipped, the others kept"
    (issue,) = dataset.issues
    assert issue.source == str(path)
    assert issue.location == "line 2"
    assert issue.field == "retrieved_contexts[1]"
    assert "string" in issue.message and "42" in issue.message
    assert issue.skipped
    assert str(path) in str(issue) and "line 2" in str(issue) and "retrieved_contexts[1]" in str(issue)


def test_metadata_must_be_an_object(tmp_path):
    dataset = load_dataset(write_jsonl(tmp_path / "d.jsonl", [{"user_input": "q", "metadata": "x"}]))
    assert dataset.issues[0].field == "metadata"


def test_invalid_json_line_is_reported_and_skipped(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(GOOD) + '\n{"id": "x", "user_input": \n' + json.dumps({**GOOD, "id": "s3"}) + "\n")
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["s1", "s3"]
    assert dataset.issues[0].location == "line 2"
    assert dataset.issues[0].message.startswith("invalid JSON")


def test_a_line_that_is_not_an_object(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("[1, 2]\n")
    (issue,) = load_dataset(path).issues
    assert "expected an object" in issue.message and issue.location == "line 1"


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"user_input": "caf\xe9"}\n')
    dataset = load_dataset(path)
    assert len(dataset) == 1
    assert dataset.issues[0].location == "line 2"
    assert "invalid UTF-8" in dataset.issues[0].message and "0xe9" in dataset.issues[0].message


def test_empty_file_is_an_input_error(tmp_path):
    for name in ("e.jsonl", "e.json", "e.csv"):
        path = tmp_path / name
        path.write_text("  \n")
        with pytest.raises(InputError, match="file is empty") as info:
            load_dataset(path)
        assert info.value.issues[0].source == str(path)


def test_lines_of_unicode_whitespace_are_blank(tmp_path):
    """A line holding only a no-break or ideographic space is skipped like an empty line."""
    path = tmp_path / "s.jsonl"
    row = json.dumps({"id": "a", "response": "yes"})
    path.write_text(f"{row}\n\u00a0\n\u3000 \n", encoding="utf-8")
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["a"] and dataset.issues == []
    path.write_text("\u00a0\n\u3000\n", encoding="utf-8")
    with pytest.raises(InputError, match="file is empty"):
        load_dataset(path)


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_dataset(tmp_path / "nope.jsonl")
    other = tmp_path / "data.txt"
    other.write_text("x")
    with pytest.raises(InputError, match=r"unsupported format '\.txt'"):
        load_dataset(other)


def test_duplicate_ids_are_reported(tmp_path):
    dataset = load_dataset(write_jsonl(tmp_path / "d.jsonl", [GOOD, GOOD]))
    assert len(dataset) == 1
    assert dataset.issues[0].field == "id" and "duplicate id 's1'" in dataset.issues[0].message


def test_strict_mode_raises_with_every_issue(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [GOOD, {"user_input": 5}, {"response": []}])
    with pytest.raises(InputError) as info:
        load_dataset(path, strict=True)
    assert [i.location for i in info.value.issues] == ["line 2", "line 3"]


def test_json_list_keeps_line_numbers(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps([GOOD, {**GOOD, "id": "s2", "response": 7}], indent=2))
    dataset = load_dataset(path)
    assert len(dataset) == 1
    issue = dataset.issues[0]
    braces = [n for n, line in enumerate(path.read_text().splitlines(), start=1) if line == "  {"]
    expected_line = braces[1]  # the second object's opening brace
    assert issue.location == f"line {expected_line}" and issue.field == "response"


def test_json_that_is_not_a_list_or_is_broken(tmp_path):
    path = tmp_path / "d.json"
    path.write_text('{"user_input": "q"}')
    with pytest.raises(InputError, match="expected a JSON list"):
        load_dataset(path)
    path.write_text('[{"user_input": "q"},\n {"user_input": ]')
    with pytest.raises(InputError, match="line 2"):
        load_dataset(path)
    path.write_text("[]")
    with pytest.raises(InputError, match="empty"):
        load_dataset(path)


def test_csv_with_json_and_python_list_cells(tmp_path):
    frame = pd.DataFrame(
        [
            {"id": "a", "user_input": "q1", "retrieved_contexts": json.dumps(["c1", "c2"]), "response": "007", "latency_ms": "250"},
            {"id": "b", "user_input": "q2", "retrieved_contexts": str(["c3"]), "response": "r", "latency_ms": ""},
        ]
    )
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    dataset = load_dataset(path)
    first, second = (s.sample for s in dataset)
    assert first.retrieved_contexts == ["c1", "c2"]
    assert first.response == "007", "text fields keep their text even when it looks like a number"
    assert first.metadata == {"latency_ms": 250}
    assert second.retrieved_contexts == ["c3"]
    assert second.metadata == {}


def test_csv_bad_list_cell_names_line_and_column(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text('id,user_input,retrieved_contexts\na,"multi\nline question","[""ok""]"\nb,q,not a list\n')
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["a"]
    issue = dataset.issues[0]
    assert (issue.location, issue.field) == ("line 4", "retrieved_contexts"), "line numbers count the multi-line cell"
    assert "JSON list" in issue.message


def test_csv_wrong_column_count_and_invalid_utf8(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes(b"id,user_input\na,q\nb,q,extra\nc,caf\xe9\nd,fine\n")
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["a", "d"]
    assert [i.location for i in dataset.issues] == ["line 3", "line 4"]
    assert dataset.issues[0].message.startswith("expected 2 columns")
    assert dataset.issues[1].message.startswith("invalid UTF-8 (byte 0xe9")


def test_csv_quote_never_closed_is_named_and_the_rows_after_it_are_read(tmp_path):
    """The csv module read everything after an unclosed quote into one cell: 1,000 rows were
    lost, and one "wrong column count" was all the run said."""
    path = tmp_path / "data.csv"
    rows = "".join(f"r{i},q{i},x,x\n" for i in range(300))
    path.write_text('id,user_input,response,reference\nb,q,"two\nlines",x\nc,5" screen,y,y\na,q,"never closed,ref\n' + rows)
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["b", "c"] + [f"r{i}" for i in range(300)]
    assert [(i.location, i.message) for i in dataset.issues] == [
        ("line 5", "a quoted cell is never closed (the lines after it are read on)")
    ]
    assert (
        dataset.samples[0].sample.response == "two\nlines" and dataset.samples[1].sample.user_input == '5" screen'
    )  # quotes that close, and a quote as text


def test_csv_header_naming_a_column_twice_is_refused(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("id,response,response,reference\na,first,second,second\n")
    with pytest.raises(InputError) as raised:
        load_dataset(path)
    (issue,) = raised.value.issues
    assert (issue.location, issue.field) == ("line 1", "response") and "names this column twice" in issue.message


def test_parquet_and_dataframe(tmp_path):
    frame = pd.DataFrame(
        [
            {"id": "a", "user_input": "q", "retrieved_contexts": ["x", "y"], "reference": None, "latency_ms": 12.5},
            {"id": "b", "user_input": "q2", "retrieved_contexts": ["z"], "reference": "r", "latency_ms": float("nan")},
        ]
    )
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    for source in (path, frame):
        dataset = load_dataset(source)
        a, b = (s.sample for s in dataset)
        assert a.retrieved_contexts == ["x", "y"] and a.reference is None and a.metadata == {"latency_ms": 12.5}
        assert b.reference == "r" and b.metadata == {}, "NaN is a missing value, not a number"


def test_dataframe_wrong_type_names_row(tmp_path):
    frame = pd.DataFrame([{"user_input": "q"}, {"user_input": 3}])
    dataset = load_dataset(frame)
    assert dataset.issues[0].source == "<DataFrame>"
    assert (dataset.issues[0].location, dataset.issues[0].field) == ("row 2", "user_input")


def test_unreadable_parquet(tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        load_dataset(path)


def test_list_of_samples_and_dicts():
    dataset = load_dataset([Sample(user_input="a"), {"user_input": "b"}])
    assert [s.sample.user_input for s in dataset] == ["a", "b"]


def test_several_sources_make_one_dataset(tmp_path):
    first = write_jsonl(tmp_path / "a.jsonl", [GOOD])
    second = write_jsonl(tmp_path / "b.jsonl", [{**GOOD, "id": "s2"}])
    assert [s.key for s in load_dataset(first, second)] == ["s1", "s2"]


def test_fingerprint_changes_with_content():
    a = Sample(user_input="q", response="r")
    assert a.fingerprint() == Sample(user_input="q", response="r").fingerprint()
    assert a.fingerprint() != Sample(user_input="q", response="r2").fingerprint()
