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
from fastapi.testclient import TestClient

import ragmeter
from ragmeter import observe
from ragmeter.cli import app
from ragmeter.dashboard.app import create_app
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
    (tmp_path / "notes.txt").write_text("not a database, given as --store by mistake (it was an 'unexpected error')\n")
    missing = runner.invoke(app, ["runs", "list", "--store", store])  # a misspelt path made an empty store there
    assert missing.exit_code == 2 and "no such store" in missing.output and not (tmp_path / "r.db").exists()
    RunStore.open(store).close()
    empty = runner.invoke(app, ["runs", "list", "--store", store])
    assert empty.exit_code == 0 and "No run is stored." in empty.output
    for args, message in [
        (["runs", "show", "abc", "--store", store], "no stored run has the id 'abc'"),
        (["runs", "delete", "abc", "--store", store, "--yes"], "no stored run has the id 'abc'"),
        (["runs", "import", str(tmp_path), "--store", store], "run.json not found"),
        (["runs", "list", "--store", "mysql://h/db"], "unsupported database 'mysql'"),
        (
            ["runs", "list", "--store", str(tmp_path / "notes.txt")],
            f"cannot open the store {tmp_path / 'notes.txt'}: file is not a database",
        ),
        (
            ["runs", "list", "--store", str(tmp_path)],
            f"--store {tmp_path} is a folder; give a SQLite file",
        ),  # 'unable to open database file'
    ]:
        done = runner.invoke(app, args)
        assert done.exit_code == 2 and message in done.output and "Traceback" not in done.output, done.output


def test_import_names_a_damaged_run_and_stores_the_others_without_any_of_the_damaged_one(tmp_path):
    """One damaged directory used to end the import there; its damage past the first line
    surfaces while it is being stored, and nothing of it may stay in the store."""
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": i, "question": "q", "answer": "x y", "ground_truth": "x"} for i in "abc"])
    good = tmp_path / "good"
    assert run_eval(data, "-m", "token_f1", "-o", good, "--no-progress").exit_code == 0
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "run.json").write_text((good / "run.json").read_text())
    lines = (good / "results.jsonl").read_text().splitlines()
    (damaged / "results.jsonl").write_text("\n".join([*lines[:2], lines[2][:40]]) + "\n")
    store = str(tmp_path / "r.db")
    done = runner.invoke(app, ["runs", "import", str(damaged), str(good), "--store", store])
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert f"skipped {damaged}: {damaged / 'results.jsonl'}, line 3: invalid JSON" in done.output
    assert "Stored run" in done.output and done.output.strip().endswith("1 of 2 run directories could not be read; the others are stored")
    opened = RunStore.open(store)
    assert [(r["source"], r["n_samples"]) for r in opened.runs()] == [(str(good), 3)]
    opened.close()


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


def test_a_blank_or_overlong_run_id_names_no_run(tmp_path):
    """Every id starts with "": `runs delete "" --yes` deleted the store's only run. An id of
    100,000 characters was SQLite's "pattern too complex", with the SQL, as an unexpected error."""
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "question": "q", "answer": "x y", "ground_truth": "x"}])
    assert run_eval(data, "-m", "token_f1", "-o", tmp_path / "run", "--no-progress", "--store", tmp_path / "r.db").exit_code == 0
    store = str(tmp_path / "r.db")
    for run_id, message in [
        ("", "give a run id, or its first characters"),
        ("  ", "give a run id"),
        ("a" * 100_000, "no stored run has the id 'aaaaaa"),
    ]:
        for command in (["runs", "delete", run_id, "--yes"], ["runs", "show", run_id]):
            done = runner.invoke(app, [*command, "--store", store])
            assert done.exit_code == 2 and message in done.output and "SELECT" not in done.output, done.output
            assert len(done.output) < 300
    opened = RunStore.open(store)
    assert len(opened.runs()) == 1
    assert TestClient(create_app(opened)).get("/runs/" + "a" * 60_000).status_code == 404
    opened.close()


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
    stored = runner.invoke(app, ["traces", "import", str(traces), "--store", str(tmp_path / "r.db"), "--no-embed"])
    assert stored.exit_code == 0 and "4 span(s) stored" in stored.output
    again = runner.invoke(app, ["traces", "import", str(traces), "--store", str(tmp_path / "r.db"), "--no-embed"])
    assert "0 span(s) stored, 4 were stored already" in again.output


