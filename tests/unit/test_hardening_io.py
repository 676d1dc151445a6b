"""Hardening of input loading (issue 13): long CSV cells (defect 10), deep nesting (11), a
DataFrame id column made float by a NaN (14), files in another encoding (18); a CSV cell with
a number too long to read."""

from __future__ import annotations

import csv
import json
import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.cli import app
from ragmeter.data import InputError, load_dataset
from ragmeter.data.schema import Sample
from ragmeter.decide.labels import read_labels, score
from ragmeter.decide.probe_files import ProbeFileError, load_probe_file
from ragmeter.decide.robustness_suite import load_rgb
from ragmeter.monitor.kb import SnapshotError, read_snapshot

runner = CliRunner()

DEPTH = 5000  # far beyond Python's recursion limit (1000)
TOO_DEEP = "nested too deeply"


def _nested_object(depth):
    """JSON text of ``{"a": {"a": ... 1}}``, ``depth`` objects deep (built as text: json.dumps
    itself would fail on it)."""
    return '{"a": ' * depth + "1" + "}" * depth


def _nested_list(depth):
    return "[" * depth + "]" * depth


@pytest.fixture
def default_csv_limit():
    """The csv module's own cell limit (128 KB), as a fresh process has it: the reader must
    raise it itself, not rely on an earlier test having done so."""
    previous = csv.field_size_limit(131072)
    yield
    csv.field_size_limit(previous)


# ---- defect 10: a CSV cell over 128 KB -------------------------------------------------


def test_csv_cell_over_128_kb_loads(tmp_path, default_csv_limit):
    """Defect 10: a retrieved document longer than the csv module's 128 KB default loads."""
    long_context = "The retention period is thirty days. " * 6000  # 228,000 characters
    assert len(long_context.encode()) > 131072
    path = tmp_path / "long.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "response", "reference", "retrieved_contexts"])
        writer.writerow(["long", long_context, "thirty days", json.dumps([long_context, "short"])])
        writer.writerow(["short", "thirty days", "thirty days", json.dumps(["x"])])
    dataset = load_dataset(path)
    assert dataset.issues == []
    assert [s.key for s in dataset] == ["long", "short"]
    first = dataset.samples[0].sample
    assert first.response == long_context
    assert first.retrieved_contexts == [long_context, "short"]


def test_csv_cell_over_128_kb_evaluates_from_the_command_line(tmp_path, default_csv_limit):
    """Defect 10, end to end: the CLI scores the row with the long cell."""
    path = tmp_path / "long.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "response", "reference"])
        writer.writerow(["long", "x" * 200_000, "x" * 200_000])
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", str(path), "-m", "exact_match", "-o", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "results.jsonl").read_text(encoding="utf-8"))
    assert record["key"] == "long" and record["scores"]["exact_match"]["value"] == 1.0


# ---- defect 11: deep nesting -----------------------------------------------------------


