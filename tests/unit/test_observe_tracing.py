"""``@ragmeter.trace`` and ``ragmeter.span``: what they record, that the application's return
values and exceptions pass through untouched, sinks, and traces joined into samples."""

from __future__ import annotations

import asyncio
import json
import logging
import threading

import pytest
from cli_helpers import one_line_error, run_eval, runner

import ragmeter
from ragmeter import observe
from ragmeter.cli import app
from ragmeter.observe import MemorySink, SpanRecord, TraceFileError, read_spans, spans_to_samples
from ragmeter.observe.otel import openinference_attributes
from ragmeter.observe.sinks import JsonlSink


@pytest.fixture
def sink():
    memory = MemorySink()
    observe.configure(sinks=[memory], otel=False)
    yield memory
    observe.configure(otel=False)


def test_trace_records_question_contexts_response_and_usage(sink):
    @ragmeter.trace
    def answer(question: str, k: int = 2) -> str:
        with ragmeter.span("retrieve", kind="RETRIEVER") as step:
            step.retrieved(["Doc A text", "Doc B text"], ids=["a", 7], scores=[0.9, 0.4])
        observe.current_span().set(model="gpt-x", prompt_tokens=120, completion_tokens=30, cost_usd=0.002, user="u1")
        return "The answer."

    assert answer("What is A?") == "The answer."
    retrieve, root = sink
    assert root.name.endswith("answer") and root.parent_id is None and root.kind == "CHAIN"
    assert (root.question, root.response, root.model) == ("What is A?", "The answer.", "gpt-x")
    assert (root.prompt_tokens, root.completion_tokens, root.cost_usd) == (120, 30, 0.002)
    assert root.attributes == {"user": "u1"}
    assert retrieve.parent_id == root.span_id and retrieve.trace_id == root.trace_id and retrieve.kind == "RETRIEVER"
    assert [(c.text, c.id, c.score) for c in retrieve.contexts] == [("Doc A text", "a", 0.9), ("Doc B text", "7", 0.4)]
    assert root.latency_ms >= retrieve.latency_ms >= 0
    assert len(root.trace_id) == 32 and len(root.span_id) == 16


def test_a_score_that_is_no_number_is_recorded_as_unknown_never_raised_into_the_application(sink):
    with ragmeter.span("retrieve", kind="RETRIEVER") as step:
        step.retrieved(["a", "b", "c", "d"], scores=[None, float("nan"), "0.5", "high"])
    assert [c.score for c in sink[0].contexts] == [None, None, 0.5, None]


def test_a_value_a_field_cannot_hold_is_not_recorded_and_named_once_never_raised_into_the_application(sink, caplog):
    """``set`` recorded any value: a number as the model, ``"812"`` as a token count; the store
    kept them and the monitor and ``traces export`` then refused the whole trace."""

    @ragmeter.trace
    def answer(question):
        observe.current_span().set(model=4, prompt_tokens="812", completion_tokens=64.0, cost_usd="0.1", response=["a"], user="u")
        return "The answer."

    with caplog.at_level(logging.WARNING, logger="ragmeter.observe"):
        assert answer("q") == "The answer." and answer("q") == "The answer."
    first, second = sink
    assert (first.model, first.prompt_tokens, first.completion_tokens, first.cost_usd) == (None, None, 64, None)
    assert first.response == "The answer." and first.attributes == {"user": "u"}  # the returned text, not the list
    assert SpanRecord.from_dict(json.loads(json.dumps(second.to_dict()))) == second  # a store or an export reads it back
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 4, said  # once per field, not once per request
    assert "Span.set: 'prompt_tokens' takes a whole number from 0 to 2147483647, got '812'; it is not recorded" in said[1]
    assert "'model' takes a text (str), got 4" in said[0] and "'cost_usd' takes a finite number, got '0.1'" in said[2]


def test_contexts_that_are_no_texts_are_left_out_with_their_ids_and_scores_and_named(sink, caplog):
    class Document:
        page_content = "text"

    with caplog.at_level(logging.WARNING, logger="ragmeter.observe"), ragmeter.span("retrieve", kind="RETRIEVER") as step:
        step.retrieved(["a", Document(), "c"], ids=[1, 2, 3], scores=[0.9, 0.8, 0.7])
    with ragmeter.span("one text") as alone, ragmeter.span("by set") as by_set:
        alone.retrieved("one whole passage")
        by_set.set(contexts=("x", "y"))
    assert [(c.text, c.id, c.score) for c in sink[0].contexts] == [("a", "1", 0.9), ("c", "3", 0.7)]
    assert [c.text for c in sink[1].contexts] == ["x", "y"] and [c.text for c in sink[2].contexts] == ["one whole passage"]
    assert "Span.retrieved: text 1 is no text (str) but <" in caplog.text and "it is not recorded" in caplog.text


