"""Half a surrogate pair, and numbers too long to read, in what users give ragmeter.

JSON's grammar allows ``"\\ud800"`` alone, and Python's parser returns it as a string no
UTF-8 file can hold; file names and arguments that are not UTF-8 reach Python as such halves
too. Before, one such sample ended ``eval`` with "unexpected error: UnicodeEncodeError" (its
fingerprint), and a traced request, a stored tag or a run directory's name ended the trace
sinks, the dashboard, ``runs import`` and ``gate --junit`` the same way. A 5,001-digit
integer in a JSON sample ended ``eval`` with Python's digit limit.
"""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.dashboard.app import create_app
from ragmeter.data import load_dataset
from ragmeter.data.files import json_line, json_value, write_text
from ragmeter.data.json_numbers import TOO_LONG_NUMBER
from ragmeter.observe.tracing import configure, trace
from ragmeter.store import RunStore

runner = CliRunner()
HALF = "invalid JSON: \\ud800 is half of a surrogate pair, not a Unicode character"


def _line(**fields) -> str:
    """One sample as a JSON line; ``HALF_PAIR`` in a value becomes the escape ``\\ud800``."""
    return json.dumps({"response": "a b", "reference": "a b", **fields}).replace("HALF_PAIR", "\\ud800")


def test_json_value_refuses_half_a_pair_and_reads_a_whole_one():
    assert json_value('{"q": "smile \\ud83d\\ude00"}') == {"q": "smile \U0001f600"}
    for text in ('{"q": "a \\ud800 b"}', '{"\\uD800": 1}', '[["x", {"k": "\\udfff"}]]', '"\\ude00\\ud83d"'):
        with pytest.raises(ValueError, match="half of a surrogate pair"):
            json_value(text)
    with pytest.raises(ValueError, match=TOO_LONG_NUMBER + " in field 'n'"):
        json_value('{"n": ' + "9" * 5001 + "}")
    # Bytes that are not UTF-8 (a results.jsonl line) were said to hold a number too long to read.
    with pytest.raises(ValueError, match=r"^invalid UTF-8 \(byte 0xff at column 8\)$"):
        json_value(b'{"a": "\xff"}')


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_sample_with_half_a_pair_or_a_huge_number_is_a_named_row_issue(tmp_path, suffix):
    rows = [
        _line(id="ok-1"),
        _line(id="half", user_input="what HALF_PAIR is it?"),
        '{"id": "huge", "response": "x", "reference": "x", "metadata": {"n": ' + "9" * 5001 + "}}",
        _line(id="ok-2"),
    ]
    path = tmp_path / f"s{suffix}"
    path.write_text("\n".join(rows) + "\n" if suffix == ".jsonl" else "[\n" + ",\n".join(rows) + "\n]\n", encoding="utf-8")
    dataset = load_dataset(path)
    assert [s.key for s in dataset] == ["ok-1", "ok-2"]
    first = 2 if suffix == ".jsonl" else 3  # the JSON list opens on a line of its own
    huge = f'{TOO_LONG_NUMBER}: "{"9" * 40}"… (5,001 characters)'
    assert [(i.location, i.field, i.message) for i in dataset.issues] == [
        (f"line {first}", None, HALF),
        (f"line {first + 1}", "metadata.n", huge),
    ]


def test_eval_scores_the_other_samples_and_names_the_line(tmp_path):
    data = tmp_path / "s.jsonl"
    data.write_text(_line(id="half", user_input="q HALF_PAIR") + "\n" + _line(id="ok") + "\n", encoding="utf-8")
    result = runner.invoke(app, ["eval", str(data), "-m", "token_f1", "-o", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert f"line 1: {HALF}" in " ".join(result.output.split()) and "unexpected" not in result.output
    assert [json.loads(line)["key"] for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()] == ["ok"]


def test_what_ragmeter_writes_replaces_half_a_pair(tmp_path):
    assert json.loads(json_line({"q": "a \ud800 b", "k\udcff": 1})) == {"q": "a \ufffd b", "k\ufffd": 1}
    path = write_text(tmp_path / "r.md", "run\udcff")
    assert path.read_text(encoding="utf-8") == "run\ufffd"


def test_a_traced_request_with_half_a_pair_loses_no_span(tmp_path):
    """The JSON-lines sink dropped that request's span, and the store sink its whole batch
    (the clean requests traced with it)."""
    configure(tmp_path / "t.jsonl", store=str(tmp_path / "live.db"), otel=False)

    @trace
    def ask(question: str) -> str:
        return "answer"

    try:
        for question in ("first", "second \ud800", "third"):
            ask(question)
    finally:
        configure()
    lines = (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and "second \ufffd" in lines[1]
    assert sqlite3.connect(tmp_path / "live.db").execute("select count(*) from spans").fetchone()[0] == 3


def test_a_run_directory_or_tag_that_is_no_utf8_is_stored_gated_and_shown(tmp_path):
    run = tmp_path / os.fsdecode(b"run\xff")
    data = tmp_path / "s.jsonl"
    data.write_text(_line(id="ok") + "\n", encoding="utf-8")
    store = str(tmp_path / "s.db")
    tag = os.fsdecode(b"bad\xff")
    assert runner.invoke(app, ["eval", str(data), "-m", "token_f1", "-o", str(run), "--store", store, "--tag", tag]).exit_code == 0
    thresholds = tmp_path / "th.yaml"
    thresholds.write_text("token_f1: 0.1\n", encoding="utf-8")
    gated = runner.invoke(app, ["gate", str(run), "--thresholds", str(thresholds), "--junit", str(tmp_path / "g.xml")])
    assert gated.exit_code == 0 and "unexpected" not in gated.output, gated.output
    assert "run\ufffd" in (tmp_path / "g.xml").read_text(encoding="utf-8")
    imported = runner.invoke(app, ["runs", "import", str(run), "--store", str(tmp_path / "other.db")])
    assert imported.exit_code == 0, imported.output
    assert RunStore.open(str(tmp_path / "other.db")).runs()[0]["source"].endswith("run\ufffd")
    opened = RunStore.open(store)
    client = TestClient(create_app(opened))
    page = client.get("/")
    assert page.status_code == 200 and "bad\ufffd" in page.text
    runs = opened.runs()
    assert len(runs) == 1 and all(client.get(f"/runs/{r['id']}").status_code == 200 for r in runs)
