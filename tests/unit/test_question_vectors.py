"""Question vectors kept in the run store (SQLite here; PostgreSQL and the packaged encoder in
tests/integration/test_store.py): stored once per request by the monitor, by `traces import`,
by `traces embed` and (when asked) by the application's store sink; query drift (the command and
the dashboard page) reads them and encodes only the questions without one, and says so."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cli_helpers import runner
from fastapi.testclient import TestClient
from sqlalchemy import select, update

import ragmeter.judges.embeddings
from ragmeter import observe
from ragmeter.cli import app
from ragmeter.dashboard.app import create_app
from ragmeter.judges import Judges
from ragmeter.monitor import MonitorSettings, run_monitor
from ragmeter.monitor.drift import query_drift
from ragmeter.monitor.query_windows import stored_query_drift
from ragmeter.observe import JsonlSink, SpanRecord
from ragmeter.run.engine import resolve_metrics
from ragmeter.store import RunStore, StoreError
from ragmeter.store.schema import question_vectors
from ragmeter.store.vectors import embed_questions, pack, stored_vectors, unembedded_questions, unpack, vector_coverage

CENTRE = np.random.default_rng(5).normal(size=16)


class FakeEncoder:
    """Unit vectors from a hash of the text ('new topic' ones crowd together); counts what it encodes."""

    model_name = "fake-16"

    def __init__(self, threads: int = 2) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.encoded += texts
        rows = []
        for text in texts:
            noise = np.random.default_rng(zlib.crc32(text.encode())).normal(size=16)
            vector = CENTRE + 0.1 * noise / 4 if "new topic" in text else noise
            rows.append(vector / np.linalg.norm(vector))
        return np.array(rows, dtype=np.float32)


def request(i: int, day: int, question: str | None) -> SpanRecord:
    return SpanRecord(trace_id=f"{i:032x}", span_id=f"{i:016x}", name="rag", started_at=f"2026-10-{day:02d}T{i % 24:02d}:00:00.000+00:00", question=question)  # fmt: skip


def traffic() -> list[SpanRecord]:
    """150 old questions over five days, then 135 old and 15 of a new topic over the next five."""
    spans = [request(i, 2 + i % 5, f"old question {i}") for i in range(150)]
    spans += [request(1000 + i, 9 + i % 5, f"old question {1000 + i}") for i in range(135)]
    spans += [request(2000 + i, 9 + i % 5, f"new topic {i}") for i in range(15)]
    return spans


@pytest.fixture
def store(tmp_path):
    opened = RunStore.open(str(tmp_path / "runs.db"))
    yield opened
    opened.close()


def test_each_request_s_question_is_stored_once_and_read_back_exactly(store):
    child = SpanRecord(trace_id=f"{1:032x}", span_id="f" * 16, parent_id=f"{1:016x}", name="retrieve", started_at="2026-10-02T00:00:00.000+00:00", question="a step")  # fmt: skip
    spans = [request(1, 2, "same?"), request(2, 2, "same?"), request(3, 2, "other?"), request(4, 2, None), child]
    store.add_spans(spans)
    encoder = FakeEncoder()
    assert [q.question for q in unembedded_questions(store, encoder.model_name)] == ["same?", "same?", "other?"]
    assert embed_questions(store, encoder, chunk=2) == 3
    assert encoder.encoded == ["same?", "other?"]  # chunk 1 asks "same?" twice: encoded once
    assert embed_questions(store, encoder) == 0 and vector_coverage(store, encoder.model_name) == (3, 3)
    found = stored_vectors(store, encoder.model_name, unembedded_questions(store, "another-model"))
    assert [v.dtype for v in found if v is not None] == [np.float32] * 3
    assert np.array_equal(found[0], encoder.encode(["same?"])[0]) and np.array_equal(found[2], encoder.encode(["other?"])[0])
    assert stored_vectors(store, "another-model", unembedded_questions(store, "another-model")) == [None, None, None]


def test_a_vector_of_the_wrong_size_is_refused_by_name(store):
    assert np.array_equal(unpack(pack(np.arange(3)), 3), np.arange(3, dtype=np.float32))
    with pytest.raises(StoreError, match="has 12 bytes, not the 16 of 4 float32"):
        unpack(pack(np.arange(3)), 4)

    class Broken(FakeEncoder):
        def encode(self, texts):
            return np.zeros((len(texts) - 1, 16))

    store.add_spans([request(1, 2, "q1"), request(2, 2, "q2")])
    with pytest.raises(StoreError, match=r"returned \(1, 16\) vectors for 2 questions"):
        embed_questions(store, Broken())


def test_query_drift_reads_stored_vectors_and_encodes_only_the_missing_ones(store):
    store.add_spans(traffic())
    encoder = FakeEncoder()
    without = stored_query_drift(store, encoder, days=7, limit=1000)
    assert without.encoded_now == 300 and without.result is not None and without.result.drift
    assert without.result == query_drift(without.reference, without.current, FakeEncoder().encode)

    assert embed_questions(store, FakeEncoder()) == 300
    reading = FakeEncoder()
    stored = stored_query_drift(store, reading, days=7, limit=1000)
    assert reading.encoded == [] and stored.encoded_now == 0 and stored.result == without.result
    assert any(all("new topic" in e for e in topic.examples) for topic in stored.result.grown_topics)

    with store.engine.begin() as connection:  # an older store: some requests have no vector
        connection.execute(question_vectors.delete().where(question_vectors.c.trace_id.in_([f"{i:032x}" for i in range(5)])))
    partial = stored_query_drift(store, reading, days=7, limit=1000)
    assert partial.encoded_now == 5 and sorted(reading.encoded) == sorted(f"old question {i}" for i in range(5))
    assert partial.result == without.result


def test_the_dashboard_page_reads_vectors_and_says_when_it_had_to_encode(store):
    store.add_spans(traffic())
    encoder = FakeEncoder()
    page = TestClient(create_app(store, encoder=encoder)).get("/drift/queries?days=7&limit=1000").text
    assert "300 of these 300 questions had no stored vector (fake-16)" in page and "ragmeter traces embed --store URL" in page
    embed_questions(store, FakeEncoder())
    reading = FakeEncoder()
    page = TestClient(create_app(store, encoder=reading)).get("/drift/queries?days=7&limit=1000").text
    assert "Question vectors read from the store (fake-16)" in page and ">drift<" in page and reading.encoded == []


def test_the_monitor_stores_the_vector_of_every_trace_it_decides_about(store):
    store.add_spans(traffic()[:40])
    encoder = FakeEncoder()
    progress = run_monitor(
        store, resolve_metrics(["latency_ms"]), Judges(), MonitorSettings(share=0.25, batch=7), once=True, encoder=encoder
    )
    assert progress.embedded == 40 and progress.scored + progress.not_sampled + progress.unscorable == 40
    assert vector_coverage(store, encoder.model_name) == (40, 40) and len(encoder.encoded) == 40
    store.add_spans(traffic()[40:45])
    again = run_monitor(store, resolve_metrics(["latency_ms"]), Judges(), MonitorSettings(share=0.25), once=True, encoder=encoder)
    assert again.embedded == 5 and len(encoder.encoded) == 45


def test_the_store_sink_stores_vectors_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(ragmeter.judges.embeddings, "USEEncoder", FakeEncoder)
    for asked, expected in ((False, 0), (True, 3)):
        url = str(tmp_path / f"sink-{asked}.db")
        observe.configure(store=url, otel=False, embed_questions=asked)
        try:
            for i in range(3):
                with observe.span("rag", question=f"q{i}?"), observe.span("retrieve", kind="RETRIEVER", question="step"):
                    pass
        finally:
            observe.configure(otel=False)  # writes what is queued
        opened = RunStore.open(url)
        assert vector_coverage(opened, FakeEncoder.model_name) == (3, expected)
        opened.close()


@pytest.fixture
def fake_use(monkeypatch):
    """The commands' packaged encoder replaced by :class:`FakeEncoder` (no model in unit tests)."""
    monkeypatch.setattr(ragmeter.judges.embeddings, "USEEncoder", FakeEncoder)
    monkeypatch.setattr("ragmeter.cli.monitor.USEEncoder", FakeEncoder)


