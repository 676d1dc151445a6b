"""Running a coroutine to completion from ordinary code, also inside a notebook's event loop.

Ctrl-C (SIGINT), when the coroutine runs in the main thread of a program:

- the first one cancels the coroutine: it stops within seconds (work not started is
  dropped, the model call or request under way is let finish), its ``finally`` blocks run
  (the journal is closed with every finished score in it), and :class:`KeyboardInterrupt`
  is raised to the caller;
- a second one, while that clean-up runs, ends the process at once with exit code 130
  (journalled scores are already on disk: each line was handed to the operating system as
  it was written).

SIGTERM (a ``kill``, a CI job cancelled, a container stopped) is handled the same way while
:func:`stop_on_sigterm` is its handler (the command line sets it with :func:`sigterm_stops`),
raising :class:`Terminated`; its exit code is 143.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

#: Exit code of a process ended by an interrupt (128 + SIGINT).
INTERRUPTED = 130
#: Exit code of a process ended by SIGTERM (128 + SIGTERM).
TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM asked the program to stop: handled as Ctrl-C is, but said and exited as a stop (143)."""


def stop_on_sigterm(signum: int, frame: Any) -> None:
    """A SIGTERM handler raising :class:`Terminated`, as Python's own SIGINT handler raises
    :class:`KeyboardInterrupt` (``signum`` and ``frame`` as :mod:`signal` passes them)."""
    raise Terminated


@contextmanager
def sigterm_stops() -> Iterator[None]:
    """Within it, SIGTERM raises :class:`Terminated` (when this is the main thread and SIGTERM
    has its default action, which ends the process without a word or any clean-up)."""
    takes_over = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    previous = signal.signal(signal.SIGTERM, stop_on_sigterm) if takes_over else None
    try:
        yield
    finally:
        if takes_over:
            signal.signal(signal.SIGTERM, previous)


def interruption(stop: KeyboardInterrupt) -> tuple[str, int]:
    """How to say an interruption (``stop``: Ctrl-C's :class:`KeyboardInterrupt` or a SIGTERM's
    :class:`Terminated`), and the exit code it ends in."""
    return ("stopped by SIGTERM", TERMINATED) if isinstance(stop, Terminated) else ("interrupted", INTERRUPTED)


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
    stops: list[KeyboardInterrupt] = []  # the interruption each signal caught stands for

    def on_stop(signum: int, frame: Any) -> None:
        stops.append(Terminated() if signum == signal.SIGTERM else KeyboardInterrupt())
        if len(stops) == 1:
            loop.call_soon_threadsafe(task.cancel)
            return
        sys.stderr.write(f"\n{interruption(stops[-1])[0]} again: exiting now; finished scores are journalled\n")
        sys.stderr.flush()
        os._exit(interruption(stops[0])[1])

    # Only the handlers that raise an interruption are taken over: not one a program set itself.
    ours = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: stop_on_sigterm}
    main = threading.current_thread() is threading.main_thread()
    previous = {number: signal.signal(number, on_stop) for number, handler in ours.items() if main and signal.getsignal(number) is handler}
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if stops:
            raise stops[0] from None
        raise
    finally:
        try:
            _cancel_all(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
            for number, handler in previous.items():
                signal.signal(number, handler)


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