def test_return_values_pass_through_untouched(sink):
    returned = {"answer": "Yes.", "contexts": ["c1", "c2"], "extra": object()}

    @ragmeter.trace(name="rag", question="text")
    def pipeline(config, text):
        return returned

    assert pipeline({"k": 1}, text="Is it?") is returned
    (record,) = sink
    assert (record.name, record.question, record.response) == ("rag", "Is it?", "Yes.")
    assert [c.text for c in record.contexts] == ["c1", "c2"]


def test_async_functions_are_traced_and_concurrent_requests_stay_apart(sink):
    @ragmeter.trace
    async def answer(query: str) -> str:
        with ragmeter.span("retrieve", kind="RETRIEVER") as step:
            await asyncio.sleep(0.01)
            step.retrieved([f"context of {query}"])
        return f"answer to {query}"

    async def main():
        return await asyncio.gather(answer("one"), answer("two"))

    assert asyncio.run(main()) == ["answer to one", "answer to two"]
    assert asyncio.iscoroutinefunction(answer)
    roots = {r.question: r for r in sink if r.parent_id is None}
    children = [r for r in sink if r.parent_id is not None]
    assert set(roots) == {"one", "two"} and roots["one"].trace_id != roots["two"].trace_id
    for child in children:
        (parent,) = [r for r in roots.values() if r.span_id == child.parent_id]
        assert child.contexts[0].text == f"context of {parent.question}"


def test_an_exception_is_recorded_and_raised_unchanged(sink):
    error = KeyError("missing")

    @ragmeter.trace
    def broken(question):
        raise error

    with pytest.raises(KeyError) as raised:
        broken("q")
    assert raised.value is error
    assert sink[0].error == "KeyError: 'missing'"


def test_the_question_is_the_first_text_argument_when_no_argument_is_named_so(sink):
    @ragmeter.trace
    def ask(history, text):
        return None

    ask([1, 2], "hello")
    assert sink[0].question == "hello" and sink[0].response is None


def test_bad_use_fails_clearly():
    with pytest.raises(ValueError, match="no argument named 'query'"):
        ragmeter.trace(question="query")(lambda question: question)
    with pytest.raises(ValueError, match="kind must be one of"), ragmeter.span("x", kind="SEARCH"):
        pass
    with pytest.raises(ValueError, match="2 texts but 1 ids"), ragmeter.span("x") as step:
        step.retrieved(["a", "b"], ids=["1"])


def test_a_failing_sink_never_breaks_the_application(caplog):
    def broken_sink(record):
        raise OSError("disk full")

    kept = MemorySink()
    observe.configure(sinks=[broken_sink, kept], otel=False)
    before = observe.dropped_spans()
    try:
        traced = ragmeter.trace(lambda question: "fine")
        with caplog.at_level(logging.WARNING, logger="ragmeter.observe"):
            assert traced("a") == "fine" and traced("b") == "fine"
    finally:
        observe.configure(otel=False)
    assert observe.dropped_spans() - before == 2 and len(kept) == 2
    assert [r.getMessage() for r in caplog.records].count(
        "ragmeter tracing: a sink failed (OSError: disk full); its spans are dropped"
    ) == 1


def test_a_span_holding_an_object_that_cannot_be_copied_is_written_with_its_text(tmp_path):
    """Writing a span deep-copied its attributes: one holding a lock (a client, a connection)
    failed the sink and the whole span was dropped with a warning."""
    path = tmp_path / "t.jsonl"
    observe.configure(path=path, otel=False)
    before = observe.dropped_spans()
    try:
        with ragmeter.span("retrieve", kind="RETRIEVER") as step:
            step.set(client=threading.Lock(), top_k=3)
    finally:
        observe.configure(otel=False)
    assert observe.dropped_spans() == before
    (record,) = read_spans(path)
    assert record.attributes["top_k"] == 3 and "lock" in record.attributes["client"]


