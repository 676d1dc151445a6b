"""Dashboard page time with 100 runs and 100,000 traces (target: under 1 s a page).

The store is filled with 100 runs (200 samples, 3 metrics each) and 100,000 traced requests
(a root span and a retrieval span each; the monitor's scores on 10% of them), on a SQLite file
and on PostgreSQL (a throwaway cluster with default fsync, as the store benchmark starts). Every
question's vector is stored the way ``ragmeter traces embed`` (and the monitor) store them: on
SQLite encoded by the packaged encoder and written; on PostgreSQL the same vectors, remembered
from the SQLite pass, are written (so its time is the database's). Each page is requested
through the application in-process (FastAPI's test client: routing, queries, rendering; no
network): once (the first request, which loads what the page keeps), then 5 more; the median
and the slowest of those are reported. The query-drift page is timed twice: on the stored
vectors (the encoder must not be called: checked), and as on an older store without them (an
encoder whose vectors are not stored, so the first request loads the model and encodes).

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
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from store_speed import make_result, postgres

from ragmeter.dashboard.app import create_app
from ragmeter.data.files import write_json, write_text
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.metrics.base import Score
from ragmeter.monitor.ledger import SCORED, Decision, record
from ragmeter.observe import RetrievedContext, SpanRecord
from ragmeter.results import SampleResult
from ragmeter.store import RunStore
from ragmeter.store.vectors import embed_questions, packaged_encoder, vector_coverage

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


class RememberingEncoder:
    """The packaged encoder, remembering every vector it made (the PostgreSQL pass reuses them);
    counts the texts it was asked to encode."""

    def __init__(self, model_name: str = USEEncoder.model_name, vectors: dict[str, np.ndarray] | None = None):
        self.model_name = model_name
        self.vectors = vectors if vectors is not None else {}
        self.encoded = 0
        self._use = packaged_encoder()  # one BLAS thread, as traces embed and the monitor use it

    def encode(self, texts: list[str]) -> np.ndarray:
        self.encoded += len(texts)
        missing = [t for t in texts if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self._use.encode(missing), strict=True))
        return np.stack([self.vectors[t] for t in texts])


def store_vectors(store: RunStore, encoder: RememberingEncoder) -> dict[str, Any]:
    """Store every question's vector as ``ragmeter traces embed`` does; how long it took."""
    began = time.perf_counter()
    stored = embed_questions(store, encoder)
    seconds = time.perf_counter() - began
    asked, embedded = vector_coverage(store, encoder.model_name)
    assert asked == embedded == stored, (asked, embedded, stored)
    print(f"{stored} question vectors stored in {seconds:.0f} s", flush=True)
    return {"stored": stored, "seconds": seconds, "per_second": stored / seconds}


def time_page(client: TestClient, label: str, path: str) -> dict[str, Any]:
    """One page: its first request, then the median and slowest of 5 more."""
    began = time.perf_counter()
    assert client.get(path).status_code == 200, path
    first = time.perf_counter() - began
    seconds = []
    for _ in range(5):
        began = time.perf_counter()
        client.get(path)
        seconds.append(time.perf_counter() - began)
    row = {"page": label, "path": path, "first_s": first, "median_s": statistics.median(seconds), "max_s": max(seconds)}
    print(row, flush=True)
    return row


def time_pages(store: RunStore, traces: int) -> list[dict[str, Any]]:
    reading = RememberingEncoder()
    client = TestClient(create_app(store, encoder=reading))
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
        "query drift (last day against the day before, 100 + 100 questions, stored vectors)": "/drift/queries?days=1",
    }
    rows = [time_page(client, label, path) for label, path in pages.items()]
    assert reading.encoded == 0, f"the query-drift page encoded {reading.encoded} questions although every vector is stored"
    unstored = RememberingEncoder(model_name="use-multilingual-v3 (vectors not stored)")
    older = TestClient(create_app(store, encoder=unstored))
    label = "query drift as on an older store without vectors (first request loads the encoder and encodes the 100 + 100)"
    rows.append(time_page(older, label, "/drift/queries?days=1"))
    rows[-1]["encoded_on_demand"] = unstored.encoded
    if "p = " in older.get("/drift/queries?days=1").text:  # both windows had questions: they were encoded, once
        assert unstored.encoded > 0 and "had no stored vector" in older.get("/drift/queries?days=1").text
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--postgres", help="a PostgreSQL URL to create the benchmark database on (default: start a cluster)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    backends: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        sqlite = RunStore.open(str(Path(scratch) / "runs.db"))
        began = time.perf_counter()
        fill(sqlite, args.runs, args.traces)
        print(f"SQLite filled in {time.perf_counter() - began:.0f} s", flush=True)
        encoder = RememberingEncoder()
        vectors = store_vectors(sqlite, encoder)
        backends.append({"store": "SQLite (file)", "vectors": vectors, "pages": time_pages(sqlite, args.traces)})
        sqlite.close()
        with postgres(args.postgres) as url:
            server = RunStore.open(url)
            fill(server, args.runs, args.traces)
            vectors = store_vectors(server, RememberingEncoder(vectors=encoder.vectors))
            backends.append({"store": "PostgreSQL 15 (local cluster)", "vectors": vectors, "pages": time_pages(server, args.traces)})
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
        "Question vectors, stored before the pages are timed as `ragmeter traces embed` stores them: "
        + "; ".join(
            f"{b['store']}: {b['vectors']['stored']:,} in {b['vectors']['seconds']:.0f} s ({b['vectors']['per_second']:.0f}/s"
            + (", encoded by the packaged encoder and written)" if index == 0 else ", the same vectors written again: database time only)")
            for index, b in enumerate(backends)
        )
        + ". The query-drift page on stored vectors never called the encoder (checked).",
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
