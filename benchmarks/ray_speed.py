"""Samples per second of a run on Ray with 1 and 2 workers, against the single-process engine.

The bundled examples repeated to N samples (ids unique, texts shared, see ``scale.py``) are
scored with every model-free metric that needs no model at all (lexical, retrieval,
robustness and efficiency: no embedder, no judge), so what is measured is the executor, not
a model. Each configuration runs in this process through :class:`Evaluator`: the local
engine, then a local Ray cluster started with as many CPUs as workers (its start-up is timed
apart and left out of samples/s; the workers' own start-up, importing ragmeter in each, is
included). The scores of every Ray run are checked equal to the local run's.

Usage:
    python benchmarks/ray_speed.py [--samples 2000] [--repeats 2] [--out benchmarks/results]

Writes ``ray_speed.json`` and ``ray_speed.md`` into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from scale import write_samples

from ragmeter.data import load_dataset
from ragmeter.metrics import Needs
from ragmeter.run.engine import Evaluator, applicable_metrics
from ragmeter.run.ray_executor import RayExecutor

ROOT = Path(__file__).resolve().parents[1]


def scores(directory: Path) -> list[tuple[str, dict]]:
    """Each sample's key and score values from a run's results.jsonl."""
    rows = (json.loads(line) for line in (directory / "results.jsonl").read_text(encoding="utf-8").splitlines())
    return [(r["key"], {m: s["value"] for m, s in r["scores"].items()}) for r in rows]


def timed_run(dataset, metrics, out: Path, executor: RayExecutor | None) -> float:
    """Seconds of one full run (results and run.json written) into a fresh ``out``."""
    began = time.perf_counter()
    Evaluator(metrics, out_dir=out, resume=False, progress=False, executor=executor).run(dataset)
    return time.perf_counter() - began


def measure(data: Path, work: Path, repeats: int) -> list[dict]:
    """The best of ``repeats`` runs of each configuration (the machine is shared)."""
    import ray

    dataset = load_dataset(data)
    metrics = [m for m in applicable_metrics(dataset) if m.needs == Needs.NOTHING]
    rows = []
    local = min(timed_run(dataset, metrics, work / "local", None) for _ in range(repeats))
    rows.append({"executor": "local (one process)", "workers": 1, "startup_s": 0.0, "seconds": local})
    expected = scores(work / "local")
    for workers in (1, 2):
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        began = time.perf_counter()
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        startup = time.perf_counter() - began
        try:
            executor = RayExecutor(workers=workers)
            seconds = min(timed_run(dataset, metrics, work / f"ray{workers}", executor) for _ in range(repeats))
        finally:
            ray.shutdown()
        if scores(work / f"ray{workers}") != expected:
            raise SystemExit(f"Ray with {workers} worker(s) scored differently from the local engine")
        rows.append({"executor": "ray", "workers": workers, "startup_s": startup, "seconds": seconds})
    for row in rows:
        row |= {"samples": len(dataset), "metrics": len(metrics), "samples_per_s": round(len(dataset) / row["seconds"], 1)}
        row["seconds"], row["startup_s"] = round(row["seconds"], 2), round(row["startup_s"], 2)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        os.environ["RAGMETER_CACHE_DIR"] = str(work / "cache")
        data = work / "samples.jsonl"
        write_samples(data, args.samples)
        rows = measure(data, work, args.repeats)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    header = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "command": f"python benchmarks/ray_speed.py --samples {args.samples} --repeats {args.repeats}",
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ray_speed.json").write_text(json.dumps({**header, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    lines = [
        "# Ray executor: samples per second with 1 and 2 workers (model-free metrics)",
        "",
        f"{header['date']}, commit {commit}, {header['cpus']} CPUs (shared with other work), Python {header['python']}.",
        f"Command: `{header['command']}`. Best of {args.repeats} runs per row; every Ray run's scores equal the local run's.",
        "Cluster start-up (`ray.init`, local, no dashboard) is shown apart and not counted in samples/s.",
        "",
        "| executor | workers | samples | metrics | seconds | samples/s | cluster start-up s |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {r['executor']} | {r['workers']} | {r['samples']} | {r['metrics']} | {r['seconds']} | {r['samples_per_s']} | {r['startup_s']} |"
            for r in rows
        ),
    ]
    (args.out / "ray_speed.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