def _day_traces(path):
    """Three requests (a root and a retrieval each), on 1, 2 and 3 November (UTC); the 2nd failed."""
    sink = observe.JsonlSink(path)
    for day in (1, 2, 3):
        trace_id = f"{day:032x}"
        root = observe.SpanRecord(trace_id=trace_id, span_id=f"{day:016x}", name="rag", started_at=f"2026-11-0{day}T10:00:00.000+00:00", question=f"q{day}?", response="a")  # fmt: skip
        root.error = "TimeoutError: slow" if day == 2 else None
        child = observe.SpanRecord(trace_id=trace_id, span_id="f" * 16, parent_id=root.span_id, name="retrieve", started_at=root.started_at)  # fmt: skip
        child.contexts = [observe.RetrievedContext(f"context {day}", f"d{day}")]
        sink(root)
        sink(child)
    sink.close()
    return path


def _questions(path):
    return [json.loads(line)["user_input"] for line in path.read_text().splitlines()]


def test_traces_export_reads_files_or_a_store_in_the_same_time_window(tmp_path):
    traces = _day_traces(tmp_path / "traces.jsonl")
    store = str(tmp_path / "r.db")
    assert runner.invoke(app, ["traces", "import", str(traces), "--store", store, "--no-embed"]).exit_code == 0
    for window, expected in [
        ([], ["q1?", "q3?"]),
        (["--since", "2026-11-02"], ["q3?"]),
        (["--until", "2026-11-03T10:00:00Z"], ["q1?"]),  # --until is exclusive
        (["--since", "2026-11-01T11:00:00+01:00", "--include-errors"], ["q1?", "q2?", "q3?"]),  # 10:00 UTC is inside
        (["--since", "2026-11-02", "--until", "2026-11-03", "--include-errors"], ["q2?"]),
    ]:
        for source in ([str(traces)], ["--store", store]):
            out = tmp_path / "samples.jsonl"
            done = runner.invoke(app, ["traces", "export", *source, *window, "-o", str(out)])
            assert done.exit_code == 0 and _questions(out) == expected, (source, window, done.output)
            out.unlink()
    assert runner.invoke(app, ["traces", "export", "--store", store, "-o", str(tmp_path / "s.jsonl")]).exit_code == 0
    rows = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert rows[0]["retrieved_contexts"] == ["context 1"] and rows[0]["metadata"]["trace_id"] == f"{1:032x}"
    for args, message in [
        ([], "give trace files or --store, one of the two"),
        ([str(traces), "--store", store], "give trace files or --store, one of the two"),
        (["--store", store, "--since", "yesterday"], "--since: 'yesterday' is not an ISO 8601 date or time"),
        (["--store", store, "--since", "2030-01-01"], f"no traced request in {store} started at or after 2030-01-01: nothing to export"),
        ([str(traces), "--until", "2020-01-01"], f"no traced request in {traces} started before 2020-01-01: nothing to export"),
        (["--store", store, "--since", "2026-11-25", "--until", "2026-11-24"], "--since 2026-11-25 is not before --until 2026-11-24"),
    ]:
        failed = runner.invoke(app, ["traces", "export", *args, "-o", str(tmp_path / "x.jsonl")])
        assert failed.exit_code == 2 and message in failed.output and "Traceback" not in failed.output, failed.output


