"""Progress of a Ray run pair by pair across workers, without a cluster: workers report each
shard's finished pairs (throttled) to a tally, a retry never counts a pair twice, and the
driver's bar follows the tally between shards and never goes back."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from dataclasses import dataclass
from typing import ClassVar

from ragmeter import Metric, Sample, Score
from ragmeter.data import as_dataset
from ragmeter.run.executor import PairWork
from ragmeter.run.ray_executor import ShardWorker
from ragmeter.run.shards import PairProgress, PairTally, Throttled, pairs_done, plan_shards
from ragmeter.run.survey import survey


class Remote:
    """What an actor method handle offers: ``.remote(...)`` (here: called at once, its result
    wrapped in a finished future, as ``ObjectRef.future()`` gives one)."""

    def __init__(self, method):
        self.method = method

    def remote(self, *args):
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_result(self.method(*args))
        return type("Ref", (), {"future": lambda _self: future})()


class TallyHandle:
    """A :class:`PairTally` behind actor-like handles, recording every report."""

    def __init__(self):
        self.tally, self.reports = PairTally(), []
        self.report = Remote(self._report)
        self.snapshot = Remote(self.tally.snapshot)

    def _report(self, shard, count):
        self.reports.append((shard, count))
        self.tally.report(shard, count)


def test_a_retried_shard_does_not_count_its_journalled_pairs_twice():
    tally = PairTally()
    tally.report(0, 3)  # the first attempt reached 3 pairs, then its worker died
    tally.report(1, 2)
    tally.report(0, 2)  # the retry starts from the 2 its journal held
    assert tally.snapshot() == {0: 3, 1: 2}
    tally.report(0, 5)
    assert tally.snapshot() == {0: 5, 1: 2}


def test_throttled_sends_the_first_count_then_at_most_one_per_interval():
    now, sent = [100.0], []
    report = Throttled(sent.append, interval=0.2, clock=lambda: now[0])
    for count, at in ((1, 100.0), (2, 100.1), (3, 100.19), (4, 100.2), (5, 100.3), (6, 100.45)):
        now[0] = at
        report(count)
    assert sent == [1, 4, 6]


def test_pairs_done_counts_received_shards_whole_and_others_by_the_tally():
    assert pairs_done(10, {0: 4, 1: 3, 2: 1}, closed={0}) == 14  # shard 0 is in the 10 already
    assert pairs_done(0, {}, closed=set()) == 0


def test_the_bar_follows_the_tally_between_shards_and_never_goes_back():
    shown: list[int] = []
    handle = TallyHandle()
    progress = PairProgress(shown.append, handle)

    async def scenario():
        follower = asyncio.ensure_future(progress.follow())
        handle.tally.report(0, 2)
        handle.tally.report(1, 1)
        await asyncio.sleep(0.4)  # one read of the tally: 3 pairs under way
        progress.shard_received(0, 4)  # shard 0 came back whole: 4 + 1 (shard 1 under way)
        handle.tally.report(1, 3)
        await asyncio.sleep(0.4)
        progress.shard_received(1, 3)  # what the tally said already: nothing more to show
        follower.cancel()

    asyncio.run(scenario())
    assert shown == [3, 2, 2]  # the bar's advances: to 3, to 5, to 7
    assert progress.shown == 7


def test_without_a_tally_the_bar_advances_shard_by_shard():
    shown: list[int] = []
    progress = PairProgress(shown.append, None)
    asyncio.run(progress.follow())  # returns at once
    progress.shard_received(0, 4)
    progress.shard_received(1, 2)
    assert shown == [4, 2]


@dataclass(frozen=True)
class Slow(Metric):
    """Length of the response over 100, after 0.25 s (test metric)."""

    name: ClassVar[str] = "test_slow"
    family: ClassVar[str] = "lexical"
    required: ClassVar[tuple[str, ...]] = ("response",)

    async def score(self, sample, judges):
        await asyncio.sleep(0.25)
        return Score(min(1.0, len(sample.response) / 100), "length")


def test_a_worker_reports_its_shard_pair_by_pair():
    dataset = as_dataset([Sample(id=f"s{i}", response="x" * (i + 1)) for i in range(4)])
    metrics = [Slow()]
    known = survey(dataset, metrics)
    work = PairWork(
        metrics,
        [Slow().config_hash()],
        known.keys,
        known.fingerprints,
        [(r, 0) for r in range(4)],
        {r: s.sample for r, s in enumerate(dataset)},
        None,
    )
    shard = plan_shards(work, samples_per_shard=4)[0]
    handle = TallyHandle()
    worker = ShardWorker(metrics, work.configs, None, None, concurrency=1, cpus=1, tally=handle)
    began = time.monotonic()
    outcome = asyncio.run(worker.score(shard))
    assert len(outcome.finished) == 4 and time.monotonic() - began >= 1.0
    assert handle.reports == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4)]  # 0.25 s apart: each pair goes through the throttle


def test_a_lost_tally_leaves_the_bar_advancing_shard_by_shard():
    shown: list[int] = []

    class Lost:
        snapshot = Remote(lambda: (_ for _ in ()).throw(ConnectionError("actor died")))

    progress = PairProgress(shown.append, Lost())
    asyncio.run(asyncio.wait_for(progress.follow(), timeout=5))  # returns instead of raising
    progress.shard_received(0, 3)
    assert shown == [3]
