"""The store's URL handling and the ``runs`` and ``traces`` commands on a SQLite file: what a
``--store`` value means, one-line errors, traces and transcripts to samples that ``ragmeter
eval`` scores. (The store itself is tested on SQLite and PostgreSQL in tests/integration.)"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from cli_helpers import run_eval, runner, write_jsonl

import ragmeter
from ragmeter import observe
from ragmeter.cli import app
from ragmeter.store import RunStore, StoreError, resolve_url


def test_a_plain_path_is_a_sqlite_file_and_postgres_urls_use_psycopg(tmp_path):
    assert resolve_url(str(tmp_path / "sub" / "r.db")) == f"sqlite:///{tmp_path}/sub/r.db"
    assert (tmp_path / "sub").is_dir()
    assert resolve_url("sqlite:///x.db") == "sqlite:///x.db"
    assert resolve_url("postgres://u:p@h:5/db") == "postgresql+psycopg://u:p@h:5/db"
    assert resolve_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"


@pytest.mark.parametrize(
    "url, message",
    [
        ("mysql://u@h/db", "unsupported database 'mysql'"),
        ("postgresql+asyncpg://u@h/db", "the PostgreSQL driver 'asyncpg' is not supported"),
        ("://nowhere", "is not a database URL"),
        ("postgresql://h:port/db", "is not a database URL"),
    ],
)
def test_unsupported_stores_are_refused_clearly(url, message):
    with pytest.raises(StoreError, match=message):
        resolve_url(url)


def test_a_missing_postgres_driver_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "psycopg" else real(name, *a))
    with pytest.raises(StoreError, match=r"pip install 'ragmeter\[postgres\]'"):
        resolve_url("postgresql://u@h/db")


def test_the_command_line_imports_sqlalchemy_only_when_a_store_is_used():
    code = "import sys, ragmeter.cli; print('sqlalchemy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_runs_commands_fail_in_one_line(tmp_path):
    store = str(tmp_path / "r.db")
    empty = runner.invoke(app, ["runs", "list", "--store", store])
    assert empty.exit_code == 0 and "No run is stored." in empty.output
    for args, message in [
        (["runs", "show", "abc", "--store", store], "no stored run has the id 'abc'"),
        (["runs", "delete", "abc", "--store", store, "--yes"], "no stored run has the id 'abc'"),
        (["runs", "import", str(tmp_path), "--store", store], "run.json not found"),
        (["runs", "list", "--store", "mysql://h/db"], "unsupported database 'mysql'"),
    ]:
        done = runner.invoke(app, args)
        assert done.exit_code == 2 and message in done.output and "Traceback" not in done.output, done.output


def test_delete_asks_and_keeps_the_run_without_a_yes(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "question": "q", "answer": "x y", "ground_truth": "x"}])
    assert run_eval(data, "-m", "token_f1", "-o", tmp_path / "run", "--no-progress", "--store", tmp_path / "r.db").exit_code == 0
    store = RunStore.open(str(tmp_path / "r.db"))
    (run_id,) = [r["id"] for r in store.runs()]
    refused = runner.invoke(app, ["runs", "delete", run_id, "--store", str(tmp_path / "r.db")], input="n\n")
    assert refused.exit_code == 2 and "nothing deleted" in refused.output and len(store.runs()) == 1
    agreed = runner.invoke(app, ["runs", "delete", run_id[:4], "--store", str(tmp_path / "r.db")], input="y\n")
    assert agreed.exit_code == 0 and store.runs() == []
    store.close()


def test_a_bad_store_fails_before_anything_is_scored(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "question": "q", "answer": "x", "ground_truth": "x"}])
    done = run_eval(data, "-m", "token_f1", "-o", tmp_path / "run", "--no-progress", "--store", "mysql://h/db")
    assert done.exit_code == 2 and "unsupported database" in done.output
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_traced_requests_are_exported_scored_and_stored(tmp_path):
    traces = tmp_path / "traces.jsonl"
    observe.configure(traces, otel=False)
    try:

        @ragmeter.trace
        def answer(question: str) -> dict:
            with ragmeter.span("retrieve", kind="RETRIEVER") as step:
                step.retrieved(["Runners have 2 vCPU."], ids=["runners.md"])
            observe.current_span().set(prompt_tokens=50, completion_tokens=5, cost_usd=0.001)
            return {"answer": "2 vCPU.", "sources": ["runners.md"]}

        answer("How many vCPU?")
        answer("And RAM?")
    finally:
        observe.configure(otel=False)
    exported = runner.invoke(app, ["traces", "export", str(traces), "-o", str(tmp_path / "samples.jsonl")])
    assert exported.exit_code == 0, exported.output
    rows = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert [r["user_input"] for r in rows] == ["How many vCPU?", "And RAM?"] and rows[0]["retrieved_context_ids"] == ["runners.md"]
    scored = run_eval(tmp_path / "samples.jsonl", "-m", "latency_ms,total_tokens,cost_usd", "-o", tmp_path / "run", "--no-progress")
    assert scored.exit_code == 0, scored.output
    result = ragmeter.Result.load(tmp_path / "run")
    assert result.aggregates["total_tokens"]["mean"] == 55 and result.aggregates["cost_usd"]["mean"] == pytest.approx(0.001)
    stored = runner.invoke(app, ["traces", "import", str(traces), "--store", str(tmp_path / "r.db")])
    assert stored.exit_code == 0 and "4 span(s) stored" in stored.output
    again = runner.invoke(app, ["traces", "import", str(traces), "--store", str(tmp_path / "r.db")])
    assert "0 span(s) stored, 4 were stored already" in again.output


def test_traces_and_transcripts_commands_name_the_bad_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": "t"}\n')
    done = runner.invoke(app, ["traces", "export", str(bad)])
    assert done.exit_code == 2 and "bad.jsonl, line 1: not a valid span: 'span_id' must be a string" in done.output
    bad.write_text('[{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "x", "content": "c"}]\n')
    done = runner.invoke(app, ["traces", "transcripts", str(bad)])
    assert done.exit_code == 2 and "bad.jsonl, line 1: messages[1].tool_call_id" in done.output
    assert runner.invoke(app, ["traces", "transcripts", str(bad), "--tools", ","]).exit_code == 2


def test_transcripts_become_a_samples_file(tmp_path):
    call = {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "vCPU"}'}}
    messages = [
        {"role": "user", "content": "How many vCPU?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "runners.md: 2 vCPU"},
        {"role": "assistant", "content": "2."},
    ]
    write_jsonl(tmp_path / "t.jsonl", [{"id": "chat-1", "messages": messages}])
    done = runner.invoke(app, ["traces", "transcripts", str(tmp_path / "t.jsonl"), "-o", str(tmp_path / "s.jsonl")])
    assert done.exit_code == 0, done.output
    (row,) = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert row["id"] == "chat-1#1" and row["retrieved_contexts"] == ["runners.md: 2 vCPU"] and row["response"] == "2."
    assert row["retrieved_context_ids"] == ["grep(pattern=vCPU)"]