def test_eval_keeps_its_tags_with_the_stored_run(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "question": "q", "answer": "x", "ground_truth": "x"}])
    store = str(tmp_path / "r.db")
    done = run_eval(data, "-m", "token_f1", "-o", tmp_path / "run", "--no-progress", "--store", store, "--tag", "nightly", "-t", "model=m1")
    assert done.exit_code == 0, done.output
    untagged = run_eval(data, "-m", "exact_match", "-o", tmp_path / "run2", "--no-progress", "--store", store)
    assert untagged.exit_code == 0, untagged.output
    opened = RunStore.open(store)
    (tagged,) = opened.runs(tag="nightly")
    assert tagged["tags"] == ["nightly", "model=m1"] and len(opened.runs()) == 2
    opened.close()
    listed = runner.invoke(app, ["runs", "list", "--store", store, "--tag", "model=m1"])
    assert "1 stored run(s)" in listed.output and "nightly," in listed.output and "model=m1" in listed.output
    shown = runner.invoke(app, ["runs", "show", tagged["id"], "--store", store])
    assert "tags: nightly, model=m1" in shown.output
    refused = run_eval(data, "-m", "token_f1", "-o", tmp_path / "run3", "--no-progress", "--tag", "nightly")
    assert refused.exit_code == 2 and "--tag labels the run in a store: give --store too" in refused.output
    assert not (tmp_path / "run3").exists()


def test_traces_and_transcripts_commands_name_the_bad_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": "t"}\n')
    done = runner.invoke(app, ["traces", "export", str(bad)])
    assert done.exit_code == 2 and "bad.jsonl, line 1: not a valid span: 'span_id' must be a string" in done.output
    bad.write_text('[{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "x", "content": "c"}]\n')
    done = runner.invoke(app, ["traces", "transcripts", str(bad)])
    assert done.exit_code == 2 and "bad.jsonl, line 1: messages[1].tool_call_id" in done.output
    assert runner.invoke(app, ["traces", "transcripts", str(bad), "--tools", ","]).exit_code == 2


def test_trace_lines_that_are_no_span_are_named_and_skipped(tmp_path):
    """A kill leaves the trace file's last line short; an application started again appends
    after it. Export and import refused the whole file at the first such line (exit 2, nothing
    exported or stored): each is now named, with the count, and the rest is read."""
    traces = _day_traces(tmp_path / "traces.jsonl")
    lines = traces.read_bytes().splitlines(keepends=True)
    later = observe.SpanRecord(trace_id="e" * 32, span_id="e" * 16, name="rag", started_at="2026-11-04T10:00:00.000+00:00", question="café?")  # fmt: skip
    later_line = json.dumps(later.to_dict(), ensure_ascii=False).encode("utf-8")
    torn = later_line[: later_line.index("é".encode()) + 1]  # cut inside the é: not even UTF-8
    wrong_types = json.dumps({**later.to_dict(), "span_id": "d" * 16, "attributes": ["not", "an", "object"]}).encode()
    # line 3: the first request's last span torn, then the restarted application's next line on it
    traces.write_bytes(b"".join([*lines[:2], lines[2][:40], *lines[2:], wrong_types + b"\n", torn]))
    out = tmp_path / "samples.jsonl"
    exported = runner.invoke(app, ["traces", "export", str(traces), "-o", str(out)])
    assert exported.exit_code == 0, exported.output
    assert _questions(out) == ["q1?", "q3?"]
    for done in (exported, runner.invoke(app, ["traces", "import", str(traces), "--store", str(tmp_path / "r.db"), "--no-embed"])):
        assert "3 line(s) skipped, not a valid span:" in done.output, done.output
        assert f"{traces}, line 3: invalid JSON: " in done.output
        assert f"{traces}, line 7: not a valid span: 'attributes' must be an object" in done.output
        assert f"{traces}, line 8: invalid UTF-8 (byte 0xc3 at column {len(torn)})" in done.output
        assert "Traceback" not in done.output and "unexpected" not in done.output
    assert "traces.jsonl: 5 span(s) stored" in done.output and done.exit_code == 0
    opened = RunStore.open(str(tmp_path / "r.db"))
    assert opened.count("spans") == 5
    opened.close()


