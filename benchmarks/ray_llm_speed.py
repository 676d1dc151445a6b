"""LLM samples per second on Ray against llama.cpp servers: 1 worker, 2 workers, and the
single-process engine, side by side in one run.

A fixed slice of the bundled examples (the first ``--samples / 2`` of ``dev_platform_en``
and of ``dev_platform_zh``) is scored with ``--metrics`` (default ``faithfulness``) by:

1. the single-process engine with the embedded judge (llama-cpp-python in this process,
   ``--threads`` threads, its default settings: prefix reuse, the 3 premise sentences
   closest to each claim); skipped with ``--no-embedded``;
2. the single-process engine judging through llama-cpp-python's OpenAI-compatible server A
   (1 thread, single verdict mode: one request per claim, P(yes) from log-probabilities);
3. Ray with 1 worker judging through server A;
4. Ray with 2 workers, one per server (A and B, 1 thread each: 2 cores hold 2 servers).

Every run has the answer cache off and one pair at a time per worker (a llama.cpp server
answers one request at a time). Shards are one sample each, so the two workers share the
slice evenly. Runs 3 and 4 start a local Ray cluster with one CPU per worker; its start-up is
timed apart and left out of samples/s (the workers' own start-up is counted). The scores of
the server runs are checked to agree within 0.02 (a server's prompt-prefix reuse moves
P(yes) slightly); the embedded judge reads fewer premise sentences and is compared only in
the table. Run model jobs one at a time on a shared machine (``flock``).

Usage:
    python benchmarks/ray_llm_speed.py [--samples 6] [--metrics faithfulness]
        [--threads 2] [--no-embedded] [--out benchmarks/results]

Writes ``ray_llm_speed.json`` and ``ray_llm_speed.md`` into --out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from endpoint_verdicts import MODEL, start_server

from ragmeter.bench.report import git_commit
from ragmeter.data import Dataset, as_dataset, load_dataset
from ragmeter.judges import Judges
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.metering import Usage
from ragmeter.results import Result
from ragmeter.run.engine import Evaluator
from ragmeter.run.ray_executor import RayExecutor

ROOT = Path(__file__).resolve().parents[1]
N_CTX = 4096
#: Server runs whose scores differ by more than this from the first server run fail the benchmark.
TOLERANCE = 0.02


def fixed_slice(samples: int) -> Dataset:
    """The first ``samples // 2`` English and ``samples - samples // 2`` Chinese examples."""
    english = [loaded.sample for loaded in load_dataset(ROOT / "examples" / "dev_platform_en.jsonl")]
    chinese = [loaded.sample for loaded in load_dataset(ROOT / "examples" / "dev_platform_zh.jsonl")]
    return as_dataset(english[: samples // 2] + chinese[: samples - samples // 2])


def endpoint(url: str) -> JudgeConfig:
    """The judge settings of one server: single verdict mode, one request at a time, no cache."""
    return JudgeConfig(base_url=url, model=MODEL, verdict_mode="single", cache=False, concurrency=1, timeout=900, context_window=N_CTX)


def run_once(
    name: str, workers: int, dataset: Dataset, metrics: list[str], judge: JudgeConfig, out: Path, ray_judges: list[JudgeConfig] | None
) -> tuple[dict[str, Any], Result]:
    """One configuration: ``ray_judges`` ``None`` runs the single-process engine with ``judge``,
    else Ray with ``workers`` workers spread over ``ray_judges``. Returns its row and result."""
    import ray

    startup, executor = 0.0, None
    if ray_judges is not None:
        began = time.perf_counter()
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        startup = time.perf_counter() - began
        executor = RayExecutor(workers=workers, judge=ray_judges, concurrency=1, samples_per_shard=1)
    llm = judge.build()
    evaluator = Evaluator(metrics, judges=Judges(llm=llm), concurrency=1, out_dir=out, resume=False, executor=executor)

    async def scored() -> tuple[Result, float]:
        began = time.perf_counter()
        try:
            return await evaluator.arun(dataset), time.perf_counter() - began
        finally:
            await llm.aclose()  # on the loop its connections were made on

    try:
        result, seconds = asyncio.run(scored())
    finally:
        if ray_judges is not None:
            ray.shutdown()
    return summarise(name, workers, result, seconds, startup), result


def summarise(name: str, workers: int, result: Result, seconds: float, startup: float) -> dict[str, Any]:
    """A configuration's row: samples/s, seconds per sample, and judge calls and tokens per sample."""
    usage = Usage()
    for sample in result.samples:
        for used in sample.usage.values():
            usage.add(used)
    n = len(result.samples)
    failed = sum(1 for s in result.samples for score in s.scores.values() if score.failed)
    return {
        "configuration": name,
        "workers": workers,
        "samples": n,
        "seconds": round(seconds, 1),
        "samples_per_s": round(n / seconds, 4),
        "seconds_per_sample": round(seconds / n, 2),
        "calls_per_sample": round(usage.calls / n, 2),
        "prompt_tokens_per_sample": round(usage.prompt_tokens / n, 1),
        "prompt_tokens_evaluated_per_sample": round(usage.prompt_tokens_evaluated / n, 1),
        "completion_tokens_per_sample": round(usage.completion_tokens / n, 1),
        "failed_scores": failed,
        "cluster_startup_s": round(startup, 2),
        "means": {m["id"]: result.aggregates[m["id"]]["mean"] for m in result.metrics},
    }


def values(result: Result) -> dict[tuple[str, str], float | None]:
    """Every (sample, metric) score value of a run."""
    return {(s.key, metric): score.value for s in result.samples for metric, score in s.scores.items()}


def check_agreement(reference: Result, other: Result, name: str) -> float:
    """The largest score difference between two server runs; exits when above :data:`TOLERANCE`
    or when one scored a pair the other did not."""
    a, b = values(reference), values(other)
    if a.keys() != b.keys() or any((a[k] is None) != (b[k] is None) for k in a):
        raise SystemExit(f"{name}: scored other pairs than the single-process server run")
    gap = max((abs(a[k] - b[k]) for k in a if a[k] is not None and b[k] is not None), default=0.0)  # type: ignore[operator]
    if gap > TOLERANCE:
        raise SystemExit(f"{name}: a score differs by {gap:.3f} from the single-process server run (tolerance {TOLERANCE})")
    return gap


def measure(args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    """Every configuration in turn (see the module docstring)."""
    dataset, rows = fixed_slice(args.samples), []
    if args.embedded:
        embedded = JudgeConfig(backend="local", threads=args.threads, cache=False, context_window=N_CTX)
        rows.append(
            run_once(f"one process, embedded judge ({args.threads} threads)", 1, dataset, args.metrics, embedded, work / "e", None)[0]
        )
    servers = [start_server(1, work / f"server-{name}.log") for name in "ab"]
    try:
        a, b = (endpoint(url) for _, url in servers)
        row, reference = run_once("one process, server A", 1, dataset, args.metrics, a, work / "l", None)
        rows.append(row | {"max_score_gap": 0.0})
        for workers in (1, 2):
            row, result = run_once(f"Ray, {workers} worker(s)", workers, dataset, args.metrics, a, work / f"r{workers}", [a, b][:workers])
            rows.append(row | {"max_score_gap": round(check_agreement(reference, result, row["configuration"]), 4)})
    finally:
        for server, _ in servers:
            server.terminate()
            server.wait(30)
    return rows


def write(rows: list[dict[str, Any]], args: argparse.Namespace, command: str) -> None:
    """``ray_llm_speed.json`` and ``.md`` into ``args.out`` (each written whole, then renamed)."""
    header = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "cpus": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "command": command,
    }
    table = [
        "| configuration | samples | seconds | samples/s | s / sample | calls / sample | prompt tokens / sample | tokens evaluated / sample "
        "| completion tokens / sample | largest score gap | cluster start-up s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['configuration']} | {r['samples']} | {r['seconds']} | {r['samples_per_s']} | {r['seconds_per_sample']} | "
            f"{r['calls_per_sample']} | {r['prompt_tokens_per_sample']} | {r['prompt_tokens_evaluated_per_sample']} | "
            f"{r['completion_tokens_per_sample']} | {r.get('max_score_gap', '–')} | {r['cluster_startup_s']} |"
            for r in rows
        ),
    ]
    lines = [
        f"# LLM metrics on Ray against llama.cpp servers: {', '.join(args.metrics)}",
        "",
        f"{header['date']}, commit {header['commit']}, {header['cpus']} CPUs (shared; load average {header['load_average_1min']} "
        f"at the end), Python {header['python']}. Command: `{command}`.",
        "The packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M; each llama-cpp-python server has 1 thread; no answer cache; one pair at a "
        "time per worker. 'largest score gap': against the single-process server run (every Ray run must stay within 0.02).",
        "",
        *table,
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("ray_llm_speed.json", json.dumps({**header, "rows": rows}, indent=1) + "\n"),
        ("ray_llm_speed.md", "\n".join(lines) + "\n"),
    ):
        partial = args.out / f".{name}.partial"
        partial.write_text(text, encoding="utf-8")
        partial.replace(args.out / name)
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=6, help="Samples in the slice (half English, half Chinese).")
    parser.add_argument("--metrics", nargs="+", default=["faithfulness"], help="LLM metrics to score.")
    parser.add_argument("--threads", type=int, default=2, help="Threads of the embedded judge (run 1).")
    parser.add_argument("--no-embedded", dest="embedded", action="store_false", help="Skip run 1.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    command = "python benchmarks/ray_llm_speed.py " + " ".join(sys.argv[1:])
    with tempfile.TemporaryDirectory() as folder:
        rows = measure(args, Path(folder))
    write(rows, args, command.strip())


if __name__ == "__main__":
    sys.exit(main())