def test_a_trace_file_from_the_environment_that_cannot_be_opened_never_fails_a_request(tmp_path, monkeypatch, caplog):
    """The first traced call configured itself from RAGMETER_TRACE_FILE and raised the
    application an IsADirectoryError (or a missing parent's error), and so did every later call."""
    monkeypatch.setenv("RAGMETER_TRACE_FILE", str(tmp_path))
    monkeypatch.setattr(observe.tracing, "_settings", observe.tracing._Settings())
    traced = ragmeter.trace(lambda question: "fine")
    with caplog.at_level(logging.WARNING, logger="ragmeter.observe"):
        assert traced("a") == "fine" and traced("b") == "fine"
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and warnings[0].startswith("ragmeter tracing: cannot open RAGMETER_TRACE_FILE ([Errno 21]")


def test_jsonl_file_sink_and_export_to_samples(tmp_path, monkeypatch):
    path = tmp_path / "traces" / "t.jsonl"
    monkeypatch.setenv("RAGMETER_TRACE_FILE", str(path))
    observe.configure(otel=False)
    try:

        @ragmeter.trace
        def answer(question):
            with ragmeter.span("retrieve", kind="RETRIEVER") as step:
                step.retrieved(["ctx\u2028with a line separator"], ids=["d1"])
            with ragmeter.span("generate", kind="LLM") as step:
                step.set(model="m", prompt_tokens=10, completion_tokens=5, cost_usd=0.5)
            return "resp"

        answer("first?")
        answer("second?")
        with pytest.raises(RuntimeError):
            ragmeter.trace(lambda question: (_ for _ in ()).throw(RuntimeError("boom")))("third?")
    finally:
        observe.configure(otel=False)
    assert len(path.read_text().splitlines()) == 7
    exported = spans_to_samples(read_spans(path))
    assert [s.user_input for s in exported.samples] == ["first?", "second?"]
    assert exported.skipped[0][1] == "the request failed: RuntimeError: boom"
    sample = exported.samples[0]
    assert sample.retrieved_contexts == ["ctx\u2028with a line separator"] and sample.retrieved_context_ids == ["d1"]
    assert sample.response == "resp" and sample.id == sample.metadata["trace_id"]
    assert sample.metadata["tokens"] == {"prompt": 10, "completion": 5} and sample.metadata["cost_usd"] == 0.5
    assert sample.metadata["model"] == "m" and sample.metadata["latency_ms"] >= 0
    with_errors = spans_to_samples(read_spans(path), include_errors=True)
    assert with_errors.samples[-1].metadata["error"] == "RuntimeError: boom"


def test_a_bad_trace_file_names_the_file_line_and_key(tmp_path):
    good = SpanRecord(trace_id="t", span_id="s", name="n", started_at="2026-01-01T00:00:00+00:00").to_dict()
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "latency_ms": "slow"}) + "\n")
    with pytest.raises(TraceFileError, match=r"t\.jsonl, line 2: not a valid span: 'latency_ms' must be a number"):
        list(read_spans(path))
    path.write_text("{not json\n")
    with pytest.raises(TraceFileError, match=r"line 1: invalid JSON"):
        list(read_spans(path))
    path.write_text(json.dumps({**good, "colour": "red"}) + "\n")
    with pytest.raises(TraceFileError, match=r"unknown key\(s\) colour"):
        list(read_spans(path))
    with pytest.raises(TraceFileError, match="not found"):
        list(read_spans(tmp_path / "missing.jsonl"))


def test_read_spans_given_a_list_notes_each_bad_line_there_and_reads_on(tmp_path):
    good = SpanRecord(trace_id="t", span_id="s", name="n", started_at="2026-01-01T00:00:00+00:00").to_dict()
    path = tmp_path / "t.jsonl"
    lines = [json.dumps({**good, "attributes": "x"}), json.dumps(good), "", json.dumps({**good, "span_id": "s2"})[:30]]
    path.write_text("\n".join(lines))
    issues: list = []
    assert [s.span_id for s in read_spans(path, issues)] == ["s"]
    assert [str(i) for i in issues] == [
        f"{path}, line 1: not a valid span: 'attributes' must be an object",
        f"{path}, line 4: invalid JSON: Unterminated string starting at column 30",
    ]
    with pytest.raises(TraceFileError, match="not found"):
        list(read_spans(tmp_path / "missing.jsonl", issues))


