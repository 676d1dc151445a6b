"""Scoring a run's pairs on a Ray cluster: a local one started for the run, or an existing one.

**Actors, not Ray Data, and not plain tasks.** Each worker is an actor
(:class:`ShardWorker`, one CPU) that builds its judges once and keeps them: the embedded
model is loaded once per worker (not once per task), and an endpoint judge keeps its
connections and its verdict-mode probe. The driver hands out *shards* (consecutive samples
with all their pending pairs) one at a time to whichever worker is free, so a slow shard
never holds the others back. The driver's progress bar (and its ETA) advances pair by pair
across all workers: each worker reports its shard's count of finished pairs to a small tally
actor (at most every 0.2 s), which the driver reads four times a second.
Ray Data would add a second scheduler between the run and its journal (its batches, its
retries and its ordering are its own), and nothing here needs its streaming of data sets:
the samples are already in memory on the driver.

**Nothing is lost.** A worker appends each finished pair to its shard's own journal
(``journal.shard-<n>.jsonl`` in the output directory, see :mod:`ragmeter.run.journal`)
before reporting it. Workers are restarted by Ray when their process dies, and the shard
under way is sent again; the new attempt reads the shard journal and computes only what is
missing, so a killed worker costs at most the pairs it was scoring. When the run ends (or is
interrupted) the shard journals are folded into the run's journal; a killed driver leaves
them in place and the next run of the same command folds and reuses them. The workers must
see the output directory: any local cluster does; a cluster of several machines needs it on
a shared file system.

**Same results.** Each pair is scored by the same function as in the single-process engine
(:func:`ragmeter.run.scoring.score_pair`) with judges built from the same settings, so the
scores are those of a local run; only the seconds differ.

**No telemetry.** Ray's usage statistics are switched off (``RAY_USAGE_STATS_ENABLED=0``, set
before the cluster starts) and a local cluster starts without its dashboard
(``include_dashboard=False``; Ray still runs its minimal head process, bound to 127.0.0.1, with
no web interface); nothing is sent anywhere but to the configured judge endpoints. Ray is
imported only when a run uses this executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import math
import os
import socket
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from ragmeter.data.secrets import redact
from ragmeter.judges import BatchingEmbedder, Judges
from ragmeter.judges.cache import EmbeddingStore
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Metric, Needs, Score
from ragmeter.run.executor import ExecutorError, LocalExecutor, PairDone, PairWork, Progress
from ragmeter.run.journal import Journal, fold_shards, make_record, shard_name
from ragmeter.run.scoring import score_pair
from ragmeter.run.shards import PairProgress, PairTally, Shard, ShardOutcome, Throttled, journalled, plan_shards

#: Most attempts at one shard (Ray retries a worker's death itself; these are after that).
SHARD_ATTEMPTS = 3
#: Shards per worker when the shard size is chosen automatically (smaller: finer progress
#: and load balance; larger: fewer round trips).
SHARDS_PER_WORKER = 8
MAX_SHARD_SAMPLES = 256


def worker_judges(settings: JudgeConfig | None, metrics: Sequence[Metric], cpus: int) -> Judges:
    """The judges a worker builds for itself: the embedder, and the LLM judge when a metric
    needs one (the embedded model with ``cpus`` threads unless told otherwise), both behind
    the disk cache these settings name (``None``: the packaged embedder, no cache, no LLM)."""
    if settings is None:
        return Judges()
    cache = settings.open_cache()
    store = EmbeddingStore(cache, USEEncoder.model_name) if cache is not None else None
    llm = None
    if any(m.needs == Needs.LLM for m in metrics):
        if settings.chosen_backend == "local" and settings.threads is None:
            settings = settings.updated(threads=cpus)
        llm = settings.build(cache)
    return Judges(embedder=BatchingEmbedder(store=store), llm=llm)


class ShardWorker:
    """A Ray actor that scores shards (see the module docstring).

    Args:
        metrics: The run's metrics (columns).
        configs: Each metric's reuse key, for journal records.
        settings: The judge settings to build the worker's judges from (:func:`worker_judges`).
        out_dir: Where shard journals go; ``None``: no journal.
        concurrency: Most pairs this worker scores at once.
        cpus: CPUs the worker holds (threads of an embedded model).
        tally: The :class:`~ragmeter.run.shards.PairTally` actor to report finished pairs to;
            ``None``: no reports (no progress bar).
    """

    def __init__(
        self,
        metrics: Sequence[Metric],
        configs: Sequence[str],
        settings: JudgeConfig | None,
        out_dir: str | None,
        concurrency: int,
        cpus: int,
        tally: Any | None = None,
    ):
        self.metrics, self.configs, self.out_dir, self.concurrency = list(metrics), list(configs), out_dir, concurrency
        self.judges, self.tally = worker_judges(settings, metrics, cpus), tally

    async def score(self, shard: Shard) -> ShardOutcome:
        """Score the pairs of ``shard`` that its journal does not already hold."""
        journal = Journal(self.out_dir, shard_name(shard.index)) if self.out_dir is not None else None
        done = journalled(journal, shard, self.metrics, self.configs)
        outcome = ShardOutcome(
            shard.index, os.getpid(), [(row, self.metrics[col].id, *kept) for (row, col), kept in done.items()], len(done)
        )
        todo = [pair for pair in shard.pairs if pair not in done]
        tally = self.tally
        report = Throttled(lambda count: tally.report.remote(shard.index, count)) if tally is not None else None
        if report is not None:
            report(len(outcome.finished))

        async def one(pair: tuple[int, int]) -> None:
            row, col = pair
            metric = self.metrics[col]
            score, seconds, usage = await score_pair(metric, shard.samples[row], self.judges)
            if journal is not None:
                key, fingerprint = shard.keys[row], shard.fingerprints[row]
                journal.append(make_record(key, fingerprint, metric.id, self.configs[col], score, seconds, usage))
            outcome.finished.append((row, metric.id, score, seconds, usage))
            if report is not None:
                report(len(outcome.finished))

        try:
            await LocalExecutor(self.concurrency, progress=False).run(todo, len(todo), one)
        finally:
            if journal is not None:
                journal.close()
        return outcome

    def judge_description(self) -> dict[str, Any] | None:
        """What the worker's LLM judge found out (for ``run.json``); ``None`` without one."""
        return self.judges.llm.describe() if self.judges.llm is not None else None

    async def close(self) -> None:
        """Release the judge (its model memory, its connections)."""
        if self.judges.llm is not None:
            await self.judges.llm.aclose()


