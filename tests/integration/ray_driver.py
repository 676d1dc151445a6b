"""A driver for the Ray executor's kill test, run as its own process: scores 12 samples with
the trap metric of ray_metrics.py on the cluster at argv[1], into the output directory argv[2],
with the trap logs in argv[3]."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import ray
import ray_metrics

from ragmeter import Sample
from ragmeter.data import as_dataset
from ragmeter.run.engine import Evaluator
from ragmeter.run.ray_executor import RayExecutor


def samples() -> list[Sample]:
    """The kill tests' samples: s00..s11, responses of 1..12 characters."""
    return [Sample(id=f"s{i:02d}", response="x" * (i + 1)) for i in range(12)]


if __name__ == "__main__":
    address, out_dir, logs = sys.argv[1:4]
    ray.cloudpickle.register_pickle_by_value(ray_metrics)
    executor = RayExecutor(address, workers=2, samples_per_shard=4, concurrency=1)
    Evaluator([ray_metrics.TrapLength(log_dir=logs, trap="s02")], out_dir=out_dir, executor=executor).run(as_dataset(samples()))
