"""The Ray executor on a real local cluster (two CPUs, shared by the module's tests): the
same scores as the single-process engine, and a worker killed mid-run costs nothing: Ray
restarts it, its shard resumes from the shard journal, and no pair is computed twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import ray_driver

from ragmeter.data import as_dataset, load_dataset
from ragmeter.run.engine import Evaluator, applicable_metrics
from ragmeter.run.ray_executor import RayExecutor

ray = pytest.importorskip("ray")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: How far a faithfulness value may move between two runs through llama.cpp servers. A server
#: reuses whatever prompt prefix it holds from the request before, and workers interleave their
#: requests, so the same prompt is not evaluated in the same batches: one claim's P(yes) was
#: seen at 0.599 in one run and 0.560 in the other (faithfulness 0.388 against 0.359).
SERVER_NUMERICS = 0.05
UNIT_TESTS = Path(__file__).resolve().parents[1] / "unit"


@pytest.fixture(scope="module")
def cluster():
    """One local Ray cluster (2 CPUs, no dashboard, no usage statistics) for the module; yields its address."""
    import ray_metrics

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.cloudpickle.register_pickle_by_value(ray_metrics)  # the workers need not import the tests
    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield context.address_info["address"]
    finally:
        ray.shutdown()


def scores_of(directory: Path) -> list[tuple[str, dict]]:
    """Each sample's key and scores (value, explanation, details, reason) from results.jsonl."""
    rows = [json.loads(line) for line in (directory / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    return [(r["key"], {m: (s["value"], s["explanation"], s["details"], s["reason"]) for m, s in r["scores"].items()}) for r in rows]


def test_ray_scores_equal_the_single_process_engine(cluster, tmp_path):
    dataset = load_dataset(EXAMPLES / "dev_platform_en.jsonl", EXAMPLES / "dev_platform_zh.jsonl")
    metrics = [m for m in applicable_metrics(dataset) if m.needs.value == "nothing"]
    assert len(metrics) > 20
    Evaluator(metrics, out_dir=tmp_path / "local").run(dataset)
    result = Evaluator(metrics, out_dir=tmp_path / "ray", executor=RayExecutor(workers=2, samples_per_shard=5)).run(dataset)
    execution = result.run["execution"]
    assert execution["executor"] == "ray" and execution["workers"] == 2 and execution["shards"] == 8
    assert len(execution["worker_pids"]) == 2 and os.getpid() not in execution["worker_pids"]
    assert scores_of(tmp_path / "ray") == scores_of(tmp_path / "local")
    assert not list((tmp_path / "ray").glob("journal*"))


def test_a_worker_killed_mid_run_loses_nothing_and_repeats_nothing(cluster, tmp_path):
    import ray_metrics

    logs = tmp_path / "logs"
    logs.mkdir()
    samples = ray_driver.samples()
    metric = ray_metrics.TrapLength(log_dir=str(logs), trap="s02")
    executor = RayExecutor(workers=2, samples_per_shard=4, concurrency=1)

    def kill_the_trapped_worker() -> None:
        deadline = time.monotonic() + 120
        while not (logs / "trap.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        (logs / "killed").touch()
        os.kill(int((logs / "trap.pid").read_text()), signal.SIGKILL)

    killer = threading.Thread(target=kill_the_trapped_worker)
    killer.start()
    result = Evaluator([metric], out_dir=tmp_path / "run", executor=executor).run(as_dataset(samples))
    killer.join()
    killed = int((logs / "trap.pid").read_text())
    values = {s.key: s.scores["trap_length"].value for s in result.samples}
    assert values == {f"s{i:02d}": (i + 1) / 100 for i in range(12)}  # nothing lost
    calls = [line.split() for line in (logs / "calls.log").read_text(encoding="utf-8").splitlines()]
    assert sorted(key for key, _ in calls) == sorted(values)  # nothing computed twice
    execution = result.run["execution"]
    assert execution["pairs_resumed_from_shards"] == 2  # s00 and s01, journalled before the kill
    assert killed not in execution["worker_pids"]
    assert not any(int(pid) == killed for key, pid in calls if key >= "s02" and key < "s04")
    assert not list((tmp_path / "run").glob("journal*"))


def test_a_killed_driver_leaves_its_shard_journals_and_the_next_run_reuses_them(cluster, tmp_path):
    import ray_metrics

    logs, out = tmp_path / "logs", tmp_path / "run"
    logs.mkdir()
    driver = subprocess.Popen([sys.executable, ray_driver.__file__, cluster, str(out), str(logs)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        # The other worker finishes the other shards while s02 (shard 0, after s00 and s01) waits.
        while not ((logs / "trap.pid").exists() and _calls(logs) == 10) and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.05)
        assert _calls(logs) == 10, "the driver did not reach the trap"
        driver.kill()  # SIGKILL: no clean-up of any kind
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    journalled = [line for shard in out.glob("journal.shard-*.jsonl") for line in shard.read_text(encoding="utf-8").splitlines()]
    assert len(journalled) == 10 and not (out / "results.jsonl").exists()
    (logs / "killed").touch()  # the trap lets the next run through
    metric = ray_metrics.TrapLength(log_dir=str(logs), trap="s02")
    result = Evaluator([metric], out_dir=out, executor=RayExecutor(workers=2, samples_per_shard=4)).run(as_dataset(ray_driver.samples()))
    assert result.run["pairs_resumed"] == 10 and result.run["pairs_computed"] == 2
    assert {s.key: s.scores["trap_length"].value for s in result.samples} == {f"s{i:02d}": (i + 1) / 100 for i in range(12)}
    keys = sorted(line.split()[0] for line in (logs / "calls.log").read_text(encoding="utf-8").splitlines())
    assert keys == [f"s{i:02d}" for i in range(12)]  # every sample scored once over the two runs
    assert not list(out.glob("journal*"))


def _calls(logs: Path) -> int:
    path = logs / "calls.log"
    return len(path.read_text(encoding="utf-8").splitlines()) if path.exists() else 0


def test_workers_judge_through_an_endpoint_as_the_local_engine_does(cluster, llama_server, tmp_path):
    from llama_server import MODEL

    from ragmeter.judges import Judges
    from ragmeter.judges.config import JudgeConfig

    dataset = load_dataset(EXAMPLES / "dev_platform_en.jsonl")
    dataset = as_dataset([loaded.sample for loaded in list(dataset)[:2]])
    settings = JudgeConfig(base_url=f"{llama_server}/v1", model=MODEL, verdict_mode="single", cache=False, concurrency=1)
    local_judge = settings.build()
    local = Evaluator(["faithfulness"], judges=Judges(llm=local_judge), concurrency=1, out_dir=tmp_path / "local").run(dataset)
    executor = RayExecutor(workers=2, judge=settings, concurrency=1, samples_per_shard=1)
    remote = Evaluator(["faithfulness"], judges=Judges(llm=settings.build()), out_dir=tmp_path / "ray", executor=executor).run(dataset)
    execution = remote.run["execution"]
    assert execution["workers"] == 2 and execution["judge"]["backend"] == "openai" and execution["judge"]["model"] == MODEL
    for a, b in zip(local.samples, remote.samples, strict=True):
        score_a, score_b = a.scores["faithfulness"], b.scores["faithfulness"]
        assert score_a.value is not None and score_b.value is not None and not score_b.failed
        assert score_b.value == pytest.approx(score_a.value, abs=SERVER_NUMERICS)
        assert [c["claim"] for c in score_b.details["claims"]] == [c["claim"] for c in score_a.details["claims"]]
        assert b.usage["faithfulness"].calls == a.usage["faithfulness"].calls > 0


def test_the_progress_bar_advances_pair_by_pair_within_a_shard(cluster, tmp_path, monkeypatch):
    import ray_metrics

    from ragmeter.run import ray_executor

    seen: list[int] = []

    class Recording:
        """Stands in for the progress bar: records the count of pairs shown after each advance."""

        def __init__(self, enabled, total, label):
            self.total = total

        def __enter__(self):
            return lambda done=1: seen.append((seen[-1] if seen else 0) + done)

        def __exit__(self, *exc_info):
            return None

    monkeypatch.setattr(ray_executor, "Progress", Recording)
    metric = ray_metrics.SlowLength(seconds=0.6)
    executor = RayExecutor(workers=1, samples_per_shard=6, concurrency=1, progress=True)
    result = Evaluator([metric], out_dir=tmp_path / "run", executor=executor).run(as_dataset(ray_driver.samples()[:6]))
    assert result.run["execution"]["shards"] == 1 and result.run["pairs_computed"] == 6
    assert seen[-1] == 6 and seen == sorted(seen)
    # One shard of 6 pairs: shard by shard, the bar would jump from 0 to 6 at once.
    assert len({count for count in seen if 0 < count < 6}) >= 3, seen


def test_cli_spreads_workers_over_two_servers_and_scores_as_one_server_does(cluster, llama_server, second_llama_server, tmp_path):
    from llama_server import MODEL, requests_served

    data = tmp_path / "samples.jsonl"
    lines = (EXAMPLES / "dev_platform_en.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = [sys.executable, "-m", "ragmeter", "eval", str(data), "-m", "faithfulness", "--judge-model", MODEL]
    common += ["--judge-base-url", f"{llama_server}/v1", "--verdict-mode", "single", "--no-cache", "--concurrency", "1"]
    common += ["--judge-timeout", "600"]  # a retried request would be answered twice: no retry on a slow shared machine
    env = {**os.environ, "RAGMETER_CACHE_DIR": str(tmp_path / "cache")}
    local = subprocess.run([*common, "-o", str(tmp_path / "local")], capture_output=True, text=True, timeout=900, env=env)
    assert local.returncode == 0, local.stderr
    before = {url: requests_served(url) for url in (llama_server, second_llama_server)}
    spread = [*common, "-o", str(tmp_path / "ray"), "--executor", "ray", "--ray-address", cluster, "--ray-workers", "2"]
    remote = subprocess.run([*spread, "--ray-endpoint", f"{second_llama_server}/v1"], capture_output=True, text=True, timeout=900, env=env)
    assert remote.returncode == 0, remote.stderr
    served = {url: requests_served(url) - before[url] for url in before}
    assert served[llama_server] > 0 and served[second_llama_server] > 0, served  # each server judged
    execution = json.loads((tmp_path / "ray" / "run.json").read_text(encoding="utf-8"))["run"]["execution"]
    assert execution["workers"] == 2
    assert execution["pairs_per_endpoint"] == {f"{llama_server}/v1": 1, f"{second_llama_server}/v1": 1}
    local_rows, ray_rows = (
        [json.loads(line) for line in (tmp_path / name / "results.jsonl").read_text(encoding="utf-8").splitlines()]
        for name in ("local", "ray")
    )
    assert [r["key"] for r in ray_rows] == [r["key"] for r in local_rows]
    calls = 0
    for a, b in zip(local_rows, ray_rows, strict=True):
        score_a, score_b = a["scores"]["faithfulness"], b["scores"]["faithfulness"]
        assert score_a["value"] is not None and score_b["value"] == pytest.approx(score_a["value"], abs=SERVER_NUMERICS)
        assert [c["claim"] for c in score_b["details"]["claims"]] == [c["claim"] for c in score_a["details"]["claims"]]
        assert b["usage"]["faithfulness"]["calls"] == a["usage"]["faithfulness"]["calls"] > 0
        calls += b["usage"]["faithfulness"]["calls"]
    assert sum(served.values()) == calls  # the servers answered exactly the run's judge calls


def _sweep_inputs(tmp_path: Path) -> tuple[Path, Path]:
    """The planted-best sweep of tests/unit/sweep_pipeline.py: its test set and sweep file."""
    rows = [{"id": f"q{i:02d}", "user_input": f"question {i}", "reference": f"w{i}a w{i}b w{i}c w{i}d"} for i in range(12)]
    data, grid = tmp_path / "testset.jsonl", tmp_path / "sweep.yaml"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    grid.write_text("pipeline: sweep_pipeline:answer\ngrid:\n  chunk_size: [256, 512]\n  top_k: [1, 5]\n", encoding="utf-8")
    return data, grid


def test_a_sweep_on_ray_finds_what_the_local_sweep_finds(cluster, tmp_path):
    from ragmeter.decide.sweep import import_pipeline, load_sweep_file, run_sweep

    sys.path.insert(0, str(UNIT_TESTS))  # sweep_pipeline.py, the planted best
    data, grid = _sweep_inputs(tmp_path)
    _, configs = load_sweep_file(grid)
    answer = import_pipeline("sweep_pipeline:answer")
    local = run_sweep(answer, configs, data, ["token_f1", "rougeL"], out_dir=tmp_path / "local")
    executor = RayExecutor(workers=2, samples_per_shard=3)
    with executor.hold():
        remote = run_sweep(answer, configs, data, ["token_f1", "rougeL"], out_dir=tmp_path / "ray", executor=executor)
    assert remote.best == local.best == "chunk_size=512, top_k=5"
    assert remote.to_dict() == local.to_dict()  # front, p-values, intervals, verdicts
    for folder in sorted((tmp_path / "ray").iterdir()):
        if folder.is_dir():
            run = json.loads((folder / "run.json").read_text(encoding="utf-8"))["run"]
            assert run["execution"]["executor"] == "ray" and run["execution"]["workers"] == 2
            assert scores_of(folder) == scores_of(tmp_path / "local" / folder.name)


def test_the_sweep_command_runs_on_ray(cluster, tmp_path):
    data, grid = _sweep_inputs(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(UNIT_TESTS), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "ragmeter", "sweep", str(data), "--grid", str(grid), "-m", "token_f1", "-o", str(tmp_path / "out")]
    done = subprocess.run([*command, "--executor", "ray", "--ray-address", cluster], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())  # the console wraps long lines
    assert "on ray" in said and "Best: chunk_size=512, top_k=5." in said
    assert "3 configuration(s) significantly worse than the best" in said
    run = json.loads((tmp_path / "out" / "chunk_size=512_top_k=5" / "run.json").read_text(encoding="utf-8"))["run"]
    assert run["execution"]["executor"] == "ray"
    wrong = subprocess.run([*command, "--ray-workers", "2"], capture_output=True, text=True, timeout=600, env=env)
    assert wrong.returncode == 2 and "need --executor ray" in wrong.stderr + wrong.stdout and "Traceback" not in wrong.stderr
