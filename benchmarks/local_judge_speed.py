"""Speed of the embedded local judge, and what prefix reuse buys.

Runs the five core LLM metrics (or those --metrics names) with the packaged local model on
a seeded subset of the bundled examples (half English, half Chinese), in two modes side by
side, sample by sample: with prefix reuse (the default: a task's few-shot head is read once per
run, for verdicts and generated answers alike; a sample's contexts once per sample) and with
every prompt read from scratch. Neither uses the answer cache. The scores of the two modes must
be identical; the benchmark fails otherwise.

Usage:
    python benchmarks/local_judge_speed.py [--samples 8] [--metrics faithfulness,...] [--out benchmarks/results]

Writes ``local_judge_speed.json`` and ``local_judge_speed.md`` into --out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import ragmeter
from ragmeter.judges import Judges
from ragmeter.judges.local import LocalJudge
from ragmeter.judges.metering import Usage
from ragmeter.run.engine import CORE_LLM_METRICS

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def subset(n: int, seed: int = 0) -> list[dict]:
    """``n`` samples, half from each language, drawn with a fixed seed."""
    chosen = []
    for name, share in (("dev_platform_en.jsonl", n - n // 2), ("dev_platform_zh.jsonl", n // 2)):
        rows = [json.loads(line) for line in (EXAMPLES / name).open(encoding="utf-8")]
        chosen += random.Random(seed).sample(rows, share)
    return chosen


def measure(samples: list[dict], metrics: tuple[str, ...]) -> dict[str, tuple[dict, dict]]:
    """Per-mode figures and scores of ``metrics``. The two modes run side by side, sample by
    sample, so that load from other work on the machine hits both alike."""
    judges = {"with_reuse": LocalJudge(reuse_prefix=True), "from_scratch": LocalJudge(reuse_prefix=False)}
    seconds = {mode: dict.fromkeys(metrics, 0.0) for mode in judges}
    usage = {mode: {m: Usage() for m in metrics} for mode in judges}
    scores: dict[str, dict] = {mode: {} for mode in judges}
    failed = {mode: dict.fromkeys(metrics, 0) for mode in judges}
    for sample in ragmeter.load_dataset(samples):
        one = ragmeter.Dataset(samples=[sample])
        for mode, judge in judges.items():
            # One pair at a time: per-sample seconds are then the sample's own, not queueing.
            result = ragmeter.Evaluator(list(metrics), judges=Judges(llm=judge), concurrency=1, progress=False).run(one)
            (done,) = result.samples
            for metric in metrics:
                seconds[mode][metric] += done.seconds[metric]
                usage[mode][metric].add(done.usage[metric])
                scores[mode][(done.key, metric)] = (done.scores[metric].value, done.scores[metric].reason)
                failed[mode][metric] += done.scores[metric].failed
    n = len(samples)
    out = {}
    for mode, judge in judges.items():
        figures = {"seconds_total": round(sum(seconds[mode].values()), 1)}
        for metric in metrics:
            u = usage[mode][metric]
            figures[metric] = {
                "seconds_per_sample": round(seconds[mode][metric] / n, 2),
                "calls_per_sample": round(u.calls / n, 2),
                "prompt_tokens_per_sample": round(u.prompt_tokens / n, 1),
                "prompt_tokens_evaluated_per_sample": round(u.prompt_tokens_evaluated / n, 1),
                "failed": failed[mode][metric],
            }
        out[mode] = (figures, scores[mode])
        asyncio.run(judge.aclose())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--metrics", default=",".join(CORE_LLM_METRICS), help="comma-separated LLM metrics")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args()
    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    samples = subset(args.samples)
    measured = measure(samples, metrics)
    (with_reuse, scores_reuse), (from_scratch, scores_scratch) = measured["with_reuse"], measured["from_scratch"]
    if scores_reuse != scores_scratch:
        differing = [k for k in scores_reuse if scores_reuse[k] != scores_scratch.get(k)]
        sys.exit(f"prefix reuse changed scores: {differing[:5]}")
    speedup = {
        metric: round(from_scratch[metric]["seconds_per_sample"] / with_reuse[metric]["seconds_per_sample"], 2) for metric in metrics
    }
    speedup["all"] = round(from_scratch["seconds_total"] / with_reuse["seconds_total"], 2)
    n = len(samples)
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "judge": LocalJudge().describe(),
        "samples": n,
        "metrics": list(metrics),
        "with_reuse": with_reuse,
        "from_scratch": from_scratch,
        "speedup": speedup,
        "identical_scores": True,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "local_judge_speed.json").write_text(json.dumps(report, indent=1))
    lines = [
        "# Local judge: speed, and the gain from prefix reuse",
        "",
        f"{report['date']}, commit {report['commit']}, {report['machine']['cpus']} CPUs; model {report['judge']['model']}, "
        f"{n} example samples (half English, half Chinese), one pair at a time, the two modes "
        "interleaved sample by sample, no answer cache.",
        f"Command: `python benchmarks/local_judge_speed.py --samples {args.samples} --metrics {','.join(metrics)}`. "
        "Scores with and without reuse: identical.",
        "",
        "| metric | mode | s / sample | calls / sample | prompt tokens / sample | tokens evaluated / sample |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for metric in metrics:
        for mode, figures in (("prefix reuse", with_reuse), ("from scratch", from_scratch)):
            f = figures[metric]
            lines.append(
                f"| {metric} | {mode} | {f['seconds_per_sample']} | {f['calls_per_sample']} | "
                f"{f['prompt_tokens_per_sample']} | {f['prompt_tokens_evaluated_per_sample']} |"
            )
    lines += [
        "",
        f"All {len(metrics)} metrics of a sample: {with_reuse['seconds_total'] / n:.1f} s with prefix reuse, "
        f"{from_scratch['seconds_total'] / n:.1f} s from scratch.",
        "Speed-up of prefix reuse: " + ", ".join(f"{m} {speedup[m]}x" for m in metrics) + f"; all together {speedup['all']}x.",
    ]
    (args.out / "local_judge_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    main()