def test_traces_import_and_embed_commands_store_the_vectors(tmp_path, fake_use):
    sink = JsonlSink(tmp_path / "traces.jsonl")
    for record in traffic()[:20]:
        sink(record)
    sink.close()
    url = str(tmp_path / "runs.db")
    skipped = runner.invoke(app, ["traces", "import", str(tmp_path / "traces.jsonl"), "--store", url, "--no-embed"])
    assert skipped.exit_code == 0 and "20 span(s) stored" in skipped.output and "vector" not in skipped.output
    done = runner.invoke(app, ["traces", "embed", "--store", url])
    assert done.exit_code == 0 and "20 question vector(s) stored (every stored question has one)" in done.output, done.output
    assert "0 question vector(s) stored" in runner.invoke(app, ["traces", "embed", "--store", url]).output

    sink = JsonlSink(tmp_path / "more.jsonl")
    for record in traffic()[20:30]:
        sink(record)
    sink.close()
    imported = runner.invoke(app, ["traces", "import", str(tmp_path / "more.jsonl"), "--store", url])
    assert imported.exit_code == 0 and "10 span(s) stored" in imported.output and "10 question vector(s) stored" in imported.output
    opened = RunStore.open(url)
    assert vector_coverage(opened, FakeEncoder.model_name) == (30, 30)
    with opened.engine.connect() as connection:
        assert {len(v) for v in connection.scalars(select(question_vectors.c.vector))} == {16 * 4}
    opened.close()


