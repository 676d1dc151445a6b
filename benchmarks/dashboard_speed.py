"""Dashboard page time with 100 runs and 100,000 traces (target: under 1 s a page).

The store is filled with 100 runs (200 samples, 3 metrics each) and 100,000 traced requests
(a root span and a retrieval span each; the monitor's scores on 10% of them), on a SQLite file
and on PostgreSQL (a throwaway cluster with default fsync, as the store benchmark starts). Each
page is requested through the application in-process (FastAPI's test client: routing, queries,
rendering; no network), 5 times after one warm-up; the median and the slowest are reported.

Usage:
    python benchmarks/dashboard_speed.py [--runs 100] [--traces 100000] [--out benchmarks/results]

Writes ``dashboard_speed.json`` and ``dashboard_speed.md`` into --out.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from fastapi.testclient import TestClient
from store_speed import make_result, postgres

from ragmeter.dashboard.app import create_app
from ragmeter.data.files import write_json, write_text
from ragmeter.metrics.base import Score
from ragmeter.monitor.ledger import SCORED, Decision, record
from ragmeter.observe import RetrievedContext, SpanRecord
from ragmeter.results import SampleResult
from ragmeter.store import RunStore

ROOT = Path(__file__).resolve().parents[1]


def fill(store: RunStore, runs: int, traces: int) -> None:
    """``runs`` runs of 200 samples and ``traces`` requests, 10% of them scored by the monitor."""
    for day in range(runs):
        result = make_result(200)
        result.run["started_at"] = f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T00:00:00+00:00"
        store.save(result, commit="bench")
    batch: list[SpanRecord] = []
    for i in range(traces):
        root = SpanRecord(
            trace_id=f"{i:032x}",
            span_id=f"{2 * i:016x}",
            name="rag",
            started_at=f"2026-11-{1 + i // 86400 % 28:02d}T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000+00:00",
            question=f"question {i}?",
            response=f"answer {i}",
            latency_ms=100.0 + i % 50,
        )
        retrieval = SpanRecord(
            trace_id=root.trace_id,
            span_id=f"{2 * i + 1:016x}",
            parent_id=root.span_id,
            name="retrieve",
            kind="RETRIEVER",
            started_at=root.started_at,
            contexts=[RetrievedContext(f"context {i}", f"doc-{i % 500}", 0.8)],
        )
        batch += [root, retrieval]
        if len(batch) >= 10_000:
            store.add_spans(batch)
            batch = []
    store.add_spans(batch)
    scored = SampleResult(
        key="t",
        sample=make_result(1).samples[0].sample,
        source="",
        location="",
        scores={"faithfulness": Score(0.8, "4 of 5 claims supported")},
    )
    decisions = [Decision(f"{i:032x}", SCORED, result=scored) for i in range(0, traces, 10)]
    for start in range(0, len(decisions), 5000):
        record(store, decisions[start : start + 5000], "2026-11-30T00:00:00+00:00")  # fmt: skip


def time_pages(store: RunStore, traces: int) -> list[dict]:
    client = TestClient(create_app(store))
    runs = [r["id"] for r in store.runs()]
    pages = {
        "leaderboard (/)": "/",
        "one run's report (200 samples)": f"/runs/{runs[0]}",
        "two runs compared": f"/compare?a={runs[1]}&b={runs[0]}",
        "metric trend (100 runs)": "/trends/token_f1",
        "drift panel (3 metrics x 100 runs, monitor days)": "/drift",
        "traces, first page": "/traces",
        "traces, last page": f"/traces?page={-(-traces // 50)}",
        "one trace": f"/traces/{traces - 1:032x}",
        "query drift (last day against the day before, 100 + 100 questions)": "/drift/queries?days=1",
    }
    rows = []
    for label, path in pages.items():
        began = time.perf_counter()
        assert client.get(path).status_code == 200, path
        first = time.perf_counter() - began  # the first request also loads what the page keeps (the encoder, vectors)
        seconds = []
        for _ in range(5):
            began = time.perf_counter()
            client.get(path)
            seconds.append(time.perf_counter() - began)
        rows.append({"page": label, "path": path, "first_s": first, "median_s": statistics.median(seconds), "max_s": max(seconds)})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--postgres", help="a PostgreSQL URL to create the benchmark database on (default: start a cluster)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    backends = []
    with tempfile.TemporaryDirectory() as scratch:
        sqlite = RunStore.open(str(Path(scratch) / "runs.db"))
        began = time.perf_counter()
        fill(sqlite, args.runs, args.traces)
        print(f"SQLite filled in {time.perf_counter() - began:.0f} s", flush=True)
        backends.append({"store": "SQLite (file)", "pages": time_pages(sqlite, args.traces)})
        sqlite.close()
        with postgres(args.postgres) as url:
            server = RunStore.open(url)
            fill(server, args.runs, args.traces)
            backends.append({"store": "PostgreSQL 15 (local cluster)", "pages": time_pages(server, args.traces)})
            server.close()
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip(),
        "command": " ".join(["python benchmarks/dashboard_speed.py", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": args.runs,
        "traces": args.traces,
        "backends": backends,
    }
    lines = [
        f"# Dashboard page time: {args.runs} runs and {args.traces:,} traces (target: under 1 s a page)",
        "",
        f"{report['date']}, commit {report['commit']}, {report['machine']['cpus']} CPUs (shared), Python {report['machine']['python']}.",
        f"Command: `{report['command']}`. In-process requests (FastAPI test client): the first, then 5 more.",
        "",
        "| page | " + " | ".join(f"{b['store']} first request s | median s | max s" for b in backends) + " |",
        "|---|" + "---:|---:|---:|" * len(backends),
    ]
    for index, row in enumerate(backends[0]["pages"]):
        cells = " | ".join(
            f"{b['pages'][index]['first_s']:.3f} | {b['pages'][index]['median_s']:.3f} | {b['pages'][index]['max_s']:.3f}" for b in backends
        )
        lines.append(f"| {row['page']} | {cells} |")
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "dashboard_speed.json", report)
    write_text(args.out / "dashboard_speed.md", "\n".join([*lines, ""]))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
