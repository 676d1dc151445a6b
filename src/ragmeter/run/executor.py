"""Where (sample, metric) pairs are scored: in this process, on the event loop.

:class:`LocalExecutor` runs at most ``concurrency`` pairs at a time, in the order given
(sample by sample, so a sample's metrics run close together and share the judge's state of
its contexts), with a progress bar and ETA on a terminal.

An executor that scores away from this process (a cluster: :mod:`ragmeter.run.ray_executor`)
cannot call back into the engine for each pair; it offers :meth:`RemoteExecutor.score`
instead, which takes the whole :class:`PairWork` and reports each finished pair.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ragmeter.data.schema import Sample
from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Metric, Score

T = TypeVar("T")


class LocalExecutor:
    """Runs scoring jobs concurrently on the running event loop.

    Args:
        concurrency: Most jobs in flight at once.
        progress: Show a progress bar with ETA.
        label: The progress bar's label.
    """

    def __init__(self, concurrency: int, progress: bool, label: str = "scoring"):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency, self.progress, self.label = concurrency, progress, label

    async def run(self, jobs: Iterable[T], total: int, job: Callable[[T], Awaitable[None]]) -> None:
        """Run ``job`` on every item of ``jobs`` (``total`` of them), taking items as workers
        free up, so ``jobs`` may be a lazy iterator of any length; returns when all are done.
        A job's own errors are its to handle: an exception here ends the run."""
        items = iter(jobs)
        with Progress(self.progress, total, self.label) as advance:

            async def worker() -> None:
                for item in items:
                    await job(item)
                    advance()
                    await asyncio.sleep(0)  # a job that never waits (a model-free metric) still lets Ctrl-C's cancel in

            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, max(1, total)))))


class ExecutorError(RuntimeError):
    """An executor cannot run: its library is not installed, or its cluster cannot be reached."""


@dataclass(frozen=True)
class PairWork:
    """The pairs a run still has to compute, with what scoring them away from the engine needs.

    Attributes:
        metrics: The run's metrics (columns).
        configs: Each metric's reuse key (journal records carry it).
        keys: Each sample's key, in dataset order (rows).
        fingerprints: Each sample's content hash.
        pairs: The (row, column) pairs to compute, sample by sample.
        samples: The sample at each row that has a pair to compute.
        out_dir: The run's output directory (shard journals go there); ``None``: no journal.
    """

    metrics: Sequence[Metric]
    configs: Sequence[str]
    keys: Sequence[str]
    fingerprints: Sequence[str]
    pairs: Sequence[tuple[int, int]]
    samples: dict[int, Sample]
    out_dir: Path | None


#: Reports one finished pair to the engine: row, metric id, score, seconds, usage, and
#: whether the executor journalled it already.
PairDone = Callable[[int, str, Score, float, Usage, bool], None]


class RemoteExecutor(Protocol):
    """An executor that scores a run's pairs outside the engine's process."""

    async def score(self, work: PairWork, done: PairDone) -> dict[str, Any]:
        """Compute every pair of ``work``, calling ``done`` once per pair (in this process);
        returns what the run's ``run.json`` says about the execution."""
        ...

    def hold(self) -> AbstractContextManager[None]:
        """Keep what the executor starts (a cluster) across the runs made inside this context."""
        ...


class Progress:
    """A rich progress bar with ETA, or nothing when disabled; entering it gives a function
    that advances it by a number of jobs (default one).

    Args:
        enabled: Show the bar (nothing is shown when there are no jobs).
        total: The number of jobs.
        label: The bar's label.
    """

    def __init__(self, enabled: bool, total: int, label: str):
        self.enabled, self.total, self.label = enabled and total > 0, total, label
        self._bar: Any = None

    def __enter__(self) -> Callable[..., None]:
        if not self.enabled:
            return lambda done=1: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._bar = Progress(
            TextColumn(self.label, markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            transient=False,
        )
        self._bar.start()
        task = self._bar.add_task(self.label, total=self.total)
        return lambda done=1: self._bar.advance(task, done)

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()