def test_a_trace_file_without_one_valid_span_is_an_error(tmp_path):
    """Skipping bad lines must not turn a file of nothing but bad lines into a silent success."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": "t", "span_id": "s", "name": "n", "started_at": "2026-11-01", "kind": 3}\n{"trace_id": "t", "sp')
    exported = runner.invoke(app, ["traces", "export", str(bad), "-o", str(tmp_path / "s.jsonl")])
    stored = runner.invoke(app, ["traces", "import", str(bad), "--store", str(tmp_path / "r.db"), "--no-embed"])
    for done, what in ((exported, "nothing to export"), (stored, "nothing stored")):
        assert done.exit_code == 2, done.output
        assert f"error: no line of {bad} is a valid span: {what}" in done.output
        assert f"{bad}, line 1: not a valid span: 'kind' must be a string" in done.output
        assert f"{bad}, line 2: invalid JSON: Unterminated string" in done.output
    assert not (tmp_path / "s.jsonl").exists()


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


def test_a_span_whose_start_is_no_date_or_time_is_named_and_skipped(tmp_path):
    """A span whose started_at was not a date or time was stored, and a later --since or --until
    over it failed on the whole trace; it is now a bad line like the others."""
    good = observe.SpanRecord(trace_id="a" * 32, span_id="a" * 16, name="rag", started_at="2026-11-04T10:00:00Z", question="q?")
    lines = [good.to_dict()]
    for number, started in enumerate(("yesterday", "2026-13-01", "9999-12-31T23:59:59-01:00"), start=2):
        lines.append({**good.to_dict(), "trace_id": str(number) * 32, "span_id": str(number) * 16, "started_at": started})
    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    done = runner.invoke(app, ["traces", "import", str(traces), "--store", str(tmp_path / "r.db"), "--no-embed"])
    assert done.exit_code == 0 and "Traceback" not in done.output, done.output
    assert "3 line(s) skipped, not a valid span:" in done.output
    for number, started in enumerate(("yesterday", "2026-13-01", "9999-12-31T23:59:59-01:00"), start=2):
        assert f"{traces}, line {number}: not a valid span: 'started_at': '{started}' is not an ISO 8601 date or time" in done.output
    assert "traces.jsonl: 1 span(s) stored" in done.output
    exported = runner.invoke(app, ["traces", "export", str(traces), "-o", str(tmp_path / "s.jsonl"), "--since", "2026-11-01"])
    assert exported.exit_code == 0 and "3 line(s) skipped" in exported.output, exported.output
    assert _questions(tmp_path / "s.jsonl") == ["q?"]


def _import_one_good_and_four_bad(tmp_path, lines):
    """``traces import`` of a file of ``lines`` of which one is a valid span and four are not:
    the file, and the command's result (checked: exit 0, the four named and skipped, one stored)."""
    traces = tmp_path / "traces.jsonl"
    traces.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = runner.invoke(app, ["traces", "import", str(traces), "--store", str(tmp_path / "r.db"), "--no-embed"])
    assert done.exit_code == 0 and "unexpected" not in done.output, done.output
    assert "4 line(s) skipped, not a valid span:" in done.output and "traces.jsonl: 1 span(s) stored" in done.output
    return traces, done


