"""The run store against real databases: the same suite on a SQLite file and on a PostgreSQL
server the tests start themselves (Debian's ``postgresql``; missing, the PostgreSQL cases fail
with how to install it, never skip)."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data.schema import Sample
from ragmeter.judges.metering import Usage
from ragmeter.metrics import create_metric
from ragmeter.metrics.base import Score
from ragmeter.observe import RetrievedContext, SpanRecord
from ragmeter.results import Result, SampleResult
from ragmeter.store import RunStore, StoreError
from ragmeter.store.schema import metadata

pytestmark = pytest.mark.integration

HOSTILE = "'; DROP TABLE runs; -- 100% _x_ \u2028 中文 \x1b[31m"


@pytest.fixture
def store(store_url):
    opened = RunStore.open(store_url)
    yield opened
    opened.close()


def make_result(n: int = 5, started_at: str = "2026-11-01T10:00:00+00:00", offset: float = 0.0) -> Result:
    """A run with scored, unscored and failed pairs, usage with and without a price, and hostile text."""
    metrics = [create_metric("token_f1").info(), create_metric("faithfulness").info()]
    samples = []
    for i in range(n):
        sample = Sample(
            id=f"s{i} {HOSTILE}",
            user_input=f"question {i} {HOSTILE}",
            response="r",
            retrieved_contexts=["c1", HOSTILE],
            metadata={"k": [1, {"x": None}]},
        )
        scores = {
            "token_f1": Score(min(1.0, 0.1 * i + offset), f"overlap {i}", details={"tokens": [HOSTILE, i]}),
            "faithfulness": Score.unscored("the judge failed: timeout", failed=True)
            if i == 1
            else Score(0.5, "half", details={"claims": []}),
        }
        usage = {
            "faithfulness": Usage(calls=2, prompt_tokens=100 + i, completion_tokens=3, seconds=0.25, cost_usd=None if i == 2 else 0.001)
        }
        samples.append(
            SampleResult(
                key=sample.id,
                sample=sample,
                source="data.jsonl",
                location=f"line {i + 1}",
                scores=scores,
                seconds={"token_f1": 0.001, "faithfulness": 1.5},
                usage=usage,
                fingerprint=sample.fingerprint(),
                configs={"token_f1": "abc"},
            )
        )
    run = {"started_at": started_at, "n_samples": n, "judge": {"backend": "openai", "model": "m"}, "sources": ["data.jsonl"]}
    return Result(samples=samples, metrics=metrics, run=run)  # fmt: skip


def test_a_run_round_trips_with_every_score_reason_detail_and_usage(store):
    result = make_result()
    run_id = store.save(result, tags=["nightly", HOSTILE], commit="abc123")
    loaded = store.load(run_id)
    assert [s.to_dict() for s in loaded.samples] == [s.to_dict() for s in result.samples]
    assert loaded.metrics == result.metrics and loaded.run == result.run
    assert loaded.aggregates["token_f1"]["mean"] == pytest.approx(result.aggregates["token_f1"]["mean"])
    row = store.run(run_id[:6])
    assert (row["commit"], row["tags"], row["n_samples"], row["judge"]["model"]) == ("abc123", ["nightly", HOSTILE], 5, "m")
    assert row["aggregates"]["faithfulness"]["n_failed"] == 1
    assert store.count("scores") == 10 and store.count("samples") == 5


def test_runs_are_listed_newest_first_and_filtered_by_tag(store):
    old = store.save(make_result(started_at="2026-10-01T00:00:00+00:00"), tags=["a"])
    new = store.save(make_result(started_at="2026-11-01T00:00:00+00:00", offset=0.5), tags=["b"])
    listed = store.runs()
    assert [r["id"] for r in listed] == [new, old]
    assert listed[0]["means"]["token_f1"] == pytest.approx(0.7) and listed[0]["units"] == {"token_f1": None, "faithfulness": None}
    assert [r["id"] for r in store.runs(tag="a")] == [old] and store.runs(limit=1)[0]["id"] == new


def test_a_run_is_stored_once_and_deleted_with_all_its_rows(store):
    result = make_result()
    run_id = store.save(result)
    with pytest.raises(StoreError, match=f"stored already, as {run_id}"):
        store.save(result)
    other = store.save(make_result(started_at="2026-12-01T00:00:00+00:00"))
    assert store.delete(run_id) == run_id
    assert [r["id"] for r in store.runs()] == [other]
    assert (store.count("samples"), store.count("scores")) == (5, 10)
    with pytest.raises(StoreError, match="no stored run has the id"):
        store.run(run_id)


def test_id_prefixes_are_matched_literally(store):
    run_id = store.save(make_result())
    assert store.resolve(run_id[:3]) == run_id
    for pattern in ("%", "_", HOSTILE):
        with pytest.raises(StoreError, match="no stored run has the id"):
            store.resolve(pattern)


def test_spans_are_stored_once_and_read_back(store):
    spans = [
        SpanRecord(trace_id="a" * 32, span_id=f"{i:016x}", name="rag", started_at=f"2026-11-01T00:00:0{i}.000+00:00", question=HOSTILE, latency_ms=1.5, cost_usd=0.01, attributes={"user": "u"})
        for i in range(3)
    ]  # fmt: skip
    spans[1].contexts = [RetrievedContext(HOSTILE, "d1", 0.5)]
    spans[1].parent_id = spans[0].span_id
    assert store.add_spans(spans) == (3, 0)
    assert store.add_spans(spans[:2]) == (0, 2)
    assert store.spans() == spans[::-1]


def test_a_span_whose_id_postgresql_cannot_hold_is_named_and_skipped_not_its_batch(store, caplog):
    """PostgreSQL refused a 65-character trace id, and with it the whole batch: 500 requests of
    the application's store sink, which (unlike ``traces import``) did not check the lengths."""
    spans = [
        SpanRecord(trace_id=t, span_id="s" * 16, name="rag", started_at="2026-11-01T00:00:00.000+00:00")
        for t in ("a" * 32, "t" * 65, "b" * 32)
    ]
    with caplog.at_level("WARNING", logger="ragmeter.store"):
        added = store.add_spans(spans)
    if store.engine.dialect.name == "sqlite":  # it holds any length
        assert added == (3, 0) and not caplog.text
    else:
        assert added == (2, 0) and {s.trace_id for s in store.spans()} == {"a" * 32, "b" * 32}
        assert "1 span(s) not stored" in caplog.text and "'trace_id' 'tttt" in caplog.text and "is 65 characters" in caplog.text


