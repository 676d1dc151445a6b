"""Shards of a run: consecutive samples with their pending pairs, as a distributed executor
hands them out (:mod:`ragmeter.run.ray_executor`), and which of a shard's pairs its own journal
already holds. Nothing here needs Ray."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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