def test_a_span_with_a_count_or_time_no_store_column_holds_is_named_and_skipped(tmp_path):
    """A 29-digit token count made traces import fail as an 'unexpected error: OverflowError' with
    nothing of the file stored; NaN and Infinity were read and exported as null without a word."""
    good = observe.SpanRecord(trace_id="a" * 32, span_id="a" * 16, name="rag", started_at="2026-11-04T10:00:00Z", question="q?")
    bad = {"prompt_tokens": 10**28, "completion_tokens": 2.5, "latency_ms": float("nan"), "cost_usd": float("inf")}
    lines = [json.dumps(good.to_dict())]
    for number, (key, value) in enumerate(bad.items(), start=2):
        lines.append(json.dumps({**good.to_dict(), "trace_id": str(number) * 32, "span_id": str(number) * 16, key: value}))
    traces, done = _import_one_good_and_four_bad(tmp_path, lines)
    assert f"{traces}, line 2: not a valid span: 'prompt_tokens' must be a whole number from 0 to 2147483647, got 1" in done.output
    assert f"{traces}, line 3: not a valid span: 'completion_tokens' must be a whole number from 0 to 2147483647, got 2.5" in done.output
    assert f"{traces}, line 4: not a valid span: 'latency_ms' must be a number, got nan" in done.output
    assert f"{traces}, line 5: not a valid span: 'cost_usd' must be a number, got inf" in done.output


def test_a_span_with_a_context_score_id_or_kind_no_span_has_is_named_and_skipped(tmp_path):
    """A context scored "high" was imported, and the dashboard's trace page then failed on it;
    a kind outside the documented list was stored as any text."""
    good = observe.SpanRecord(trace_id="a" * 32, span_id="a" * 16, name="rag", started_at="2026-11-04T10:00:00Z", question="q?")
    bad = {
        "contexts": [{"text": "c", "score": 0.5}, {"text": "d", "score": "high"}],
        "kind": "SEARCH",
        "attributes": {"contexts": [{"text": "c", "id": 7}]},  # an attribute is free: read as it is
    }
    lines = [
        json.dumps({**good.to_dict(), "contexts": [{"text": "c", "id": 7}]}),
        json.dumps({**good.to_dict(), "contexts": [{"text": "c", "rank": 1}]}),
    ]
    for number, (key, value) in enumerate(bad.items(), start=3):
        lines.append(json.dumps({**good.to_dict(), "trace_id": str(number) * 32, key: value}))
    traces, done = _import_one_good_and_four_bad(tmp_path, lines)
    assert f"{traces}, line 1: not a valid span: 'contexts' item 1: 'id' must be a string, got 7" in done.output
    assert f"{traces}, line 2: not a valid span: 'contexts' item 1: unknown key(s) 'rank'" in done.output
    assert f"{traces}, line 3: not a valid span: 'contexts' item 2: 'score' must be a number, got 'high'" in done.output
    assert (
        f"{traces}, line 4: not a valid span: 'kind' must be one of CHAIN, RETRIEVER, LLM, TOOL, EMBEDDING, RERANKER, AGENT, GUARDRAIL, EVALUATOR, PROMPT, UNKNOWN, "
        "got 'SEARCH'" in done.output
    )


def test_a_span_started_at_another_offset_is_stored_in_utc_so_since_and_until_compare_times(tmp_path):
    """The store compares started_at as text: "2026-11-04T10:00:00+05:00" (05:00 UTC) kept as
    written fell after --since 06:00 UTC, and "2026-11-04T04:00:00-03:00" (07:00) before it."""
    spans = [
        observe.SpanRecord(trace_id=f"{n}" * 32, span_id=f"{n}" * 16, name="rag", started_at=started, question=question)
        for n, (started, question) in enumerate((("2026-11-04T10:00:00+05:00", "east?"), ("2026-11-04T04:00:00-03:00", "west?")), start=1)
    ]
    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(json.dumps(span.to_dict()) + "\n" for span in spans), encoding="utf-8")
    store = str(tmp_path / "r.db")
    assert runner.invoke(app, ["traces", "import", str(traces), "--store", store, "--no-embed"]).exit_code == 0
    since = runner.invoke(app, ["traces", "export", "--store", store, "-o", str(tmp_path / "s.jsonl"), "--since", "2026-11-04T06:00:00Z"])
    assert since.exit_code == 0, since.output
    assert _questions(tmp_path / "s.jsonl") == ["west?"]
    (west,) = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert west["metadata"]["started_at"] == "2026-11-04T07:00:00.000+00:00"
