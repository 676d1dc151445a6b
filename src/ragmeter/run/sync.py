"""Running a coroutine to completion from ordinary code, also inside a notebook's event loop.

Ctrl-C (SIGINT), when the coroutine runs in the main thread of a program:

- the first one cancels the coroutine: it stops within seconds (work not started is
  dropped, the model call or request under way is let finish), its ``finally`` blocks run
  (the journal is closed with every finished score in it), and :class:`KeyboardInterrupt`
  is raised to the caller;
- a second one, while that clean-up runs, ends the process at once with exit code 130
  (journalled scores are already on disk: each line was handed to the operating system as
  it was written).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: Exit code of a process ended by an interrupt (128 + SIGINT).
INTERRUPTED = 130


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` and return its result (see the module docstring for Ctrl-C).

    Without a running event loop it runs on a new loop in this thread; inside one (a
    notebook), on a new loop in a helper thread while the caller waits, its exception (if any)
    raised in the caller.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(coroutine)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _run_here(coroutine: Coroutine[Any, Any, T]) -> T:
    loop = asyncio.new_event_loop()
    task = loop.create_task(coroutine)
    interrupts = 0

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            loop.call_soon_threadsafe(task.cancel)
            return
        sys.stderr.write("\ninterrupted again: exiting now; finished scores are journalled\n")
        sys.stderr.flush()
        os._exit(INTERRUPTED)

    handles_sigint = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    previous = signal.signal(signal.SIGINT, on_sigint) if handles_sigint else None
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if interrupts:
            raise KeyboardInterrupt from None
        raise
    finally:
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
            if handles_sigint:
                signal.signal(signal.SIGINT, previous)


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
