"""Hostile input to ``ragmeter traces``, ``monitor`` and ``runs``: a stored span that is no valid
span, written by an application's tracer, must not stop the monitor or an export of the store."""

from __future__ import annotations

import codecs
import json
import sqlite3

import pytest
from cli_helpers import runner
from sqlalchemy.exc import OperationalError
from test_monitor import monitor, traces

from ragmeter.cli import app, drift
from ragmeter.judges import Judges
from ragmeter.monitor import MonitorSettings, online, run_monitor
from ragmeter.monitor.ledger import decision_counts, record
from ragmeter.observe import RetrievedContext, SpanRecord, TraceFileError, TranscriptError, read_spans, read_transcripts
from ragmeter.observe.record import STORED_LENGTHS
from ragmeter.run.engine import resolve_metrics
from ragmeter.run.sync import Terminated
from ragmeter.store import RunStore
from ragmeter.store.schema import spans
from ragmeter.store.store import BATCH

#: A request whose tracer set a token count no span holds (``span.set(prompt_tokens=12.5)``).
BAD = SpanRecord(trace_id="b" * 32, span_id="c" * 16, name="rag", started_at="2026-11-01T00:00:30+00:00", question="q", response="a")
BAD.prompt_tokens = 12.5  # type: ignore[assignment]
WHY = f"its stored span {'c' * 16} is not valid: 'prompt_tokens' must be a whole number"


def test_the_monitor_decides_a_trace_with_an_invalid_stored_span_unscorable_and_scores_the_others(tmp_path):
    store = RunStore.open(str(tmp_path / "runs.db"))
    try:
        store.add_spans([*traces(3), BAD])
        progress = monitor(store, share=1.0)
        assert (progress.scored, progress.unscorable) == (3, 1)
        assert [reason for reason in progress.reasons if reason.startswith(WHY)], progress.reasons
        assert decision_counts(store) == {"scored": 3, "unscorable": 1}
    finally:
        store.close()


