"""Online evaluation of traces in the run store (SQLite here; PostgreSQL in
tests/integration/test_store.py): the share chosen by trace-id hash, one decision per trace,
unscorable traces with their reason, the hourly budget, and the command's errors."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from cli_helpers import one_line_error, runner
from sqlalchemy import insert

from ragmeter.cli import app
from ragmeter.judges import Judges
from ragmeter.monitor import MonitorSettings, in_share, run_monitor
from ragmeter.monitor.ledger import decision_counts, trace_score_rows
from ragmeter.observe import RetrievedContext, SpanRecord
from ragmeter.run.engine import resolve_metrics
from ragmeter.store import RunStore
from ragmeter.store.schema import trace_scores

METRICS = ["latency_ms", "total_tokens"]


def traces(n: int, start: int = 0) -> list[SpanRecord]:
    """``n`` requests of two spans each (a root with question and answer, a retrieval)."""
    spans = []
    for i in range(start, start + n):
        trace_id = f"{i:032x}"
        root = SpanRecord(
            trace_id=trace_id, span_id=f"{2 * i:016x}", name="rag", started_at=f"2026-11-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000+00:00"
        )
        root.question, root.response, root.latency_ms, root.prompt_tokens, root.completion_tokens = f"q{i}?", f"a{i}", 10.0 + i, 100, 5
        child = SpanRecord(
            trace_id=trace_id,
            span_id=f"{2 * i + 1:016x}",
            parent_id=root.span_id,
            name="retrieve",
            kind="RETRIEVER",
            started_at=root.started_at,
        )
        child.contexts = [RetrievedContext(f"context {i}", f"d{i}")]
        spans += [root, child]
    return spans  # fmt: skip


@pytest.fixture
def store(tmp_path):
    opened = RunStore.open(str(tmp_path / "runs.db"))
    yield opened
    opened.close()


def monitor(store, **settings):
    return run_monitor(store, resolve_metrics(METRICS), Judges(), MonitorSettings(**settings), once=True)


def test_the_share_is_decided_by_trace_id_the_same_everywhere():
    ids = [f"{i:032x}" for i in range(20000)]
    chosen = [t for t in ids if in_share(t, 0.1)]
    assert 0.09 < len(chosen) / len(ids) < 0.11
    assert chosen == [t for t in ids if in_share(t, 0.1)]
    assert set(chosen) <= {t for t in ids if in_share(t, 0.3)}
    assert all(in_share(t, 1.0) for t in ids[:100])


def test_every_trace_in_the_share_is_scored_once(store):
    store.add_spans(traces(30))
    progress = monitor(store, share=0.5, batch=7)
    expected = {f"{i:032x}" for i in range(30) if in_share(f"{i:032x}", 0.5)}
    rows = trace_score_rows(store)
    assert {r["trace_id"] for r in rows} == expected and len(rows) == 2 * len(expected)
    assert (progress.scored, progress.not_sampled) == (len(expected), 30 - len(expected))
    by_trace = {(r["trace_id"], r["metric_id"]): r["value"] for r in rows}
    some = sorted(expected)[0]
    assert by_trace[(some, "latency_ms")] == 10.0 + int(some, 16) and by_trace[(some, "total_tokens")] == 105
    again = monitor(store, share=0.5, batch=7)
    assert (again.scored, again.not_sampled) == (0, 0) and len(trace_score_rows(store)) == len(rows)
    store.add_spans(traces(10, start=30))
    later = monitor(store, share=0.5)
    assert later.scored + later.not_sampled == 10
    assert sum(decision_counts(store).values()) == 40


def test_failed_and_questionless_requests_are_unscorable_with_their_reason(store):
    failed = SpanRecord(
        trace_id="f" * 32, span_id="1" * 16, name="rag", started_at="2026-11-01T01:00:00+00:00", question="q", error="KeyError: 'x'"
    )
    silent = SpanRecord(trace_id="e" * 32, span_id="2" * 16, name="rag", started_at="2026-11-01T01:00:01+00:00", response="r")
    store.add_spans([*traces(3), failed, silent])
    progress = monitor(store, share=1.0)
    assert (progress.scored, progress.unscorable) == (3, 2)
    assert progress.reasons == {"the request failed: KeyError: 'x'": 1, "no span recorded a question": 1}
    assert decision_counts(store) == {"scored": 3, "unscorable": 2}


def test_scoring_pauses_when_the_hour_s_budget_is_spent(store):
    store.add_spans(traces(20))
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    with store.engine.begin() as connection:
        connection.execute(
            insert(trace_scores),
            [
                {
                    "trace_id": "x" * 32,
                    "metric_id": "faithfulness",
                    "value": 1.0,
                    "explanation": "",
                    "failed": False,
                    "details": {},
                    "scored_at": now,
                    "cost_usd": 0.6,
                }
            ],
        )
    paused = monitor(store, share=0.5, max_cost_per_hour=0.5)
    assert paused.paused_by_budget and paused.scored == 0 and paused.not_sampled > 0
    assert "scored" not in decision_counts(store)
    resumed = monitor(store, share=0.5, max_cost_per_hour=1.0)
    assert not resumed.paused_by_budget and resumed.scored > 0
    assert paused.not_sampled + resumed.not_sampled + resumed.scored == 20


def test_settings_are_checked():
    for bad, message in [
        ({"share": 0}, "share of traces"),
        ({"max_cost_per_hour": -1}, "cannot be negative"),
        ({"batch": 0}, "at least 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            MonitorSettings(**bad)


def test_the_monitor_command(tmp_path):
    store = RunStore.open(str(tmp_path / "runs.db"))
    store.add_spans(traces(12))
    store.close()
    done = runner.invoke(app, ["monitor", "-m", "latency_ms", "--store", str(tmp_path / "runs.db"), "--share", "1", "--once", "--no-embed"])
    assert done.exit_code == 0, done.output
    assert "Done: 12 trace(s) scored, 0 not sampled, 0 unscorable; 0 question vector(s) stored." in done.output
    for args, message in [
        (["-m", "token_f1"], "live traces have no reference answer or documents, which these metrics need: token_f1"),
        (["-m", "no_such"], "unknown metric 'no_such'"),
        (["-m", "latency_ms", "--share", "0"], "share of traces to score must be in (0, 1]"),
    ]:
        failed = runner.invoke(app, ["monitor", *args, "--store", str(tmp_path / "runs.db"), "--once"])
        assert failed.exit_code == 2 and message in failed.output, failed.output


def test_the_monitor_refuses_a_store_that_does_not_exist_and_makes_none(tmp_path):
    # It made an empty store at the misspelt path and, with --once, exited 0 having monitored nothing.
    typo = tmp_path / "typo.db"
    done = runner.invoke(app, ["monitor", "-m", "latency_ms", "--store", str(typo), "--share", "1", "--once", "--no-embed"])
    one_line_error(done, f"--store {typo}: no such store")
    assert not typo.exists()


def test_the_budget_counts_what_the_judge_really_cost(store):
    from test_llm_double import ScriptedJudge

    from ragmeter.judges import BatchingEmbedder
    from ragmeter.judges.metering import Usage, record

    class PricedJudge(ScriptedJudge):
        """Each verdict call costs four cents, metered as a real backend meters it."""

        async def verdicts(self, task, shared, items, lang):
            record(Usage(calls=1, prompt_tokens=100, completion_tokens=1, cost_usd=0.04))
            return await super().verdicts(task, shared, items, lang)

    store.add_spans(traces(10))
    judges = Judges(embedder=BatchingEmbedder(), llm=PricedJudge(rule=lambda task, shared, item: 0.9))
    settings = MonitorSettings(share=1.0, max_cost_per_hour=0.1, batch=1)
    progress = run_monitor(store, resolve_metrics(["context_relevance"]), judges, settings, once=True)
    rows = trace_score_rows(store)
    assert progress.paused_by_budget and progress.scored == 3 and len(rows) == 3
    assert sum(r["cost_usd"] for r in rows) == pytest.approx(0.12) and all(0 <= r["value"] <= 1 for r in rows)
    assert rows[0]["usage"]["calls"] == 1 and rows[0]["usage"]["prompt_tokens"] == 100
    assert all(r["settings"] == resolve_metrics(["context_relevance"])[0].config() and r["settings"] for r in rows)


def test_a_free_judge_is_bounded_by_its_calls_per_hour(store):
    from test_llm_double import ScriptedJudge

    from ragmeter.judges import BatchingEmbedder
    from ragmeter.judges.metering import Usage, record

    class FreeJudge(ScriptedJudge):
        """Metered as the local judge meters itself: one call per verdict, no cost."""

        async def verdicts(self, task, shared, items, lang):
            record(Usage(calls=1, prompt_tokens=100))
            return await super().verdicts(task, shared, items, lang)

    store.add_spans(traces(10))
    judges = Judges(embedder=BatchingEmbedder(), llm=FreeJudge(rule=lambda task, shared, item: 0.9))
    metrics = resolve_metrics(["context_relevance"])
    capped = MonitorSettings(share=1.0, max_cost_per_hour=0.01, max_calls_per_hour=4, batch=1)
    progress = run_monitor(store, metrics, judges, capped, once=True)
    rows = trace_score_rows(store)
    assert progress.paused_by_budget and progress.scored == 4 and len(rows) == 4  # the cost cap alone never stops it
    assert all(r["cost_usd"] == 0 and r["usage"]["calls"] == 1 for r in rows)
    more = run_monitor(store, metrics, judges, MonitorSettings(share=1.0, max_calls_per_hour=6, batch=2), once=True)
    assert more.paused_by_budget and more.scored == 2 and len(trace_score_rows(store)) == 6
    rest = run_monitor(store, metrics, judges, MonitorSettings(share=1.0, max_cost_per_hour=0.01), once=True)
    assert not rest.paused_by_budget and rest.scored == 4 and decision_counts(store) == {"scored": 10}


def test_the_monitor_command_s_call_budget(tmp_path):
    store = RunStore.open(str(tmp_path / "runs.db"))
    store.add_spans(traces(5))
    store.close()
    args = ["monitor", "-m", "latency_ms", "--store", str(tmp_path / "runs.db"), "--share", "1", "--once", "--no-embed"]
    paused = runner.invoke(app, [*args, "--max-calls-per-hour", "0"])
    assert paused.exit_code == 0, paused.output
    assert "the last hour reached its budget (0 judge calls)" in paused.output and "Done: 0 trace(s) scored" in paused.output
    refused = runner.invoke(app, [*args, "--max-calls-per-hour", "-1"])
    assert refused.exit_code == 2 and "--max-calls-per-hour" in refused.output and "greater than or equal to 0" in refused.output
    with pytest.raises(ValueError, match="judge calls per hour cannot be negative"):
        MonitorSettings(max_calls_per_hour=-1)
    done = runner.invoke(app, [*args, "--max-calls-per-hour", "100"])
    assert done.exit_code == 0 and "Done: 5 trace(s) scored" in done.output  # latency_ms calls no judge
