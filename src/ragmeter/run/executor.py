"""Where (sample, metric) pairs are scored: in this process, on the event loop.

:class:`LocalExecutor` runs at most ``concurrency`` pairs at a time, in the order given
(sample by sample, so a sample's metrics run close together and share the judge's state of
its contexts), with a progress bar and ETA on a terminal. Another executor (a cluster) only
has to offer the same :meth:`LocalExecutor.run`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

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
        with _Progress(self.progress, total, self.label) as advance:

            async def worker() -> None:
                for item in items:
                    await job(item)
                    advance()

            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, max(1, total)))))


class _Progress:
    """A rich progress bar with ETA, or nothing when disabled."""

    def __init__(self, enabled: bool, total: int, label: str):
        self.enabled, self.total, self.label = enabled and total > 0, total, label
        self._bar: Any = None

    def __enter__(self) -> Callable[[], None]:
        if not self.enabled:
            return lambda: None
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
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()
