"""The Ray executor's parts that need no cluster: how a run is cut into shards, how a shard
worker resumes from its shard journal, how shard journals left by a killed driver are folded
and reused, what happens to a shard no worker could finish, and the error when Ray is missing."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from ragmeter import Metric, Sample, Score
from ragmeter.cli import app
from ragmeter.data import as_dataset
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.metering import Usage
from ragmeter.run import ray_executor
from ragmeter.run.engine import Evaluator
from ragmeter.run.executor import ExecutorError, PairWork
from ragmeter.run.journal import JOURNAL_FILE, Journal, fold_shards, make_record, shard_name, shard_paths
from ragmeter.run.ray_executor import ShardWorker
from ragmeter.run.shards import plan_shards
from ragmeter.run.survey import survey


@dataclass(frozen=True)
class Length(Metric):
    """Length of the response over 100 (test metric); counts its calls per sample id."""

    name: ClassVar[str] = "test_length"
    family: ClassVar[str] = "lexical"
    required: ClassVar[tuple[str, ...]] = ("response",)
    calls: ClassVar[list[str]] = []

    async def score(self, sample, judges):
        Length.calls.append(sample.id)
        return Score(min(1.0, len(sample.response) / 100), "length")


@dataclass(frozen=True)
class Words(Length):
    name: ClassVar[str] = "test_words"

    async def score(self, sample, judges):
        return Score(min(1.0, len(sample.response.split()) / 10), "words")


def samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", user_input=f"q{i}", response="word " * (i + 1)) for i in range(n)]


def work_for(n: int, out_dir: Path | None, metrics=(Length(), Words())) -> PairWork:
    dataset = as_dataset(samples(n))
    known = survey(dataset, list(metrics))
    pairs = [(row, col) for row in range(n) for col in range(len(metrics))]
    configs = [m.config_hash() for m in metrics]
    return PairWork(list(metrics), configs, known.keys, known.fingerprints, pairs, {r: s.sample for r, s in enumerate(dataset)}, out_dir)


def test_shards_hold_consecutive_samples_with_all_their_pairs():
    shards = plan_shards(work_for(5, None), samples_per_shard=2)
    assert [s.index for s in shards] == [0, 1, 2]
    assert [sorted(s.samples) for s in shards] == [[0, 1], [2, 3], [4]]
    assert shards[0].pairs == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert shards[2].keys == {4: "s4"} and shards[2].samples[4].id == "s4"
    with pytest.raises(ValueError, match="at least 1"):
        plan_shards(work_for(1, None), 0)


def test_a_worker_journals_each_pair_and_a_retry_computes_only_what_is_missing(tmp_path):
    work = work_for(3, tmp_path)
    shard = plan_shards(work, samples_per_shard=3)[0]
    journal = Journal(tmp_path, shard_name(0))  # an attempt killed after two pairs of s0 and one of s1
    for row, metric in ((0, work.metrics[0]), (0, work.metrics[1]), (1, work.metrics[0])):
        col = work.metrics.index(metric)
        journal.append(make_record(work.keys[row], work.fingerprints[row], metric.id, work.configs[col], Score(0.77, "kept"), 0.1, Usage()))
    journal.close()
    Length.calls.clear()
    worker = ShardWorker(work.metrics, work.configs, None, str(tmp_path), concurrency=2, cpus=1)
    outcome = asyncio.run(worker.score(shard))
    assert outcome.resumed == 3
    assert sorted(Length.calls) == ["s2"]  # s0 and s1's lengths came from the journal
    finished = {(row, metric_id): score.value for row, metric_id, score, _, _ in outcome.finished}
    assert len(finished) == 6 and finished[(0, "test_length")] == 0.77 and finished[(2, "test_length")] == 0.15
    records = Journal(tmp_path, shard_name(0)).read()
    assert len(records) == 6  # every pair of the shard is now in its journal


def test_shards_left_by_a_killed_driver_are_folded_and_reused_by_the_next_run(tmp_path):
    dataset = as_dataset(samples(4))
    evaluator = Evaluator([Length()], out_dir=tmp_path)
    known = survey(dataset, evaluator.metrics)
    config = evaluator._pair_configs()[0]
    for index, row in enumerate((1, 3)):
        shard = Journal(tmp_path, shard_name(index))
        shard.append(make_record(known.keys[row], known.fingerprints[row], "test_length", config, Score(0.5, "planted"), 0.1, Usage()))
        shard.close()
    (tmp_path / shard_name(1)).open("a").write('{"sample": "s0", "torn')  # the line being written at the kill
    Length.calls.clear()
    result = evaluator.run(dataset)
    assert result.run["pairs_resumed"] == 2 and result.run["pairs_computed"] == 2
    assert sorted(Length.calls) == ["s0", "s2"]
    values = {s.key: s.scores["test_length"].value for s in result.samples}
    assert values == {"s0": 0.05, "s1": 0.5, "s2": 0.15, "s3": 0.5}
    assert shard_paths(tmp_path) == [] and not (tmp_path / JOURNAL_FILE).exists()


def test_folding_moves_every_complete_record_and_removes_the_shards(tmp_path):
    for index in range(2):
        (tmp_path / shard_name(index)).write_text(json.dumps({"sample": f"s{index}", "metric": "m"}) + "\n" + '{"torn', encoding="utf-8")
    assert fold_shards(tmp_path) == 2
    assert shard_paths(tmp_path) == []
    assert Journal(tmp_path).read().keys() == {("s0", "m"), ("s1", "m")}
    assert fold_shards(tmp_path) == 0


def test_fresh_removes_shard_journals_too(tmp_path):
    (tmp_path / shard_name(0)).write_text("{}\n", encoding="utf-8")
    Evaluator([Length()], out_dir=tmp_path, resume=False).run(as_dataset(samples(1)))
    assert shard_paths(tmp_path) == []


def test_a_shard_no_worker_finished_keeps_its_journalled_pairs_and_fails_the_others(tmp_path):
    work = work_for(2, tmp_path, metrics=(Length(),))
    shard = plan_shards(work, samples_per_shard=2)[0]
    journal = Journal(tmp_path, shard_name(0))
    journal.append(make_record(work.keys[0], work.fingerprints[0], "test_length", work.configs[0], Score(0.3, "kept"), 0.1, Usage()))
    journal.close()
    outcome = ray_executor._given_up(shard, work, str(tmp_path), RuntimeError("node lost"))
    scores = {row: score for row, _, score, _, _ in outcome.finished}
    assert scores[0].value == 0.3
    assert scores[1].failed and "Ray worker" in scores[1].reason and "RuntimeError: node lost" in scores[1].reason


def test_without_ray_the_error_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setattr(ray_executor.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ExecutorError, match=r"pip install 'ragmeter\[ray\]'"):
        ray_executor.RayExecutor()
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps({"id": "a", "response": "x", "reference": "x"}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", str(data), "-m", "token_f1", "-o", str(tmp_path / "o"), "--executor", "ray"])
    assert result.exit_code == 2 and "pip install 'ragmeter[ray]'" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_the_cli_refuses_an_unknown_executor_and_ray_options_without_ray(tmp_path):
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps({"id": "a", "response": "x", "reference": "x"}) + "\n", encoding="utf-8")
    runner = CliRunner()
    unknown = runner.invoke(app, ["eval", str(data), "-m", "token_f1", "-o", str(tmp_path / "o"), "--executor", "dask"])
    assert unknown.exit_code == 2 and "'dask' is not known" in unknown.output
    stray = runner.invoke(app, ["eval", str(data), "-m", "token_f1", "-o", str(tmp_path / "o"), "--ray-workers", "2"])
    assert stray.exit_code == 2 and "need --executor ray" in stray.output
    local_judge = runner.invoke(app, ["eval", str(data), "-m", "token_f1", "--executor", "ray", "--ray-endpoint", "http://b:8000/v1"])
    assert local_judge.exit_code == 2 and "--ray-endpoint needs an endpoint judge" in local_judge.output


def test_endpoints_are_spread_over_the_workers():
    first = JudgeConfig(base_url="http://a:8000/v1", model="qwen")
    second = first.updated(base_url="http://b:8000/v1")
    executor = ray_executor.RayExecutor(workers=3, judge=[first, second])
    assert [executor.judge_for(i).base_url for i in range(3)] == ["http://a:8000/v1", "http://b:8000/v1", "http://a:8000/v1"]
    assert ray_executor.RayExecutor(judge=first).judge_for(5) is first and ray_executor.RayExecutor().judge_for(0) is None
    with pytest.raises(ValueError, match="at least one judge setting"):
        ray_executor.RayExecutor(judge=[])


def test_importing_ragmeter_does_not_import_ray():
    code = "import sys, ragmeter, ragmeter.cli, ragmeter.run.engine; print('ray' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_an_unreachable_cluster_address_fails_at_once(tmp_path):
    import socket
    import time

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = tmp_path / "s.jsonl"
    data.write_text(json.dumps({"id": "a", "response": "x", "reference": "x"}) + "\n", encoding="utf-8")
    began = time.monotonic()
    args = ["eval", str(data), "-m", "token_f1", "-o", str(tmp_path / "o"), "--executor", "ray", "--ray-address", f"127.0.0.1:{port}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and f"cannot reach the Ray cluster at 127.0.0.1:{port}" in result.output
    assert time.monotonic() - began < 30 and "Traceback" not in result.output