def test_deeply_nested_jsonl_rows_are_issues_and_the_rest_load(tmp_path):
    """Defect 11: metadata nested 5000 deep (an object chain and a list chain) makes its row
    an input issue; loading goes on and the other rows load."""
    lines = [
        json.dumps({"id": "ok-1", "response": "a b", "reference": "a b"}),
        '{"id": "deep-object", "response": "x", "reference": "x", "metadata": ' + _nested_object(DEPTH) + "}",
        '{"id": "deep-list", "response": "x", "reference": "x", "metadata": {"m": ' + _nested_list(DEPTH) + "}}",
        json.dumps({"id": "ok-2", "response": "c", "reference": "d"}),
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["ok-1", "ok-2"]
    assert [(i.location, TOO_DEEP in i.message) for i in dataset.issues] == [("line 2", True), ("line 3", True)]


def test_a_deeply_nested_item_of_a_json_list_does_not_abort_the_file(tmp_path):
    """Defect 11, JSON list files: the deep item is a row issue (at its line); the items
    before and after it still load (fixed: it used to reject the whole file)."""
    text = (
        "[\n"
        + json.dumps({"id": "before", "response": "a", "reference": "a"})
        + ",\n"
        + '{"id": "deep", "response": "x", "reference": "x", "metadata": {"s": "]} \\" [", "m": '
        + _nested_list(DEPTH)
        + "}}"
        + ",\n"
        + json.dumps({"id": "after", "response": "b", "reference": "b"})
        + "\n]\n"
    )
    path = tmp_path / "deep.json"
    path.write_text(text, encoding="utf-8")
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["before", "after"]
    assert len(dataset.issues) == 1
    assert dataset.issues[0].location == "line 3" and TOO_DEEP in dataset.issues[0].message


def test_a_deeply_nested_csv_metadata_cell_is_a_row_issue(tmp_path):
    """Defect 11, CSV: a metadata cell nested 5000 deep is a row issue."""
    path = tmp_path / "deep.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "response", "reference", "metadata"])
        writer.writerow(["deep", "x", "x", _nested_object(DEPTH)])
        writer.writerow(["ok", "x", "x", '{"k": 1}'])
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["ok"]
    assert [(i.location, i.field) for i in dataset.issues] == [("line 2", "metadata")]
    assert TOO_DEEP in dataset.issues[0].message


def test_samples_given_as_objects_are_held_to_the_same_depth_limit(tmp_path):
    """Defect 11, Python API: a Sample object whose metadata nests 5000 deep (never read from
    a file, so never checked by a reader) is an input issue, not a RecursionError while the
    run's files are written (fixed in load_dataset)."""
    value: object = 1
    for _ in range(DEPTH):
        value = {"a": value}
    deep = Sample(id="deep", response="x", reference="x", metadata={"m": value})
    fine = Sample(id="fine", response="a b", reference="a c")
    result = evaluate([deep, fine], metrics=["token_f1"], out_dir=tmp_path / "run", progress=False)
    assert [s.key for s in result.samples] == ["fine"]
    assert [(i.field, TOO_DEEP in i.message) for i in result.issues] == [("metadata", True)]
    assert (tmp_path / "run" / "results.jsonl").read_text(encoding="utf-8").count("\n") == 1


def test_deep_input_neither_aborts_the_run_nor_the_html_report(tmp_path):
    """Defect 11, end to end: deep rows are skipped with an issue, and a row nested as deep as
    allowed (32 levels) is rendered into report.html with its innermost value."""
    allowed: object = "innermost-value"
    for _ in range(31):  # metadata.m is level 1; 31 more levels of lists
        allowed = [allowed]
    lines = [
        json.dumps({"id": "allowed", "response": "a b", "reference": "a b", "metadata": {"m": allowed}}),
        '{"id": "deep", "response": "x", "reference": "x", "metadata": ' + _nested_object(DEPTH) + "}",
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", str(path), "-m", "token_f1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "line 2" in result.output and TOO_DEEP in result.output
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "innermost-value" in html
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output


# ---- defect 14: a DataFrame id column with a NaN ---------------------------------------


def test_dataframe_integer_ids_with_a_nan_keep_their_digits():
    """Defect 14: pandas makes an integer column with a missing value float64 (1.0, 2.0, NaN);
    the ids stay "1" and "2", and the row without an id is kept (keyed by its row)."""
    frame = pd.DataFrame({"id": [1, 2, None], "response": ["a", "b", "c"], "reference": ["a", "b", "d"]})
    assert str(frame["id"].dtype) == "float64"  # the situation under test
    dataset = load_dataset(frame)
    assert dataset.issues == []
    assert [s.sample.id for s in dataset] == ["1", "2", None]
    assert [s.key for s in dataset][:2] == ["1", "2"]
    assert len(dataset) == 3


def test_parquet_integer_ids_with_a_nan_keep_their_digits(tmp_path):
    """Defect 14 through a file: the same column stored in Parquet, scored end to end."""
    path = tmp_path / "ids.parquet"
    frame = pd.DataFrame({"id": [1, 2, None], "response": ["blue", "green", "red"], "reference": ["blue", "green", "pink"]})
    frame.to_parquet(path)
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", str(path), "-m", "exact_match", "-o", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["key"] for r in records][:2] == ["1", "2"]
    assert [r["scores"]["exact_match"]["value"] for r in records] == [1.0, 1.0, 0.0]


# ---- defect 18: a file in another encoding ---------------------------------------------

GBK_ROWS = [
    {"id": "a", "response": "数据库变更需要审批", "reference": "数据库变更必须审批"},
    {"id": "b", "response": "回答", "reference": "答案"},
]


def _gbk_lines(rows):
    return b"".join(json.dumps(r, ensure_ascii=False).encode("gbk") + b"\n" for r in rows)


def test_a_gbk_json_lines_file_gets_an_encoding_hint_not_file_is_empty(tmp_path):
    """Defect 18: a JSON-lines file wholly in GBK is reported line by line as not UTF-8, with
    the hint that it may be GBK (fixed: it used to be called an empty file)."""
    path = tmp_path / "gbk.jsonl"
    path.write_bytes(_gbk_lines(GBK_ROWS))
    result = runner.invoke(app, ["eval", str(path), "-m", "token_f1", "-o", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "file is empty" not in result.output
    assert "invalid UTF-8" in result.output and "GBK" in result.output and "iconv" in result.output
    assert "Traceback" not in result.output


def test_an_image_saved_as_json_lines_is_called_binary_not_windows_1252(tmp_path):
    """A NUL byte is in no legacy encoding's text: the hint used to say "may be in Windows-1252"."""
    path = tmp_path / "shot.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10")
    result = runner.invoke(app, ["eval", str(path), "-m", "token_f1", "-o", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "shot.jsonl, line 1: invalid UTF-8 (byte 0x89 at column 1); it holds NUL bytes: binary data, not text" in result.output
    assert "Windows-1252" not in result.output and "Traceback" not in result.output


def test_a_gbk_line_among_utf8_lines_gets_the_hint_and_the_rest_is_scored(tmp_path):
    """Defect 18: a GBK line is a row issue with the hint; a line that is valid UTF-8 loads."""
    path = tmp_path / "mixed.jsonl"
    # A GBK file whose first line happens to be ASCII (escaped): that line is valid UTF-8 too.
    path.write_bytes(json.dumps(GBK_ROWS[0], ensure_ascii=True).encode("ascii") + b"\n" + _gbk_lines(GBK_ROWS[1:]))
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["a"]
    assert len(dataset.issues) == 1 and dataset.issues[0].location == "line 2"
    assert "GBK" in dataset.issues[0].message


def test_a_utf16_samples_file_is_read_or_named_utf16(tmp_path):
    """Windows' "Unicode" text is UTF-16 with a byte-order mark: a JSON or CSV file of samples
    in it is read; a JSON-lines file (read line by line, each line's byte offset kept for
    resuming) is refused with the encoding named, not "may be in Windows-1252"."""
    rows = [{"id": "a", "response": "数据库变更需要审批", "reference": "数据库变更必须审批"}]
    (tmp_path / "rows.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-16")
    (tmp_path / "rows.csv").write_text("id,response,reference\na,数据库变更需要审批,数据库变更必须审批\n", encoding="utf-16")
    for name in ("rows.json", "rows.csv"):
        dataset = load_dataset(tmp_path / name)
        assert [(s.key, s.sample.response) for s in dataset] == [("a", "数据库变更需要审批")] and not dataset.issues
    (tmp_path / "rows.jsonl").write_text(json.dumps(rows[0], ensure_ascii=False) + "\n", encoding="utf-16")
    result = runner.invoke(app, ["eval", str(tmp_path / "rows.jsonl"), "-m", "token_f1", "-o", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "the file is in UTF-16: convert it to UTF-8, e.g. iconv -f UTF-16 -t UTF-8" in result.output
    assert "Windows-1252" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
@pytest.mark.parametrize(("encoding", "label"), [("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE")])
def test_a_samples_file_in_utf16_without_a_byte_order_mark_is_named_utf16(tmp_path, suffix, encoding, label):
    """ASCII text in UTF-16 without a mark is valid UTF-8 with a NUL byte beside each letter:
    a JSON-lines file was one "invalid JSON" issue per line, a JSON file "invalid JSON: Expecting
    value", a CSV file NUL-ridden column names, none saying why. Now the file is refused with the
    encoding named and the command that converts it."""
    row = {"id": "a", "response": "approved", "reference": "approved"}
    text = {".jsonl": json.dumps(row) + "\n", ".json": json.dumps([row]), ".csv": "id,response,reference\na,approved,approved\n"}[suffix]
    path = tmp_path / f"rows{suffix}"
    path.write_bytes(text.encode(encoding))
    said = (
        f"the file looks like {label} without a byte-order mark (every other byte of its start is NUL): "
        f"convert it to UTF-8, e.g. iconv -f {label} -t UTF-8 in > out"
    )
    with pytest.raises(InputError) as refused:
        load_dataset(path)
    assert [(i.location, i.field, i.message) for i in refused.value.issues] == [("file", None, said)]
    result = runner.invoke(app, ["eval", str(path), "-m", "token_f1", "-o", str(tmp_path / "run")])
    assert result.exit_code == 2 and f"{path}, file: {said}" in " ".join(result.output.split()), result.output


def test_the_hint_for_chinese_in_utf16_without_a_mark_names_the_encoding_as_iconv_spells_it(tmp_path):
    """Chinese in UTF-16 without a mark is no UTF-8: the hint said "iconv -f UTF-16-LE", which
    iconv refuses ("conversion from UTF-16-LE unsupported"); it is UTF-16LE. (A file whose start is
    ASCII in UTF-16 is refused as a whole: this one opens with Chinese.)"""
    path = tmp_path / "rows.jsonl"
    path.write_bytes("数据库变更需要审批".encode("utf-16-le") + b"\n\x00")
    dataset = load_dataset(path)
    assert dataset.issues[0].message.endswith("; the file is in UTF-16LE: convert it to UTF-8, e.g. iconv -f UTF-16LE -t UTF-8 in > out")


def test_a_gbk_csv_file_gets_the_hint(tmp_path):
    """Defect 18, CSV: the hint names GBK."""
    path = tmp_path / "gbk.csv"
    path.write_bytes("id,response,reference\na,数据库变更需要审批,数据库变更必须审批\n".encode("gbk"))
    result = runner.invoke(app, ["eval", str(path), "-m", "token_f1", "-o", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert "GBK" in result.output and "line 2" in result.output


DEEP = '{"x": ' * 5000 + "1" + "}" * 5000


def test_json_nested_too_deeply_is_a_named_line_in_every_reader_of_user_files(tmp_path):
    """Python's parser raises RecursionError on such a line; the readers of traces,
    transcripts, labels, probe files, RGB files and knowledge-base snapshots let it out as an
    "unexpected error" (eval's own reader already named it)."""
    deep_lines = tmp_path / "deep.jsonl"
    deep_lines.write_text(DEEP + "\n", encoding="utf-8")
    deep_file = tmp_path / "deep.json"
    deep_file.write_text(DEEP, encoding="utf-8")
    named = f"{deep_lines}, line 1: invalid JSON: lists and objects nested too deeply to read"
    for args in (
        ["traces", "export", str(deep_lines), "-o", str(tmp_path / "o.jsonl")],
        ["traces", "transcripts", str(deep_lines), "-o", str(tmp_path / "o.jsonl")],
        ["traces", "import", str(deep_lines), "--store", str(tmp_path / "s.db"), "--no-embed"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and named in result.output and "unexpected" not in result.output, (args, result.output)
    assert read_labels(deep_lines, "label", score).problems == [named]
    with pytest.raises(ProbeFileError, match=r"deep\.jsonl:1: invalid JSON: lists and objects nested too deeply"):
        load_probe_file(deep_lines)
    with pytest.raises(ValueError, match=re.escape(named)):
        load_rgb(deep_lines)
    with pytest.raises(SnapshotError, match="nested too deeply"):
        read_snapshot(deep_file)


def test_an_rgb_line_that_is_not_an_object_is_named(tmp_path):
    """It was "unexpected error: AttributeError: 'list' object has no attribute 'get'"."""
    path = tmp_path / "rgb.jsonl"
    path.write_text('["query", "answer"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"rgb\.jsonl, line 1: expected a JSON object, got list"):
        load_rgb(path)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_json_number_too_long_to_read_is_shown_briefly_with_its_field(tmp_path, suffix):
    """A JSON or JSON-lines sample with a number of 5,000 digits was an issue saying only "a
    number with more digits than can be read": which number, and in which field, was not said.
    Now the issue names the field (a hostile key escaped) and shows the number cut to 40 characters."""
    digits = "-" + "7" * 5000
    rows = [
        '{"id": "a", "response": "x", "reference": "x", "metadata": {"n": ' + digits + "}}",
        '{"id": "b", "response": "x", "reference": "x", "retrieved_contexts": ["c", ' + digits + "]}",
        '{"id": "c", "response": "x", "reference": "x", "metadata": {"\u202e": [' + digits + "]}}",
        '{"id": "d", "response": "x", "reference": "x"}',
    ]
    path = tmp_path / f"long{suffix}"
    path.write_text("\n".join(rows) + "\n" if suffix == ".jsonl" else "[" + ",\n".join(rows) + "]\n", encoding="utf-8")
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["d"]
    shown = f'invalid JSON: a number with more digits than can be read: "{digits[:40]}"… (5,001 characters)'
    fields = ["metadata.n", "retrieved_contexts[1]", 'metadata["\\u202e"][0]']
    assert [(i.location, i.field, i.message) for i in dataset.issues] == [(f"line {n}", f, shown) for n, f in enumerate(fields, 1)]
    out = runner.invoke(app, ["eval", str(path), "-m", "token_f1", "-o", str(tmp_path / "run"), "--no-progress"])
    assert out.exit_code == 0, out.output
    assert "set_int_max_str_digits" not in out.output and "\u202e" not in out.output
    assert f"line 1, field 'metadata.n': {shown}" in " ".join(out.output.split())


@pytest.mark.parametrize("last", [False, True])
def test_a_json_list_item_that_is_a_number_too_long_to_read_is_its_own_issue(tmp_path, last):
    """A bare integer of 5,000 digits as an item of a JSON list of samples was taken for the
    start of an object: last in the list, the file was refused with "the list is not closed
    with ']'"; before another sample, that sample was swallowed with it, unsaid. Now the item is
    an issue on its line with the too-long-number message, and every other sample loads."""
    digits = "-" + "7" * 5000
    samples = ['{"id": "a", "response": "x", "reference": "x"}', '{"id": "c", "response": "x", "reference": "x"}']
    items = [*samples, digits] if last else [samples[0], digits, samples[1]]
    path = tmp_path / "samples.json"
    path.write_text("[\n" + ",\n".join(items) + "\n]\n", encoding="utf-8")
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["a", "c"]
    shown = f'invalid JSON: a number with more digits than can be read: "{digits[:40]}"… (5,001 characters)'
    assert [(i.location, i.field, i.message) for i in dataset.issues] == [(f"line {4 if last else 3}", None, shown)]


def test_a_csv_number_too_long_to_read_is_shown_briefly_as_json(tmp_path):
    """A cell of 5,000 digits (in a metadata column, a list column or the metadata object) was
    an issue saying Python's "Exceeds the limit (4300 digits) for integer string conversion ...
    use sys.set_int_max_str_digits()", without the value; now it shows the cell as a JSON
    string, cut to 40 characters, with its length."""
    digits = "1" * 5000
    cells = {"score": digits, "retrieved_contexts": f"[{digits}]", "metadata": '{"\u202e": ' + digits + "}"}
    path = tmp_path / "long.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "user_input", "response", "reference", *cells])
        for column in cells:
            writer.writerow(["q", "q", "blue", "blue", *(cell if name == column else "" for name, cell in cells.items())])
        writer.writerow(["d", "q", "blue", "blue", "1", "", ""])
    dataset = load_dataset(path)
    assert len(dataset.samples) == 1
    prefix = "invalid JSON: a number with more digits than can be read: "
    expected = {
        (f"line {n}", column): f"{prefix}{json.dumps(cell[:40])}… ({len(cell):,} characters)"
        for n, (column, cell) in enumerate(cells.items(), start=2)
    }
    assert '"{\\"\\u202e\\": 1111' in expected[("line 4", "metadata")]  # the bidirectional override escaped
    assert {(i.location, i.field): i.message for i in dataset.issues} == expected
    out = runner.invoke(app, ["eval", str(path), "-m", "token_f1", "-o", str(tmp_path / "run"), "--no-progress"])
    assert out.exit_code == 0, out.output
    assert "set_int_max_str_digits" not in out.output and "\u202e" not in out.output
    assert expected[("line 2", "score")] in out.output