def test_drift_queries_on_the_store(tmp_path, fake_use):
    url = str(tmp_path / "runs.db")
    opened = RunStore.open(url)
    opened.add_spans(traffic())
    opened.close()
    out = tmp_path / "drift.json"
    found = runner.invoke(app, ["drift", "queries", "--store", url, "--days", "7", "--json", str(out)])
    assert found.exit_code == 1 and "drift: p = " in found.output and "new topic" in found.output, found.output
    assert "300 question(s) had no stored vector and were encoded now" in found.output and '"kind": "query_drift"' in out.read_text()
    assert runner.invoke(app, ["traces", "embed", "--store", url]).exit_code == 0
    again = runner.invoke(app, ["drift", "queries", "--store", url, "--days", "7"])
    assert again.exit_code == 1 and "no stored vector" not in again.output

    for args, message in [
        (["a.jsonl", "--store", url], "give two samples files or --store, not both"),
        ([], "give two samples files (reference and recent) or --store"),
        (["--store", url, "--days", "366"], "needs at least 10 questions per window; got 0 reference and 300 recent"),
        (["--store", str(tmp_path / "missing.db")], "no such store"),
        (["--store", str(tmp_path / "empty.db")], "no stored request has a question"),
    ]:
        RunStore.open(str(tmp_path / "empty.db")).close()
        failed = runner.invoke(app, ["drift", "queries", *args])
        assert failed.exit_code == 2 and message in failed.output and "Traceback" not in failed.output, failed.output


def test_an_older_store_s_vectors_can_be_rewritten_by_a_new_encoder(store):
    store.add_spans(traffic()[:12])
    embed_questions(store, FakeEncoder())
    with store.engine.begin() as connection:
        connection.execute(update(question_vectors).values(model="old-encoder"))
    assert vector_coverage(store, FakeEncoder.model_name) == (12, 0)
    assert embed_questions(store, FakeEncoder()) == 12 and vector_coverage(store, "old-encoder") == (12, 12)
