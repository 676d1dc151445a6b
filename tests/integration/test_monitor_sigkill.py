"""A real `ragmeter monitor` process killed with SIGKILL mid-way resumes without scoring any
trace twice: afterwards every trace has exactly one decision, and every trace in the share
exactly one score per metric, as an uninterrupted monitor gives. On a SQLite file and on
PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ragmeter.monitor import in_share
from ragmeter.monitor.ledger import decision_counts, trace_score_rows
from ragmeter.observe import SpanRecord
from ragmeter.store import RunStore

pytestmark = pytest.mark.integration

TRACES = 3000
SHARE = 0.5
METRICS = "latency_ms,total_tokens"


def _store_with_traces(url: str) -> RunStore:
    store = RunStore.open(url)
    spans = []
    for i in range(TRACES):
        span = SpanRecord(
            trace_id=f"{i:032x}",
            span_id=f"{i:016x}",
            name="rag",
            started_at=f"2026-11-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000+00:00",
        )
        span.question, span.response, span.latency_ms, span.prompt_tokens, span.completion_tokens = f"q{i}", "r", float(i), 10, 1
        spans.append(span)
    store.add_spans(spans)
    return store


def _monitor(path) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "ragmeter",
        "monitor",
        "-m",
        METRICS,
        "--store",
        str(path),
        "--share",
        str(SHARE),
        "--batch",
        "5",
        "--once",
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def test_sigkill_then_resume_scores_each_trace_once(store_url):
    store = _store_with_traces(store_url)
    victim = _monitor(store_url)
    try:
        deadline = time.monotonic() + 120
        while sum(decision_counts(store).values()) < 200:
            assert victim.poll() is None, victim.stderr.read().decode() if victim.stderr else ""
            assert time.monotonic() < deadline, "the monitor decided nothing in 120 s"
            time.sleep(0.05)
        os.killpg(victim.pid, signal.SIGKILL)
    finally:
        victim.wait(timeout=30)
    at_kill = decision_counts(store)
    decided_when_killed = sum(at_kill.values())
    assert victim.returncode == -signal.SIGKILL and decided_when_killed < TRACES

    resumed = _monitor(store_url)
    _, stderr = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, stderr.decode()
    expected = {f"{i:032x}" for i in range(TRACES) if in_share(f"{i:032x}", SHARE)}
    rows = trace_score_rows(store)
    assert len(rows) == 2 * len(expected) and {r["trace_id"] for r in rows} == expected
    assert decision_counts(store) == {"scored": len(expected), "not_sampled": TRACES - len(expected)}
    remaining = len(expected) - at_kill.get("scored", 0)
    assert f"Done: {remaining} trace(s) scored, {TRACES - len(expected) - at_kill.get('not_sampled', 0)} not sampled" in stderr.decode()
    print(f"killed after {decided_when_killed} of {TRACES} decisions; resumed to {len(expected)} scored traces")
    store.close()