def test_traces_export_of_a_store_leaves_out_a_trace_with_an_invalid_span_and_names_it(tmp_path):
    store = RunStore.open(str(tmp_path / "runs.db"))
    try:
        store.add_spans([*traces(2), BAD])
    finally:
        store.close()
    out = tmp_path / "samples.jsonl"
    done = runner.invoke(app, ["traces", "export", "--store", str(tmp_path / "runs.db"), "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert f"1 trace(s) left out, e.g. {'b' * 32}: {WHY}" in " ".join(done.output.split())
    assert [json.loads(line)["user_input"] for line in out.read_text().splitlines()] == ["q0?", "q1?"]


def test_traces_export_of_a_store_names_a_trace_with_a_stored_context_score_that_is_no_number(tmp_path):
    """A span with a context scored "high" (stored by an earlier version, or another tool) was
    exported and shown as it was; the dashboard's trace page failed on it."""
    root, child = traces(1)
    child.contexts = [RetrievedContext("c", "d1", "high")]  # type: ignore[arg-type]
    store = RunStore.open(str(tmp_path / "runs.db"))
    try:
        store.add_spans([*traces(2, start=1), root, child])
    finally:
        store.close()
    done = runner.invoke(app, ["traces", "export", "--store", str(tmp_path / "runs.db"), "-o", str(tmp_path / "s.jsonl")])
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())
    assert f"1 trace(s) left out, e.g. {root.trace_id}: its stored span {child.span_id} is not valid: 'contexts' item 1:" in said
    assert "'score' must be a number, got 'high'" in said


@pytest.mark.parametrize(("stop", "code", "said"), [(KeyboardInterrupt, 130, "interrupted"), (Terminated, 143, "stopped by SIGTERM")])
def test_a_stopped_monitor_says_what_it_stored_and_how_to_resume(tmp_path, monkeypatch, stop, code, said):
    store = RunStore.open(str(tmp_path / "runs.db"))
    try:
        store.add_spans(traces(3))
    finally:
        store.close()

    def interrupt(seconds):
        raise stop

    monkeypatch.setattr(online.time, "sleep", interrupt)  # Ctrl-C or SIGTERM while it waits for new traces
    done = runner.invoke(app, ["monitor", "-m", "latency_ms", "--store", str(tmp_path / "runs.db"), "--share", "1", "--no-embed"])
    assert done.exit_code == code, done.output
    assert f"{said}: this run stored 3 trace(s) scored, 0 not sampled and 0 unscorable" in done.output
    assert "run the same command again to resume" in done.output and "Traceback" not in done.output


def test_a_malformed_transcript_is_named_and_skipped_and_the_others_become_samples(tmp_path):
    answered = [{"role": "user", "content": "q?"}, {"role": "assistant", "content": "a"}]
    path = tmp_path / "chats.jsonl"
    path.write_text(
        json.dumps(answered) + "\n" + json.dumps([{"role": "user", "content": 5}]) + "\n{broken\n" + json.dumps(answered) + "\n"
    )
    out = tmp_path / "samples.jsonl"
    done = runner.invoke(app, ["traces", "transcripts", str(path), "-o", str(out)])
    assert done.exit_code == 0, done.output
    assert "2 transcript(s) skipped" in done.output and "chats.jsonl, line 2: messages[0].content: expected text" in done.output
    assert "chats.jsonl, line 3: invalid JSON" in done.output
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [f"{path}, line 1#1", f"{path}, line 4#1"]
    path.write_text("{broken\n")
    done = runner.invoke(app, ["traces", "transcripts", str(path), "-o", str(out)])
    assert done.exit_code == 2 and "no well-formed transcript of" in done.output, done.output


def test_a_transcript_file_that_is_not_utf8_is_named_with_its_line_and_encoding_and_a_utf16_json_is_read(tmp_path):
    answered = [{"role": "user", "content": "café?"}, {"role": "assistant", "content": "oui"}]
    legacy = tmp_path / "chats.jsonl"
    legacy.write_bytes(json.dumps(answered).encode() + b"\n" + json.dumps(answered, ensure_ascii=False).encode("cp1252") + b"\n")
    with pytest.raises(TranscriptError, match=r"chats\.jsonl, line 2: invalid UTF-8 \(byte 0xe9 at column .*Windows-1252"):
        read_transcripts(legacy)
    wide = tmp_path / "chat.json"
    wide.write_bytes(json.dumps(answered, ensure_ascii=False).encode("utf-16"))  # with its byte-order mark, as Windows writes it
    assert [s.user_input for s in read_transcripts(wide)] == ["café?"]


def test_drift_kb_never_writes_its_findings_over_a_document_of_the_knowledge_base(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("doc a")
    (kb / "b.md").write_text("doc b")
    baseline = ["drift", "kb", str(kb), "--baseline", str(tmp_path / "base.json")]
    assert runner.invoke(app, baseline).exit_code == 0
    done = runner.invoke(app, [*baseline, "--json", str(kb / "a.md")])
    assert done.exit_code == 2 and "is a document of the knowledge base" in done.output, done.output
    assert (kb / "a.md").read_text() == "doc a"
    for _ in range(2):  # a report kept inside the knowledge base is written again, and never counted
        done = runner.invoke(app, [*baseline, "--json", str(kb / "report.json")])
        assert done.exit_code == 0 and "0 added, 0 removed, 0 edited, 2 unchanged" in done.output, done.output


def test_traces_commands_never_write_their_samples_over_an_input_file(tmp_path):
    spans = tmp_path / "traces.jsonl"
    spans.write_text(json.dumps(traces(1)[0].to_dict()) + "\n")
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps([{"role": "user", "content": "q?"}, {"role": "assistant", "content": "a"}]) + "\n")
    for command, given in (("export", spans), ("transcripts", chats)):
        kept = given.read_text()
        done = runner.invoke(app, ["traces", command, str(given), "-o", str(tmp_path / "." / given.name)])
        assert done.exit_code == 2 and "the samples would replace it" in done.output, done.output
        assert given.read_text() == kept


def test_the_monitor_waits_out_a_store_locked_by_another_writer_and_scores_everything(tmp_path, monkeypatch, caplog):
    store = RunStore.open(str(tmp_path / "runs.db"))
    writes = []

    def locked_once(*args, **kwargs):  # another writer held the SQLite file past the busy timeout, once
        writes.append(args)
        if len(writes) == 1:
            raise OperationalError("INSERT INTO monitor_seen ...", {}, sqlite3.OperationalError("database is locked"))
        return record(*args, **kwargs)

    monkeypatch.setattr(online, "record", locked_once)
    try:
        store.add_spans(traces(5))
        progress = run_monitor(store, resolve_metrics(["latency_ms"]), Judges(), MonitorSettings(share=1.0), interval=0, once=True)
        assert progress.scored == 5 and decision_counts(store) == {"scored": 5}
        assert "the store is locked by another writer (database is locked)" in caplog.text
    finally:
        store.close()


def test_the_lengths_checked_before_storing_a_span_are_the_store_s_columns():
    assert {key: spans.c[key].type.length for key in STORED_LENGTHS} == STORED_LENGTHS


def test_a_span_whose_id_a_postgresql_column_cannot_hold_is_named_and_skipped_before_storing(tmp_path):
    """PostgreSQL refused an id longer than its column, and with it the whole import: 'unexpected
    error: DataError' with every parameter of the batch, nothing of the file stored. A UUID's 36
    characters fit since schema 0005 (ids up to 64)."""
    good, uuid = traces(1)[0].to_dict(), "123e4567-e89b-12d3-a456-426614174000"
    path = tmp_path / "traces.jsonl"
    lines = [{**good, "trace_id": "t" * 65}, {**good, "trace_id": uuid}, {**good, "parent_id": "p" * 65}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    issues: list = []
    kept = list(read_spans(path, issues, to_store=True))
    assert [span.trace_id for span in kept] == [uuid]
    said = [str(issue) for issue in issues]
    assert "line 1" in said[0] and "'trace_id'" in said[0] and "is 65 characters; the store holds 64" in said[0]
    assert "line 3" in said[1] and "'parent_id'" in said[1] and "is 65 characters; the store holds 64" in said[1]
    # SQLite holds an id of any length: the same file is stored whole there.
    done = runner.invoke(app, ["traces", "import", str(path), "--store", str(tmp_path / "r.db"), "--no-embed"])
    assert done.exit_code == 0 and "skipped" not in done.output and "traces.jsonl: 3 span(s) stored" in done.output
    exported = runner.invoke(app, ["traces", "export", str(path), "-o", str(tmp_path / "s.jsonl")])
    assert exported.exit_code == 0 and "skipped" not in exported.output  # no store: any id is a sample's id


def test_the_store_names_and_skips_a_span_whose_id_its_columns_cannot_hold_not_the_whole_batch(tmp_path, caplog):
    """Only ``traces import`` checked the lengths: the application's store sink (or a library
    user's ``add_spans``) gave PostgreSQL a 65-character id, and it refused the whole batch."""
    spans = traces(3)
    spans[2].trace_id = spans[3].trace_id = "t" * 65  # the second request's two spans
    store = RunStore.open(str(tmp_path / "runs.db"))
    store.checks_lengths = True  # as on PostgreSQL (SQLite holds any length: tests/integration/test_store.py)
    try:
        with caplog.at_level("WARNING", logger="ragmeter.store"):
            assert store.add_spans(spans) == (4, 0)
        assert {span.trace_id for span in store.trace_spans()} == {spans[0].trace_id, spans[4].trace_id}
    finally:
        store.close()
    said = " ".join(caplog.text.split())
    assert f"2 span(s) not stored, an id or the kind too long for the store; e.g. span '{spans[2].span_id}' of trace 'tttt" in said
    assert "'trace_id' 'tttt" in said and "is 65 characters; the store holds 64" in said


def test_a_nul_character_in_a_span_is_stored_as_the_replacement_character(tmp_path):
    """PostgreSQL's text cannot hold NUL: one span with one refused the whole batch, a file's
    import ('unexpected error: DataError') or 500 requests of the application's store sink."""
    span = traces(1)[0]
    span.question, span.attributes = "q\x00?", {"k\x00": ["a\x00b"]}
    store = RunStore.open(str(tmp_path / "runs.db"))
    try:
        assert store.add_spans([span]) == (1, 0)
        (stored,) = store.trace_spans()
        assert (stored.question, stored.attributes) == ("q\ufffd?", {"k\ufffd": ["a\ufffdb"]})
    finally:
        store.close()


def test_a_span_given_twice_is_counted_once_not_its_tokens_cost_and_contexts_twice(tmp_path):
    root, child = traces(1)
    root.cost_usd = 0.5
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(root.to_dict()) + "\n" + json.dumps(child.to_dict()) + "\n")
    out = tmp_path / "samples.jsonl"
    done = runner.invoke(app, ["traces", "export", str(path), str(path), "-o", str(out)])
    assert done.exit_code == 0 and "2 span(s) repeated" in done.output, done.output
    (sample,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert sample["retrieved_contexts"] == ["context 0"]
    assert (sample["metadata"]["tokens"], sample["metadata"]["cost_usd"]) == ({"prompt": 100, "completion": 5}, 0.5)


def test_an_interrupted_import_keeps_the_batches_it_stored(tmp_path):
    """One transaction for the whole file lost every span on Ctrl-C, and held the SQLite store's
    lock for the whole import: the application's store sink dropped its batches meanwhile."""

    def read_then_interrupted():
        yield from traces(BATCH)  # two spans per request: two batches
        raise KeyboardInterrupt

    store = RunStore.open(str(tmp_path / "runs.db"))
    try:
        with pytest.raises(KeyboardInterrupt):
            store.add_spans(read_then_interrupted())
        assert store.count("spans") == 2 * BATCH
        assert store.add_spans(traces(BATCH + 1)) == (2, 2 * BATCH)
    finally:
        store.close()


def test_a_database_error_is_said_in_the_database_s_words_without_the_statement_and_its_rows(tmp_path, monkeypatch):
    def failing(*args, **kwargs):
        raise OperationalError(
            "INSERT INTO spans (trace_id) VALUES (?)", [("secret question",)] * 1000, sqlite3.OperationalError("disk I/O error")
        )

    monkeypatch.setattr(RunStore, "trace_spans", failing)
    RunStore.open(str(tmp_path / "runs.db")).close()
    done = runner.invoke(app, ["traces", "export", "--store", str(tmp_path / "runs.db"), "-o", str(tmp_path / "s.jsonl")])
    assert done.exit_code == 2 and "error: unexpected error: OperationalError: disk I/O error (run `ragmeter --debug" in done.output
    assert "INSERT" not in done.output and "secret question" not in done.output


def test_traces_commands_make_the_folder_of_their_out_file(tmp_path):
    spans = tmp_path / "traces.jsonl"
    spans.write_text("".join(json.dumps(span.to_dict()) + "\n" for span in traces(1)))
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps([{"role": "user", "content": "q?"}, {"role": "assistant", "content": "a"}]) + "\n")
    for command, given in (("export", spans), ("transcripts", chats)):
        out = tmp_path / command / "new" / "samples.jsonl"
        done = runner.invoke(app, ["traces", command, str(given), "-o", str(out)])
        assert done.exit_code == 0 and out.is_file(), done.output


def test_traces_import_names_a_file_it_cannot_read_and_stores_the_others(tmp_path):
    spans = tmp_path / "traces.jsonl"
    spans.write_text("".join(json.dumps(span.to_dict()) + "\n" for span in traces(1)))
    folder = tmp_path / "folder"
    folder.mkdir()
    done = runner.invoke(app, ["traces", "import", str(folder), str(spans), "--store", str(tmp_path / "r.db"), "--no-embed"])
    assert done.exit_code == 2 and f"skipped: {folder}: cannot read: Is a directory" in done.output, done.output
    assert (
        "traces.jsonl: 2 span(s) stored" in done.output and "1 of 2 trace file(s) could not be read; the others are stored" in done.output
    )


def test_a_trace_file_with_a_byte_order_mark_is_read_or_named_with_its_encoding(tmp_path):
    text = "".join(json.dumps(span.to_dict()) + "\n" for span in traces(1))
    path = tmp_path / "traces.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + text.encode())  # Notepad's UTF-8: line 1, the request itself, was skipped
    assert [span.question for span in read_spans(path)] == ["q0?", None]
    path.write_bytes(text.encode("utf-16"))  # PowerShell's: every line was skipped as not UTF-8, or not JSON
    with pytest.raises(TraceFileError, match=r"traces\.jsonl: the file is in UTF-16: convert it to UTF-8, e\.g\. iconv -f UTF-16"):
        list(read_spans(path, []))


def test_drift_checks_its_json_file_before_the_work_and_never_loses_a_change_with_the_baseline(tmp_path, monkeypatch):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("doc a")
    base = ["drift", "kb", str(kb), "--baseline", str(tmp_path / "base.json")]
    assert runner.invoke(app, base).exit_code == 0
    (kb / "b.md").write_text("doc b")
    for json_out, said in [
        (tmp_path, "is a folder; give the name of a file to write"),
        (kb / "a.md" / "x.json", "is a file, not a directory"),
    ]:
        done = runner.invoke(app, [*base, "--update", "--json", str(json_out)])
        assert done.exit_code == 2 and said in done.output, done.output
    done = runner.invoke(app, [*base, "--json", str(tmp_path / "new" / "drift.json")])  # its folder is made
    assert done.exit_code == 1 and json.loads((tmp_path / "new" / "drift.json").read_text())["added"] == ["b.md"]

    def full(path, document):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(drift, "write_json", full)
    done = runner.invoke(app, [*base, "--update", "--json", str(tmp_path / "drift.json")])
    assert done.exit_code == 2 and "drift.json: cannot write: No space left on device" in done.output
    monkeypatch.undo()
    done = runner.invoke(app, base)  # the baseline did not move on: the change is still found
    assert done.exit_code == 1 and "1 added" in done.output, done.output


def test_traces_wait_while_the_judge_fails_on_all_of_them_and_are_scored_when_it_answers(tmp_path):
    """A judge endpoint that was down made every trace 'scored' with a failed, value-less score,
    never scored again: the outage's traffic was lost to the monitor, which said 'Done: 5 scored'."""
    from test_llm_double import ScriptedJudge

    from ragmeter.judges import BatchingEmbedder, JudgeError

    class DownJudge(ScriptedJudge):
        async def verdicts(self, task, shared, items, lang):
            raise JudgeError("the judge endpoint failed after 5 retries; last failure: connection error (ConnectError)")

    store = RunStore.open(str(tmp_path / "runs.db"))
    try:
        store.add_spans(traces(5))
        metrics = resolve_metrics(["context_relevance", "latency_ms"])
        down = Judges(embedder=BatchingEmbedder(), llm=DownJudge(rule=lambda task, shared, item: 0.9))
        progress = run_monitor(store, metrics, down, MonitorSettings(share=1.0), once=True)
        assert progress.scored == 0 and "connection error" in (progress.judge_failed or "") and decision_counts(store) == {}
        up = Judges(embedder=BatchingEmbedder(), llm=ScriptedJudge(rule=lambda task, shared, item: 0.9))
        again = run_monitor(store, metrics, up, MonitorSettings(share=1.0), once=True)
        assert again.scored == 5 and again.judge_failed is None and decision_counts(store) == {"scored": 5}
        # Fewer failing traces than an outage takes are decided as they are: one trace that fails
        # every time would stall the monitor for good if it were held back.
        store.add_spans([span for span in traces(7) if span.trace_id not in {s.trace_id for s in traces(5)}])
        few = run_monitor(store, metrics, down, MonitorSettings(share=1.0), once=True)
        assert few.scored == 2 and few.judge_failed is None and decision_counts(store) == {"scored": 7}
    finally:
        store.close()
