"""``answer`` and ``traces`` write their samples as JSON lines; ``ragmeter eval`` picks a
file's format by its suffix, so an ``--out`` not named ``.jsonl``/``.ndjson`` is refused
up front instead of leaving JSON lines in a ``.csv`` that eval then misreads."""

from __future__ import annotations

import json

import pytest
from cli_helpers import one_line_error, runner, write_jsonl

from ragmeter.cli import app

SPAN = {
    "trace_id": "780e72c62aff0387778e4ac5fc213792",
    "span_id": "53d8fc9374fc91e8",
    "name": "answer",
    "started_at": "2026-12-04T16:43:58.591+00:00",
    "kind": "CHAIN",
    "latency_ms": 0.19,
    "question": "what runner size?",
    "response": "small",
}
TRANSCRIPT = [{"role": "user", "content": "What runner size?"}, {"role": "assistant", "content": "Small."}]


@pytest.mark.parametrize("name", ["out.csv", "out.json", "out.parquet", "out"])
def test_a_samples_file_not_named_as_json_lines_is_refused_and_nothing_is_written(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "traces.jsonl", [SPAN])
    write_jsonl(tmp_path / "agent.jsonl", [{"messages": TRANSCRIPT}])
    write_jsonl(tmp_path / "testset.jsonl", [{"id": "q1", "user_input": "What runner size?"}])
    (tmp_path / "rag_for_suffix.py").write_text("def answer(q):\n    return [], 'small'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    for args in (
        ["traces", "export", "traces.jsonl", "-o", name],
        ["traces", "transcripts", "agent.jsonl", "-o", name],
        ["answer", "testset.jsonl", "-p", "rag_for_suffix:answer", "-o", name],
    ):
        result = runner.invoke(app, args)
        one_line_error(result, f"--out {name}: the samples are written as JSON lines", ".jsonl or .ndjson")
        assert not (tmp_path / name).exists(), args


@pytest.mark.parametrize("name", ["out.jsonl", "OUT.NDJSON"])
def test_a_json_lines_name_is_written_and_eval_reads_it(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "traces.jsonl", [SPAN])
    result = runner.invoke(app, ["traces", "export", "traces.jsonl", "-o", name])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / name).read_text(encoding="utf-8"))["response"] == "small"