def test_a_span_with_uuid_ids_is_stored_and_read_back(store):
    """Schema 0005: ids of up to 64 characters. PostgreSQL refused a UUID trace id (36 characters)
    in a column of 32, and with it the whole batch of spans."""
    span = SpanRecord(
        trace_id="123e4567-e89b-12d3-a456-426614174000",
        span_id="9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0",
        name="rag",
        started_at="2026-11-01T00:00:00.000+00:00",
        question="q",
    )
    assert store.add_spans([span]) == (1, 0)
    assert store.spans() == [span]


def test_the_migrated_schema_matches_the_tables_and_migrating_again_changes_nothing(store, store_url):
    with store.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
        assert MigrationContext.configure(connection).get_current_revision() == "0005"
    run_id = store.save(make_result())
    again = RunStore.open(store_url)
    assert [r["id"] for r in again.runs()] == [run_id]
    again.close()


def test_eval_and_runs_commands_on_the_store(store_url, tmp_path):
    runner = CliRunner()
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "question": "q?", "answer": "blue sky", "ground_truth": "the sky is blue"}\n')
    evaluated = runner.invoke(
        app, ["eval", str(data), "-m", "token_f1", "-o", str(tmp_path / "run"), "--no-progress", "--store", store_url, "-t", "nightly", "-t", HOSTILE]
    )  # fmt: skip
    assert evaluated.exit_code == 0, evaluated.output
    assert "Stored run" in evaluated.output
    assert [r["tags"] for r in RunStore.open(store_url).runs(tag=HOSTILE)] == [["nightly", HOSTILE]]
    imported = runner.invoke(app, ["runs", "import", str(tmp_path / "run"), "--store", store_url, "--tag", "again"])
    assert imported.exit_code == 2 and "stored already" in imported.output
    listed = runner.invoke(app, ["runs", "list", "--store", store_url])
    assert listed.exit_code == 0 and "token_f1" in listed.output
    (run_id,) = [r["id"] for r in RunStore.open(store_url).runs()]
    shown = runner.invoke(app, ["runs", "show", run_id[:5], "--store", store_url])
    assert shown.exit_code == 0 and "token_f1" in shown.output and "1 samples" in shown.output
    deleted = runner.invoke(app, ["runs", "delete", run_id, "--store", store_url, "--yes"])
    assert deleted.exit_code == 0 and RunStore.open(store_url).runs() == []