def test_a_span_that_is_its_own_parent_is_named_and_skipped(tmp_path):
    """Its trace has no root, so the monitor never counted it: 5 traces stored, 4 decided."""
    good = SpanRecord(trace_id="t", span_id="s", name="n", started_at="2026-01-01T00:00:00+00:00").to_dict()
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({**good, "parent_id": "s"}) + "\n" + json.dumps({**good, "trace_id": "u"}) + "\n")
    issues: list = []
    assert [s.trace_id for s in read_spans(path, issues)] == ["u"]
    assert [str(i) for i in issues] == [
        f"{path}, line 1: not a valid span: 'parent_id' is the span's own id: a span cannot be its own parent (its trace would have no root)"
    ]


def test_a_sink_opened_after_a_kill_starts_a_new_line_and_loses_no_span(tmp_path):
    path = tmp_path / "t.jsonl"
    first = SpanRecord(trace_id="t", span_id="s1", name="n", started_at="2026-01-01T00:00:00+00:00")
    path.write_text(json.dumps(first.to_dict()) + "\n" + json.dumps({**first.to_dict(), "span_id": "s2"})[:40])  # killed mid-line
    sink = JsonlSink(path)
    sink(SpanRecord(trace_id="t", span_id="s3", name="n", started_at="2026-01-01T00:00:01+00:00"))
    sink.close()
    issues: list = []
    assert [s.span_id for s in read_spans(path, issues)] == ["s1", "s3"]
    assert [i.location for i in issues] == ["line 2"]
    JsonlSink(path).close()  # a file that ends its last line gets no empty one
    assert path.read_bytes().endswith(b"}\n") and b"\n\n" not in path.read_bytes()


def test_span_record_round_trips_through_json():
    record = SpanRecord(trace_id="t", span_id="s", name="n", started_at="x", question="q", cost_usd=0.1, attributes={"a": [1]})
    record.contexts = [observe.RetrievedContext("text", "id1", 0.3), observe.RetrievedContext("other")]
    assert SpanRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_openinference_and_genai_attribute_names():
    record = SpanRecord(trace_id="t", span_id="s", name="n", started_at="x", kind="LLM", question="q", response="r", model="m")
    record.contexts = [observe.RetrievedContext("text", "d1", 0.5)]
    record.prompt_tokens, record.completion_tokens, record.cost_usd = 3, 4, 0.01
    record.attributes = {"user": "u", "nested": {"not": "scalar"}}
    assert openinference_attributes(record) == {
        "openinference.span.kind": "LLM",
        "input.value": "q",
        "output.value": "r",
        "retrieval.documents.0.document.content": "text",
        "retrieval.documents.0.document.id": "d1",
        "retrieval.documents.0.document.score": 0.5,
        "llm.model_name": "m",
        "gen_ai.request.model": "m",
        "llm.token_count.prompt": 3,
        "gen_ai.usage.input_tokens": 3,
        "llm.token_count.completion": 4,
        "gen_ai.usage.output_tokens": 4,
        "llm.token_count.total": 7,
        "llm.cost.total": 0.01,
        "gen_ai.operation.name": "chat",
        "metadata.user": "u",
    }


def test_trace_and_span_are_public_and_import_neither_otel_nor_sqlalchemy():
    import subprocess
    import sys

    code = "import sys, ragmeter; assert 'trace' in ragmeter.__all__ and 'span' in ragmeter.__all__; print(sorted(m for m in ('opentelemetry', 'sqlalchemy', 'alembic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_streamed_answer_is_the_joined_chunks_and_every_chunk_passes_through(sink):
    marker = object()

    @ragmeter.trace
    def stream(question: str):
        with ragmeter.span("retrieve", kind="RETRIEVER") as step:
            step.retrieved(["Doc A"])
        yield "The "
        yield marker  # not text: passed through, not part of the response
        yield "answer."
        return "done"

    generator = stream("What is A?")
    assert sink == []  # nothing runs before the first chunk is asked for
    chunks = []
    while True:
        try:
            chunks.append(next(generator))
        except StopIteration as stop:
            returned = stop.value
            break
    assert chunks == ["The ", marker, "answer."] and chunks[1] is marker and returned == "done"
    retrieve, root = sink
    assert (root.question, root.response, root.error) == ("What is A?", "The answer.", None)
    assert root.attributes == {"stream_chunks": 3, "stream_completed": True}
    assert retrieve.parent_id == root.span_id and retrieve.trace_id == root.trace_id and root.latency_ms >= retrieve.latency_ms
    assert observe.current_span() is None


