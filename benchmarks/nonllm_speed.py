"""Speed and memory of the model-free metric set (lexical, retrieval, checks, embeddings).

Two variants, each in its own process so peak memory is its own:
- ``repeated``: the bundled examples repeated to N samples, as the README describes. Copies
  share their texts, so the embedding cache serves every copy after the first.
- ``unique``: the same samples, with every text made unique per copy (a tag appended), so
  nothing is served from a cache: the worst case for a data set of N distinct samples.

Usage:
    python benchmarks/nonllm_speed.py [--samples 1000] [--out benchmarks/results]

Writes ``nonllm_speed.json`` and ``nonllm_speed.md`` into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def build_samples(n: int, unique: bool) -> list[dict]:
    rows = [json.loads(line) for f in ("dev_platform_en.jsonl", "dev_platform_zh.jsonl") for line in (EXAMPLES / f).open(encoding="utf-8")]
    samples = []
    for i in range(n):
        row = dict(rows[i % len(rows)])
        copy = i // len(rows)
        row["id"] = f"{row['id']}-{copy}"
        if unique:
            tag = f" (case {copy})"
            for field in ("user_input", "response", "reference"):
                row[field] = row[field] + tag
            for field in ("retrieved_contexts", "reference_contexts"):
                row[field] = [c + tag for c in row[field]]
        samples.append(row)
    return samples


def run_variant(n: int, unique: bool) -> dict:
    """Evaluate in this process and measure; called in a child process."""
    import ragmeter
    from ragmeter.run.engine import applicable_metrics

    dataset = ragmeter.load_dataset(build_samples(n, unique))
    metrics = applicable_metrics(dataset)
    judges = ragmeter.Judges()
    # Load the embedding model before timing: a one-off cost, not a per-sample one.
    import asyncio

    asyncio.run(judges.embedder.embed(["warm-up"]))
    started = time.perf_counter()
    result = ragmeter.Evaluator(metrics, judges=judges, progress=False).run(dataset)
    seconds = time.perf_counter() - started
    scored = sum(a["n_scored"] for a in result.aggregates.values())
    failed = sum(a["n_failed"] for a in result.aggregates.values())
    return {
        "variant": "unique" if unique else "repeated",
        "samples": n,
        "metrics": len(metrics),
        "scores": n * len(metrics),
        "scored": scored,
        "failed": failed,
        "seconds": round(seconds, 3),
        "samples_per_second": round(n / seconds, 1),
        "embedder_texts_encoded": result.run["embedder"]["texts_encoded"],
        "embedder_seconds": result.run["embedder"]["seconds"],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--child", choices=["repeated", "unique"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_variant(args.samples, args.child == "unique")))
        return
    rows = []
    for variant in ("repeated", "unique"):
        output = subprocess.run(
            [sys.executable, __file__, "--samples", str(args.samples), "--child", variant],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        rows.append(json.loads(output.strip().splitlines()[-1]))
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "results": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "nonllm_speed.json").write_text(json.dumps(report, indent=1))
    lines = [
        "# Model-free metric set: speed and memory",
        "",
        f"{report['date']}, commit {report['commit']}, {report['machine']['cpus']} CPUs, Python {report['machine']['python']}.",
        "Command: `python benchmarks/nonllm_speed.py --samples " + str(args.samples) + "`",
        "",
        "| variant | samples | metrics | seconds | samples/s | texts embedded | embedding s | failed | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['variant']} | {r['samples']} | {r['metrics']} | {r['seconds']} | {r['samples_per_second']} | "
            f"{r['embedder_texts_encoded']} | {r['embedder_seconds']} | {r['failed']} | {r['peak_rss_mb']} |"
        )
    (args.out / "nonllm_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    main()
