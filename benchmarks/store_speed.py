"""Tracing overhead per request and run-store write throughput (SQLite and PostgreSQL).

Tracing: a stand-in RAG request (a function that does a fixed small amount of work) called
plainly and with ``@ragmeter.trace`` plus one nested ``ragmeter.span`` that records three
retrieved contexts, tokens and cost: with the JSON-lines file sink and OpenTelemetry off, then
with OpenTelemetry's API and no SDK configured (what an application without a collector pays).
Each variant is timed call by call; the overhead is the traced p50 minus the plain p50.
OpenTelemetry here is the user's own tracing export (spans of their application, for their
collector, off unless they install the [otel] extra), not telemetry: ragmeter sends nothing
anywhere, and the benchmark exports to no collector.

Store: a run of N scored samples (3 metrics each, with explanations, details and usage) saved
with ``RunStore.save`` into a fresh SQLite file and into a fresh PostgreSQL database (a
throwaway cluster started as the store's integration tests do, unless --postgres gives a URL).

Usage:
    python benchmarks/store_speed.py [--calls 20000] [--samples 10000] [--postgres URL] [--out benchmarks/results]

Writes ``store_speed.json`` and ``store_speed.md`` into --out.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path

import ragmeter
from ragmeter import observe
from ragmeter.data.files import write_json, write_text
from ragmeter.data.schema import Sample
from ragmeter.judges.metering import Usage
from ragmeter.metrics import create_metric
from ragmeter.metrics.base import Score
from ragmeter.results import Result, SampleResult
from ragmeter.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
CONTEXTS = ["Forge CI runs jobs on a shared runner pool with three sizes." * 3, "Small runners have 2 vCPU.", "Medium: 4 vCPU."]


def work(question: str) -> str:
    """The stand-in request: a little CPU work, the same in every variant."""
    return question.upper()[::-1] + str(sum(range(200)))


@ragmeter.trace
def traced_request(question: str) -> str:
    with ragmeter.span("retrieve", kind="RETRIEVER") as step:
        step.retrieved(CONTEXTS, ids=["a", "b", "c"], scores=[0.9, 0.8, 0.7])
    observe.current_span().set(model="m", prompt_tokens=800, completion_tokens=40, cost_usd=0.0004)
    return work(question)


def time_calls(function: Callable[[str], str], calls: int) -> list[float]:
    """Milliseconds of each call (after 500 warm-up calls)."""
    for _ in range(500):
        function("warm up?")
    timings = []
    for i in range(calls):
        began = time.perf_counter()
        function(f"question {i}?")
        timings.append((time.perf_counter() - began) * 1000)
    return timings


def summary(timings: list[float]) -> dict[str, float]:
    ordered = sorted(timings)
    return {"p50_ms": ordered[len(ordered) // 2], "p95_ms": ordered[int(len(ordered) * 0.95)], "mean_ms": statistics.fmean(ordered)}


def tracing_rows(calls: int, directory: Path) -> list[dict]:
    plain = summary(time_calls(work, calls))
    rows = [{"variant": "plain function (no tracing)", **plain, "overhead_p50_ms": 0.0}]
    for label, otel in (("@trace + span, JSONL sink, OTel off", False), ("@trace + span, JSONL sink, OTel API without SDK", True)):
        observe.configure(directory / f"traces-{otel}.jsonl", otel=otel)
        measured = summary(time_calls(traced_request, calls))
        rows.append({"variant": label, **measured, "overhead_p50_ms": measured["p50_ms"] - plain["p50_ms"]})
    _install_otel_sdk()
    observe.configure(directory / "traces-sdk.jsonl")
    measured = summary(time_calls(traced_request, calls))
    rows.append(
        {
            "variant": "@trace + span, JSONL sink, OTel SDK (batch processor, in-memory exporter)",
            **measured,
            "overhead_p50_ms": measured["p50_ms"] - plain["p50_ms"],
        }
    )
    observe.configure(otel=False)
    return rows


def _install_otel_sdk() -> None:
    """A global tracer provider that records every span and exports it in batches to memory."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    trace.set_tracer_provider(provider)


