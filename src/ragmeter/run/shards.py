"""Shards of a run: consecutive samples with their pending pairs, as a distributed executor
hands them out (:mod:`ragmeter.run.ray_executor`), which of a shard's pairs its own journal
already holds, and the driver's progress pair by pair across workers (workers report to a
tally actor; the driver reads it). Nothing here imports Ray."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data.schema import Sample
from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Metric, Score
from ragmeter.run.executor import PairWork
from ragmeter.run.journal import Journal
from ragmeter.run.resume import Reused

#: One finished pair as a worker reports it: row, metric id, score, seconds, usage.
Finished = tuple[int, str, Score, float, Usage]


@dataclass(frozen=True)
class Shard:
    """Consecutive samples of a run, with the pairs of theirs that are still to compute.

    Attributes:
        index: The shard's number (names its journal).
        pairs: (row, column) pairs, sample by sample.
        samples: The sample at each row of the shard.
        keys: Each row's sample key.
        fingerprints: Each row's content hash.
    """

    index: int
    pairs: list[tuple[int, int]]
    samples: dict[int, Sample]
    keys: dict[int, str]
    fingerprints: dict[int, str]


@dataclass
class ShardOutcome:
    """What a worker returns for a shard: its finished pairs, how many of them it took from
    the shard journal of an earlier attempt, and which process scored it."""

    index: int
    pid: int
    finished: list[Finished] = field(default_factory=list)
    resumed: int = 0


def plan_shards(work: PairWork, samples_per_shard: int) -> list[Shard]:
    """Split ``work`` into shards of at most ``samples_per_shard`` consecutive samples; a
    sample's pairs always stay in one shard."""
    if samples_per_shard < 1:
        raise ValueError("samples_per_shard must be at least 1")
    by_row: dict[int, list[tuple[int, int]]] = {}
    for row, col in work.pairs:
        by_row.setdefault(row, []).append((row, col))
    rows = list(by_row)
    shards = []
    for index, start in enumerate(range(0, len(rows), samples_per_shard)):
        chosen = rows[start : start + samples_per_shard]
        shards.append(
            Shard(
                index,
                [pair for row in chosen for pair in by_row[row]],
                {row: work.samples[row] for row in chosen},
                {row: work.keys[row] for row in chosen},
                {row: work.fingerprints[row] for row in chosen},
            )
        )
    return shards


def journalled(journal: Journal | None, shard: Shard, metrics: Sequence[Metric], configs: Sequence[str]) -> dict[tuple[int, int], Reused]:
    """The pairs of ``shard`` whose journal holds a valid score (same sample content, same settings)."""
    if journal is None:
        return {}
    records, found = journal.read(), {}
    for row, col in shard.pairs:
        kept = journal.reusable(records, shard.keys[row], shard.fingerprints[row], metrics[col].id, configs[col])
        if kept is not None:
            found[(row, col)] = kept
    return found


class PairTally:
    """Pairs finished so far in each shard under way, as workers report them (a Ray actor on
    the cluster; the driver reads it to advance its progress bar pair by pair).

    A shard's count is the most its attempts have reported: a new attempt after a lost
    worker reports the pairs it takes from the shard journal again, which must not count twice.
    """

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def report(self, shard: int, finished: int) -> None:
        """Shard number ``shard`` has ``finished`` pairs done (journalled or computed)."""
        self.counts[shard] = max(self.counts.get(shard, 0), finished)

    def snapshot(self) -> dict[int, int]:
        """Each reported shard's count of finished pairs."""
        return dict(self.counts)


class Throttled:
    """Calls ``send(count)`` at most once every ``interval`` seconds (the first call always
    goes), so a worker scoring thousands of cheap pairs sends a handful of reports, not one each.

    Args:
        send: What reports a count (a Ray actor call, fire and forget).
        interval: Least seconds between two reports.
        clock: Seconds, monotonic (a parameter for tests).
    """

    def __init__(self, send: Callable[[int], object], interval: float = 0.2, clock: Callable[[], float] = time.monotonic):
        self.send, self.interval, self.clock = send, interval, clock
        self.last: float | None = None

    def __call__(self, count: int) -> None:
        now = self.clock()
        if self.last is None or now - self.last >= self.interval:
            self.last = now
            self.send(count)


def pairs_done(finished_shards: int, tally: dict[int, int], closed: set[int]) -> int:
    """Pairs a run has finished: those of the shards it received (``finished_shards``),
    plus what ``tally`` reports of the shards still under way (``closed``: the received ones)."""
    return finished_shards + sum(count for shard, count in tally.items() if shard not in closed)


#: Seconds between two reads of the tally by the driver.
POLL_SECONDS = 0.25


class PairProgress:
    """Advances the driver's progress bar pair by pair: a shard received counts whole, a shard
    under way counts what its worker has reported to the tally (a :class:`PairTally` actor).

    Args:
        advance: Advances the bar by a number of pairs.
        tally: The tally actor's handle; ``None``: the bar advances shard by shard.
    """

    def __init__(self, advance: Callable[[int], None], tally: Any | None):
        self.advance, self.tally = advance, tally
        self.received, self.shown = 0, 0
        self.closed: set[int] = set()
        self.counts: dict[int, int] = {}

    def shard_received(self, index: int, pairs: int) -> None:
        """Shard number ``index`` came back with ``pairs`` pairs (computed, resumed or given up)."""
        self.received += pairs
        self.closed.add(index)
        self._show()

    async def follow(self) -> None:
        """Read the tally every :data:`POLL_SECONDS` and advance the bar, until cancelled."""
        if self.tally is None:
            return
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                self.counts = await asyncio.wrap_future(self.tally.snapshot.remote().future())
            except Exception:  # the tally is gone (its node was lost): the bar goes on shard by shard
                return
            self._show()

    def _show(self) -> None:
        value = pairs_done(self.received, self.counts, self.closed)
        if value > self.shown:
            self.advance(value - self.shown)
            self.shown = value