def test_a_stream_closed_early_or_failing_ends_its_span(sink):
    cleaned = []

    @ragmeter.trace
    def stream(question: str, fail_at: int = 99):
        try:
            for i in range(5):
                if i == fail_at:
                    raise KeyError("backend gone")
                yield f"c{i} "
        finally:
            cleaned.append(question)

    for chunk in stream("stop early"):
        if chunk == "c1 ":
            break
    (early,) = sink
    assert (early.response, early.error, early.attributes) == ("c0 c1 ", None, {"stream_chunks": 2, "stream_completed": False})
    assert cleaned == ["stop early"]  # the application's generator was closed too

    with pytest.raises(KeyError) as raised:
        list(stream("fails", fail_at=2))
    failed = sink[1]
    assert failed.error == "KeyError: 'backend gone'" and failed.response == "c0 c1 " and raised.value.args == ("backend gone",)
    assert failed.attributes["stream_completed"] is False and cleaned == ["stop early", "fails"]


def test_values_sent_and_exceptions_thrown_reach_the_application_s_generator(sink):
    @ragmeter.trace
    def echo(question: str):
        received = yield "ready"
        while True:
            try:
                received = yield f"got {received}"
            except ValueError as exc:
                received = f"caught {exc}"

    generator = echo("q")
    assert next(generator) == "ready" and generator.send("a") == "got a"
    assert generator.throw(ValueError("x")) == "got caught x"
    generator.close()
    (record,) = sink
    assert record.response == "readygot agot caught x" and record.attributes["stream_completed"] is False


def test_async_streams_are_traced_apart_and_closed_or_failing_ones_end(sink):
    @ragmeter.trace
    async def astream(question: str, fail: bool = False):
        for i in range(3):
            await asyncio.sleep(0.001)
            with ragmeter.span("generate", kind="LLM"):
                pass
            if fail and i == 1:
                raise RuntimeError("model down")
            yield f"{question}-{i};"

    async def consume(question: str) -> list[str]:
        return [chunk async for chunk in astream(question)]

    async def main():
        together = await asyncio.gather(*(consume(f"q{i}") for i in range(4)))
        early = astream("early")
        assert await early.__anext__() == "early-0;"
        await early.aclose()
        with pytest.raises(RuntimeError, match="model down"):
            await consume_failing()
        return together

    async def consume_failing():
        return [chunk async for chunk in astream("bad", fail=True)]

    together = asyncio.run(main())
    assert together == [[f"q{i}-{j};" for j in range(3)] for i in range(4)]
    roots = {r.question: r for r in sink if r.parent_id is None}
    for i in range(4):
        root = roots[f"q{i}"]
        children = [r for r in sink if r.parent_id == root.span_id]
        assert root.response == f"q{i}-0;q{i}-1;q{i}-2;" and len(children) == 3 and {c.trace_id for c in children} == {root.trace_id}
    assert (roots["early"].response, roots["early"].attributes["stream_completed"]) == ("early-0;", False)
    assert roots["bad"].error == "RuntimeError: model down" and roots["bad"].response == "bad-0;"


def test_configuring_again_closes_the_earlier_file(tmp_path):
    observe.configure(tmp_path / "a.jsonl", otel=False)
    (first,) = observe.tracing._settings.owned
    observe.configure(tmp_path / "b.jsonl", otel=False)
    try:
        ragmeter.trace(lambda question: "x")("q")
    finally:
        observe.configure(otel=False)
    assert first._descriptor == -1
    assert (tmp_path / "a.jsonl").read_text() == "" and len((tmp_path / "b.jsonl").read_text().splitlines()) == 1


def test_a_store_that_fails_drops_spans_with_a_warning_and_the_application_goes_on(tmp_path, caplog):
    from ragmeter.observe.sinks import StoreSink
    from ragmeter.store.schema import spans

    sink = StoreSink(str(tmp_path / "r.db"))
    spans.drop(sink.store.engine)
    observe.configure(sinks=[sink], otel=False)
    try:
        with caplog.at_level(logging.WARNING, logger="ragmeter.observe"):
            assert ragmeter.trace(lambda question: "fine")("q") == "fine"
            sink.flush()
    finally:
        observe.configure(otel=False)
        sink.close()
    assert sink.failed == 1 and "1 span(s) not stored" in caplog.text