def make_result(n: int) -> Result:
    """A run of ``n`` samples scored by three metrics."""
    metrics = [create_metric(name).info() for name in ("token_f1", "faithfulness", "answer_relevancy")]
    samples = []
    for i in range(n):
        sample = Sample(id=f"s{i}", user_input=f"question {i}?", response="answer " * 20, retrieved_contexts=CONTEXTS, reference="ref")
        scores = {
            "token_f1": Score(0.5, "12 shared tokens", details={"overlap": 12, "precision": 0.4}),
            "faithfulness": Score(0.75, "3 of 4 claims supported", details={"claims": [{"claim": "c", "verdict": True}] * 4}),
            "answer_relevancy": Score.unscored("the judge failed: timeout", failed=True) if i % 50 == 0 else Score(0.9, "relevant"),
        }
        usage = {
            m: Usage(calls=4, prompt_tokens=900, completion_tokens=12, seconds=0.5, cost_usd=0.0003)
            for m in ("faithfulness", "answer_relevancy")
        }
        samples.append(
            SampleResult(
                key=sample.id,
                sample=sample,
                source="data.jsonl",
                location=f"line {i + 1}",
                scores=scores,
                usage=usage,
                seconds=dict.fromkeys(scores, 0.1),
            )
        )
    return Result(samples=samples, metrics=metrics, run={"started_at": datetime.now(timezone.utc).isoformat(), "n_samples": n})


def store_row(backend: str, url: str, result: Result) -> dict:
    store = RunStore.open(url)
    _ = result.aggregates  # computed by `ragmeter eval` before it stores a run; not timed here
    began = time.perf_counter()
    store.save(result, commit="bench")
    seconds = time.perf_counter() - began
    rows = store.count("scores")
    store.close()
    n = len(result.samples)
    return {"backend": backend, "samples": n, "score_rows": rows, "seconds": seconds, "samples_per_s": n / seconds}


@contextlib.contextmanager
def postgres(url: str | None) -> Iterator[str]:
    """A fresh database on ``url``'s server, or on a throwaway cluster."""
    import psycopg
    from psycopg import sql

    with contextlib.ExitStack() as stack:
        if url is None:
            sys.path.insert(0, str(ROOT / "tests" / "integration"))
            from postgres_server import throwaway_cluster

            url = stack.enter_context(throwaway_cluster(durable=True))
        name = f"bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        yield url.rsplit("/", 1)[0] + f"/{name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20000, help="traced calls per variant")
    parser.add_argument("--samples", type=int, default=10000, help="scored samples per stored run")
    parser.add_argument("--postgres", help="a PostgreSQL URL to create the benchmark database on (default: start a cluster)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder to write to")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tracing = tracing_rows(args.calls, Path(scratch))
        result = make_result(args.samples)
        stores = [store_row("SQLite (file)", str(Path(scratch) / "runs.db"), result)]
        with postgres(args.postgres) as url:
            stores.append(store_row("PostgreSQL 15 (local cluster, default fsync)" if args.postgres is None else "PostgreSQL", url, result))
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip(),
        "command": " ".join(["python benchmarks/store_speed.py", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "tracing": tracing,
        "store": stores,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "store_speed.json", report)
    write_text(args.out / "store_speed.md", render(report))
    print(render(report))


def render(report: dict) -> str:
    lines = [
        "# Tracing overhead and run-store write throughput",
        "",
        f"{report['date']}, commit {report['commit']}, {report['machine']['cpus']} CPUs (shared), Python {report['machine']['python']}.",
        f"Command: `{report['command']}`",
        "",
        "## Tracing, per request (target: overhead under 1 ms at p50)",
        "",
        "| variant | p50 ms | p95 ms | mean ms | overhead at p50 ms |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {r['variant']} | {r['p50_ms']:.4f} | {r['p95_ms']:.4f} | {r['mean_ms']:.4f} | {r['overhead_p50_ms']:.4f} |"
            for r in report["tracing"]
        ),
        "",
        "## Store writes, one run saved in one transaction (target: at least 1,000 scored samples/s)",
        "",
        "| store | samples | score rows | seconds | samples/s |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {r['backend']} | {r['samples']} | {r['score_rows']} | {r['seconds']:.2f} | {r['samples_per_s']:,.0f} |"
            for r in report["store"]
        ),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