def test_traced_requests_go_to_the_store_from_a_background_thread(store_url):
    import threading

    import ragmeter
    from ragmeter import observe

    observe.configure(store=store_url, otel=False)
    try:

        @ragmeter.trace
        def answer(question: str) -> str:
            with ragmeter.span("retrieve", kind="RETRIEVER") as step:
                step.retrieved([f"context for {question}"], ids=["d"])
            return question.upper()

        threads = [threading.Thread(target=lambda i=i: [answer(f"q{i}-{j}") for j in range(50)]) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        (sink,) = observe.tracing._settings.owned
        sink.flush()
    finally:
        observe.configure(otel=False)  # closes the sink: what was queued is written
    store = RunStore.open(store_url)
    spans = store.spans()
    store.close()
    assert len(spans) == 400 and sink.failed == 0
    roots = [s for s in spans if s.parent_id is None]
    assert sorted(r.question for r in roots) == sorted(f"q{i}-{j}" for i in range(4) for j in range(50))
    assert all(r.response == r.question.upper() for r in roots)


def test_the_monitor_scores_each_trace_in_the_share_once(store):
    from ragmeter.judges import Judges
    from ragmeter.monitor import MonitorSettings, in_share, run_monitor
    from ragmeter.monitor.ledger import decision_counts, trace_score_rows
    from ragmeter.run.engine import resolve_metrics

    spans = [
        SpanRecord(trace_id=f"{i:032x}", span_id=f"{i:016x}", name="rag", started_at=f"2026-11-01T00:00:{i:02d}.000+00:00", question=f"q{i}", response="r", latency_ms=float(i))
        for i in range(40)
    ]  # fmt: skip
    store.add_spans(spans)
    settings = MonitorSettings(share=0.5, batch=6)
    first = run_monitor(store, resolve_metrics(["latency_ms"]), Judges(), settings, once=True)
    again = run_monitor(store, resolve_metrics(["latency_ms"]), Judges(), settings, once=True)
    expected = {s.trace_id for s in spans if in_share(s.trace_id, 0.5)}
    assert {r["trace_id"] for r in trace_score_rows(store)} == expected and first.scored == len(expected)
    assert again.scored == again.not_sampled == 0
    assert decision_counts(store) == {"scored": len(expected), "not_sampled": 40 - len(expected)}


def test_a_store_at_the_first_schema_is_upgraded_with_its_runs(store_url):
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine

    from ragmeter.store.database import MIGRATIONS, resolve_url

    engine = create_engine(resolve_url(store_url))
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    old = RunStore(engine)
    run_id = old.save(make_result())
    old.close()
    upgraded = RunStore.open(store_url)
    with upgraded.engine.connect() as connection:
        assert MigrationContext.configure(connection).get_current_revision() == "0005"
    assert [r["id"] for r in upgraded.runs()] == [run_id] and len(upgraded.load(run_id).samples) == 5
    upgraded.close()


def test_score_drift_reads_the_runs_and_the_monitor_scores(store, store_url):
    from sqlalchemy import insert, update

    from ragmeter.monitor.ledger import run_series, trace_values_by_day
    from ragmeter.store.schema import trace_scores

    for day in (1, 2, 3):
        store.save(make_result(started_at=f"2026-11-0{day}T00:00:00+00:00", offset=0.1 * day), tags=["t"] if day > 1 else [])
    assert [(at[:10], settings) for _, at, _, settings in run_series(store, "token_f1")] == [(f"2026-11-0{d}", {}) for d in (1, 2, 3)]
    assert len(run_series(store, "token_f1", tag="t")) == 2 and run_series(store, "no_such_metric") == []
    store.add_spans(
        [
            SpanRecord(trace_id=f"{i:032x}", span_id="0" * 16, name="rag", started_at=f"2026-11-0{1 + i % 2}T00:00:00+00:00")
            for i in range(4)
        ]
    )
    with store.engine.begin() as connection:
        rows = [
            {
                "trace_id": f"{i:032x}",
                "metric_id": "m",
                "value": i / 10,
                "explanation": "",
                "failed": False,
                "details": {},
                "scored_at": "x",
            }
            for i in range(4)
        ]
        connection.execute(insert(trace_scores), rows)
    by_day, left_out = trace_values_by_day(store, "m")
    assert {day: sorted(values) for day, values in by_day.items()} == {"2026-11-01": [0.0, 0.2], "2026-11-02": [0.1, 0.3]}
    assert left_out == []
    with store.engine.begin() as connection:
        first, last = (trace_scores.c.trace_id == f"{i:032x}" for i in (0, 3))
        connection.execute(update(trace_scores).where(first).values(settings={"threshold": 0.5}))
        connection.execute(update(trace_scores).where(last).values(settings={"threshold": 0.8}, scored_at="y"))
    # Scored with the latest settings, or before settings were recorded: charted; with others: left out.
    by_day, left_out = trace_values_by_day(store, "m")
    assert {day: sorted(values) for day, values in by_day.items()} == {"2026-11-01": [0.2], "2026-11-02": [0.1, 0.3]}
    assert left_out == [f"{0:032x}"]
    done = CliRunner().invoke(app, ["drift", "scores", "-m", "token_f1", "--store", store_url, "--baseline", "2"])
    assert done.exit_code == 0 and "token_f1: centre 0.3500" in done.output, done.output  # 5 samples a run: wide limits


def _requests(n: int, day: int, start: int = 0) -> list[SpanRecord]:
    """``n`` requests on a November day, each a root span with a question and a retrieval span."""
    spans = []
    for i in range(start, start + n):
        root = SpanRecord(trace_id=f"{i:032x}", span_id=f"{i:016x}", name="rag", started_at=f"2026-11-{day:02d}T{i % 24:02d}:00:00.000+00:00", question=f"How do I renew licence {i}? {HOSTILE}", response="r")  # fmt: skip
        child = SpanRecord(trace_id=root.trace_id, span_id="f" * 16, parent_id=root.span_id, name="retrieve", started_at=root.started_at, question="a step")  # fmt: skip
        spans += [root, child]
    return spans


def test_question_vectors_are_kept_exactly_and_query_drift_only_reads_them(store_url):
    """A store at schema 0002 with traces is upgraded; query drift encodes on demand and says so;
    `ragmeter traces embed` stores the packaged encoder's vectors bit for bit; then query drift
    (the command and the dashboard's panel) reads them and never loads the encoder."""
    import numpy as np
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine

    from ragmeter.judges.embeddings import USEEncoder
    from ragmeter.monitor.drift import query_drift
    from ragmeter.monitor.query_windows import stored_query_drift
    from ragmeter.store.database import MIGRATIONS, resolve_url
    from ragmeter.store.vectors import stored_vectors, unembedded_questions, vector_coverage

    class Counting(USEEncoder):
        asked = 0

        def encode(self, texts):
            Counting.asked += len(texts)
            return super().encode(texts)

    engine = create_engine(resolve_url(store_url))
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0002")
    old = RunStore(engine)
    old.add_spans([*_requests(12, 2), *_requests(12, 9, start=100)])
    old.close()

    store = RunStore.open(store_url)
    try:
        encoder = Counting(threads=1)  # as packaged_encoder() makes it
        before = stored_query_drift(store, encoder, days=7, limit=100)
        assert before.encoded_now == 24 and Counting.asked == 24 and before.result is not None
        done = CliRunner().invoke(app, ["traces", "embed", "--store", store_url])
        assert done.exit_code == 0 and "24 question vector(s) stored" in done.output, done.output
        assert vector_coverage(store, USEEncoder.model_name) == (24, 24)

        questions = unembedded_questions(store, "none")
        vectors = stored_vectors(store, USEEncoder.model_name, questions)
        expected = USEEncoder(threads=1).encode([q.question for q in questions])  # as packaged_encoder() makes them
        assert all(np.array_equal(v, e) for v, e in zip(vectors, expected, strict=True))
        assert np.allclose(vectors, USEEncoder(threads=2).encode([q.question for q in questions]), atol=1e-6)
        assert np.allclose([np.linalg.norm(v) for v in vectors], 1.0, atol=1e-5)

        Counting.asked = 0
        after = stored_query_drift(store, encoder, days=7, limit=100)
        assert after.encoded_now == 0 and Counting.asked == 0
        assert after.result == before.result == query_drift(after.reference, after.current, USEEncoder(threads=1).encode)
        again = CliRunner().invoke(app, ["drift", "queries", "--store", store_url, "--days", "7"])
        assert again.exit_code in (0, 1) and f"p = {after.result.p_value:.4f}" in again.output and "no stored vector" not in again.output
    finally:
        store.close()


def test_traces_are_exported_from_the_store_in_a_time_window(store, store_url, tmp_path):
    import json

    store.add_spans([*_requests(3, 2), *_requests(2, 5, start=10)])
    out = tmp_path / "samples.jsonl"
    done = CliRunner().invoke(app, ["traces", "export", "--store", store_url, "--since", "2026-11-03", "-o", str(out)])
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [f"{10:032x}", f"{11:032x}"] and rows[0]["user_input"].endswith(HOSTILE)
    assert len(store.trace_spans(until="2026-11-03T00:00:00.000+00:00")) == 6
