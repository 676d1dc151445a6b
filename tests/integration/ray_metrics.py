"""A metric for the Ray executor's tests that lets a test kill the worker scoring a chosen
sample: on the trap sample (first attempt only) it writes its process id and waits."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ragmeter import Metric, Score


@dataclass(frozen=True)
class TrapLength(Metric):
    """Length of the response over 100; logs each completed call to ``calls.log`` in
    ``log_dir``. On the sample ``trap``, until ``log_dir/killed`` exists, it writes the
    worker's process id to ``trap.pid`` and sleeps (the test kills the worker then)."""

    name: ClassVar[str] = "trap_length"
    family: ClassVar[str] = "lexical"
    required: ClassVar[tuple[str, ...]] = ("response",)
    log_dir: str = ""
    trap: str = ""

    async def score(self, sample, judges):
        folder = Path(self.log_dir)
        if sample.id == self.trap and not (folder / "killed").exists():
            (folder / "trap.pid").write_text(str(os.getpid()), encoding="utf-8")
            await asyncio.sleep(300)
        with open(folder / "calls.log", "a", encoding="utf-8") as log:
            log.write(f"{sample.id} {os.getpid()}\n")
        return Score(min(1.0, len(sample.response or "") / 100), "length")


@dataclass(frozen=True)
class SlowLength(Metric):
    """Length of the response over 100, after ``seconds`` of waiting (a pair that takes time)."""

    name: ClassVar[str] = "slow_length"
    family: ClassVar[str] = "lexical"
    required: ClassVar[tuple[str, ...]] = ("response",)
    seconds: float = 0.5

    async def score(self, sample, judges):
        await asyncio.sleep(self.seconds)
        return Score(min(1.0, len(sample.response or "") / 100), "length")