def test_the_store_sink_holds_a_batch_while_the_store_is_locked_and_drops_it_only_when_closed_past_its_timeout(tmp_path, caplog):
    """A SQLite store that another writer (a large ``traces import``) held locked past the busy
    timeout made the sink drop its batch: up to 500 requests lost for a lock that then passed."""
    import sqlite3

    from sqlalchemy.exc import OperationalError

    from ragmeter.observe.sinks import StoreSink

    sink = StoreSink(str(tmp_path / "r.db"), batch=2)
    write, refusals = sink.store.add_spans, iter(range(2))

    def locked_twice(spans):
        if next(refusals, None) is not None:
            raise OperationalError("INSERT INTO spans ...", {}, sqlite3.OperationalError("database is locked"))
        return write(spans)

    sink.store.add_spans = locked_twice
    observe.configure(sinks=[sink], otel=False)
    try:
        with caplog.at_level(logging.WARNING, logger="ragmeter.observe"):
            assert [ragmeter.trace(lambda question: "fine")(f"q{i}") for i in range(3)] == ["fine"] * 3
            sink.flush()
            assert (sink.failed, sink.store.count("spans")) == (0, 3)
            assert "the store cannot take" in caplog.text and "database is locked" in caplog.text and "INSERT" not in caplog.text

            def locked(spans):
                raise OperationalError("INSERT", {}, sqlite3.OperationalError("database is locked"))

            sink.store.add_spans = locked
            for i in range(5):
                sink(SpanRecord(trace_id="t" * 32, span_id=f"{i:016x}", name="rag", started_at="2026-11-01T00:00:00.000+00:00"))
            sink.close(timeout=0)  # the application exits while the store is still locked: not held up
    finally:
        observe.configure(otel=False)
    assert sink.failed == 5 and "span(s) not stored (OperationalError: database is locked)" in caplog.text


def test_the_langchain_adapter_without_langchain_names_the_extra(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "langchain_core.callbacks", None)
    monkeypatch.delitem(sys.modules, "ragmeter.observe.langchain_callbacks", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'ragmeter\[langchain\]'"):
        importlib.import_module("ragmeter.observe.langchain_callbacks")


@pytest.mark.parametrize("kind", ["GUARDRAIL", "EVALUATOR", "PROMPT", "UNKNOWN"])
def test_a_span_of_any_openinference_kind_is_read(kind):
    # Checking kinds on import refused the spans of the kinds OpenInference defines beyond our own
    # tracer's, which other tracers write.
    record = SpanRecord.from_dict({"trace_id": "t", "span_id": "s", "name": "n", "started_at": "2026-12-07T00:00:00+00:00", "kind": kind})
    assert record.kind == kind


def test_eval_of_a_trace_file_says_to_export_it_first_and_the_command_it_names_works(tmp_path):
    # It read each span as a sample: the retrievals were skipped as bad rows, the questions scored alone.
    spans = []
    for i in range(3):
        root = SpanRecord(
            trace_id=f"t{i}", span_id=f"r{i}", name="rag", started_at="2026-01-01T00:00:00+00:00", question="q?", response="a"
        )
        retrieval = SpanRecord(
            trace_id=f"t{i}", span_id=f"c{i}", parent_id=f"r{i}", name="retrieve", kind="RETRIEVER", started_at=root.started_at
        )
        retrieval.contexts = [observe.RetrievedContext("ctx", "d1")]
        spans += [root.to_dict(), retrieval.to_dict()]
    path = tmp_path / "my traces.jsonl"
    path.write_text("".join(json.dumps(span) + "\n" for span in spans))
    line = one_line_error(run_eval(path, "-m", "latency_ms", "-o", tmp_path / "run"), "is a trace file (spans), not samples")
    command = line.split("`")[1].split()
    assert command[:3] == ["ragmeter", "traces", "export"] and not (tmp_path / "run").exists()
    exported = runner.invoke(app, ["traces", "export", str(path), "-o", str(tmp_path / "samples.jsonl")])
    assert exported.exit_code == 0, exported.output
    assert run_eval(tmp_path / "samples.jsonl", "-m", "latency_ms", "-o", tmp_path / "run", "--no-progress").exit_code == 0