def require_ray() -> Any:
    """The ``ray`` module, imported now.

    Raises:
        ExecutorError: Ray is not installed (the message names the extra to install).
    """
    if importlib.util.find_spec("ray") is None:
        raise ExecutorError("the Ray executor needs Ray, which is not installed: pip install 'ragmeter[ray]'")
    import ray

    return ray


class RayExecutor:
    """Scores a run's pairs on Ray workers (see the module docstring).

    Args:
        address: An existing cluster (``"ray://host:10001"``, ``"host:6379"`` or ``"auto"``);
            ``None`` starts a local one for the run (and stops it after) unless this process
            is already connected to one.
        workers: Worker actors; default: one per CPU of the cluster.
        judge: The judge settings each worker builds its judges from; several settings
            (endpoints serving the same model) are spread over the workers, worker ``i``
            taking ``judge[i % len(judge)]``; ``None``: the packaged embedder only, no disk
            cache (enough for model-free metrics).
        concurrency: Most pairs each worker scores at once.
        samples_per_shard: Samples per shard; default: about :data:`SHARDS_PER_WORKER` shards
            per worker, at most :data:`MAX_SHARD_SAMPLES` samples each.
        cpus_per_worker: CPUs each worker holds (threads of an embedded model).
        progress: Show a progress bar over all workers.

    Raises:
        ExecutorError: Ray is not installed.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        workers: int | None = None,
        judge: JudgeConfig | Sequence[JudgeConfig] | None = None,
        concurrency: int = 32,
        samples_per_shard: int | None = None,
        cpus_per_worker: int = 1,
        progress: bool = False,
    ):
        require_ray()
        if workers is not None and workers < 1:
            raise ValueError("workers must be at least 1")
        if concurrency < 1 or cpus_per_worker < 1 or (samples_per_shard is not None and samples_per_shard < 1):
            raise ValueError("concurrency, cpus_per_worker and samples_per_shard must be at least 1")
        self.address, self.workers = address, workers
        self.judges: list[JudgeConfig | None] = [judge] if judge is None or isinstance(judge, JudgeConfig) else list(judge)
        if not self.judges:
            raise ValueError("judge: give at least one judge setting, or None")
        self.concurrency, self.samples_per_shard, self.cpus_per_worker = concurrency, samples_per_shard, cpus_per_worker
        self.progress = progress

    def judge_for(self, worker: int) -> JudgeConfig | None:
        """The judge settings worker number ``worker`` builds its judges from."""
        return self.judges[worker % len(self.judges)]

    async def score(self, work: PairWork, done: PairDone) -> dict[str, Any]:
        """Compute every pair of ``work`` on the cluster, reporting each to ``done``; returns
        the execution's description (workers, shards, pairs resumed from shard journals)."""
        ray = require_ray()
        started = self._connect(ray)
        try:
            return await self._score(ray, work, done)
        finally:
            if work.out_dir is not None:
                fold_shards(work.out_dir)
            if started:
                ray.shutdown()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Keep the cluster connected across several runs (a sweep's configurations): a local
        cluster starts once, on entering, instead of once per run, and stops on leaving."""
        ray = require_ray()
        started = self._connect(ray)
        try:
            yield
        finally:
            if started:
                ray.shutdown()

    def _connect(self, ray: Any) -> bool:
        """Connect to the cluster; True when this call started it (and so must stop it)."""
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # no telemetry, for this process and the cluster it starts
        if ray.is_initialized():
            return False
        local = self.address is None
        if not local:
            _check_reachable(str(self.address))
        try:
            ray.init(
                address=self.address,
                num_cpus=(self.workers or os.cpu_count() or 1) * self.cpus_per_worker if local else None,
                include_dashboard=False if local else None,
                logging_level=logging.ERROR,
                log_to_driver=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ExecutorError(f"cannot reach the Ray cluster at {self.address}: {exc}") from None
        return True

    async def _score(self, ray: Any, work: PairWork, done: PairDone) -> dict[str, Any]:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        workers = self.workers or max(1, cpus // self.cpus_per_worker)
        size = self.samples_per_shard or min(MAX_SHARD_SAMPLES, max(1, math.ceil(len(work.samples) / (workers * SHARDS_PER_WORKER))))
        shards = deque(plan_shards(work, size))
        info: dict[str, Any] = {"executor": "ray", "workers": 0, "shards": len(shards), "samples_per_shard": size}
        info |= {"pairs_resumed_from_shards": 0, "shard_retries": 0, "worker_pids": []}
        if not shards:
            return info
        out_dir = str(work.out_dir) if work.out_dir is not None else None
        tally = ray.remote(num_cpus=0)(PairTally).remote() if self.progress else None
        actor_class = ray.remote(num_cpus=self.cpus_per_worker, max_restarts=SHARD_ATTEMPTS, max_task_retries=SHARD_ATTEMPTS)(ShardWorker)
        actors = [
            actor_class.remote(work.metrics, work.configs, self.judge_for(i), out_dir, self.concurrency, self.cpus_per_worker, tally)
            for i in range(min(workers, len(shards)))
        ]
        info["workers"] = len(actors)
        try:
            with Progress(self.progress, len(work.pairs), f"scoring on {len(actors)} Ray workers") as advance:
                await self._dispatch(ray, actors, shards, (work, done, out_dir), info, PairProgress(advance, tally))
            info["judge"] = await _describe(actors[0])
        finally:
            await _release(ray, actors)
            if tally is not None:
                ray.kill(tally)
        return info

    async def _dispatch(
        self,
        ray: Any,
        actors: list[Any],
        shards: deque[Shard],
        run: tuple[PairWork, PairDone, str | None],
        info: dict[str, Any],
        progress: PairProgress,
    ) -> None:
        """Hand ``shards`` out to ``actors`` one at a time until all are back, reporting each
        pair to the run's ``done`` (``run``: the work, ``done`` and the output directory) and
        filling ``info`` (retries, resumed pairs, worker processes, pairs per endpoint)."""
        work, done, out_dir = run
        running: dict[asyncio.Future[Any], tuple[int, Shard, int]] = {}
        pids: set[int] = set()
        per_endpoint: dict[str, int] = {}

        def submit(worker: int, shard: Shard, attempt: int) -> None:
            running[asyncio.wrap_future(actors[worker].score.remote(shard).future())] = (worker, shard, attempt)

        for worker in range(len(actors)):
            if shards:
                submit(worker, shards.popleft(), 1)
        follower = asyncio.ensure_future(progress.follow())
        try:
            while running:
                finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for future in finished:
                    worker, shard, attempt = running.pop(future)
                    try:
                        outcome: ShardOutcome = future.result()
                    except ray.exceptions.RayError as exc:
                        if attempt < SHARD_ATTEMPTS:
                            info["shard_retries"] += 1
                            submit(worker, shard, attempt + 1)
                            continue
                        outcome = _given_up(shard, work, out_dir, exc)
                    for row, metric_id, score, seconds, usage in outcome.finished:
                        done(row, metric_id, score, seconds, usage, True)
                    progress.shard_received(shard.index, len(outcome.finished))
                    info["pairs_resumed_from_shards"] += outcome.resumed
                    pids.add(outcome.pid)
                    endpoint = self._endpoint(worker)
                    if endpoint is not None and outcome.pid:
                        per_endpoint[endpoint] = per_endpoint.get(endpoint, 0) + len(outcome.finished) - outcome.resumed
                    if shards:
                        submit(worker, shards.popleft(), 1)
        finally:
            follower.cancel()
        info["worker_pids"] = sorted(pids - {0})
        if per_endpoint:
            info["pairs_per_endpoint"] = per_endpoint

    def _endpoint(self, worker: int) -> str | None:
        """The endpoint URL (credentials masked) worker number ``worker`` judges through, if any."""
        settings = self.judge_for(worker)
        return redact(settings.base_url) if settings is not None and settings.base_url else None


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast when a ``host:port`` (or ``ray://host:port``) address does not answer: Ray
    itself retries an unreachable cluster for minutes. Other forms (``auto``) are Ray's to resolve.

    Raises:
        ExecutorError: Nothing listens at the address.
    """
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ExecutorError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


def _given_up(shard: Shard, work: PairWork, out_dir: str | None, error: Exception) -> ShardOutcome:
    """A shard no worker could finish: the pairs its journal holds, and the others failed
    (a re-run computes them again)."""
    journal = Journal(out_dir, shard_name(shard.index)) if out_dir is not None else None
    done = journalled(journal, shard, work.metrics, work.configs)
    cause = " ".join(str(error).split())[:300]
    lost = (
        Score.unscored(redact(f"error: the Ray worker scoring this sample was lost: {type(error).__name__}: {cause}"), failed=True),
        0.0,
        Usage(),
    )
    return ShardOutcome(shard.index, 0, [(row, work.metrics[col].id, *done.get((row, col), lost)) for row, col in shard.pairs])


async def _describe(actor: Any) -> dict[str, Any] | None:
    """The description of a worker's LLM judge, or ``None`` when it is gone or has none."""
    try:
        description: dict[str, Any] | None = await actor.judge_description.remote()
    except Exception:  # a lost worker has nothing to say; the scores are already in
        return None
    return description


async def _release(ray: Any, actors: list[Any]) -> None:
    """Close the workers' judges, then end the workers."""
    for actor in actors:
        try:
            await asyncio.wait_for(asyncio.wrap_future(actor.close.remote().future()), timeout=30)
        except Exception:  # a worker already gone has nothing to release
            pass
        ray.kill(actor)
