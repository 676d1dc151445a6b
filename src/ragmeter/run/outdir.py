"""A run's output directory: made ready (or a clear error), and locked against a second run.

Two runs writing the same directory would both do all the work and trample each other's
journal. :func:`locked` takes an exclusive lock (``fcntl.flock`` on ``.ragmeter.lock`` in
the directory) for as long as the run writes there; a second process gets
:class:`OutputDirError` naming the process that holds it. The operating system releases the
lock when its holder exits, however it exits (a kill included), so a lock never goes stale.
The lock is re-entrant within a process: the command line holds it across evaluation and
report writing, and the engine inside does not lock itself out.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from ragmeter.data.secrets import redact

LOCK_FILE = ".ragmeter.lock"

_held: dict[Path, int] = {}
_held_guard = threading.Lock()


class OutputDirError(ValueError):
    """The output directory cannot be used: it is a file, cannot be created or written, or
    another run holds it. The message names the directory and what to do."""


def prepare(directory: str | Path, option: str = "--out") -> Path:
    """Create ``directory`` if needed and check that files can be written in it.

    Args:
        directory: The output directory.
        option: How the user named it, for messages (``--out``).

    Raises:
        OutputDirError: It is an existing file, lies under a file, cannot be created, or is
            not writable (the message names it, and the file in its way).
    """
    path = check_usable(directory, option)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # made in the meantime, or refused by the file system
        raise OutputDirError(f"{option} {path} cannot be created: {exc.strerror or exc}") from None
    return path


def check_usable(directory: str | Path, option: str = "--out") -> Path:
    """Check that :func:`prepare` could make ``directory`` ready, creating nothing: a command
    says a bad output directory before its costly work, and leaves no empty one behind when
    that work cannot start.

    Args:
        directory: The output directory, which may not exist yet.
        option: How the user named it, for messages (``--out``).

    Raises:
        OutputDirError: It is an existing file, lies under a file, or it (or the nearest
            folder above it that exists) is not writable; the message names it.
    """
    path = Path(directory)
    if path.exists() and not path.is_dir():
        raise OutputDirError(f"{option} {path} is a file, not a directory")
    nearest = next(p for p in [path, *path.parents] if p.exists())  # "/" or "." at the latest
    if not nearest.is_dir():
        raise OutputDirError(f"{option} {path} cannot be created: {nearest} is a file, not a directory")
    if not os.access(nearest, os.W_OK | os.X_OK):
        what = "is not writable" if nearest == path else f"cannot be created in {nearest}, which is not writable"
        raise OutputDirError(f"{option} {path} {what}: choose another directory or fix its permissions")
    return path


@contextmanager
def locked(directory: str | Path, option: str = "--out") -> Iterator[Path]:
    """Hold the run lock of ``directory`` (prepared with :func:`prepare`) inside the block.

    Raises:
        OutputDirError: Another process holds it (the message names that process), or the
            directory cannot be used.
    """
    path = prepare(directory, option).resolve()
    with _held_guard:
        if path in _held:
            _held[path] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield path
        finally:
            with _held_guard:
                _held[path] -= 1
        return
    descriptor = _acquire(path, option)
    with _held_guard:
        _held[path] = 1
    try:
        yield path
    finally:
        with _held_guard:
            del _held[path]
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        os.close(descriptor)


def _acquire(path: Path, option: str) -> int:
    lock_path = path / LOCK_FILE
    if lock_path.is_symlink():  # planted: removed, never followed
        lock_path.unlink()
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(lock_path, flags, 0o644)
    except OSError as exc:
        reason = "it is a symbolic link" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise OutputDirError(f"cannot lock {option} {path}: {lock_path}: {reason}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(descriptor)
        os.close(descriptor)
        raise OutputDirError(
            f"{option} {path} is in use by another ragmeter run ({holder}): wait for it to finish, or choose another {option}"
        ) from None
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        # The command line can hold credentials (--judge-base-url http://user:KEY@host): masked.
        "command": redact(" ".join(sys.argv[:8]))[:300],
    }
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, (json.dumps(info) + "\n").encode("utf-8"), 0)
    return descriptor


def _holder(descriptor: int) -> str:
    """Who holds the lock, from what the holder wrote in the lock file."""
    try:
        info = json.loads(os.pread(descriptor, 4096, 0).decode("utf-8", errors="replace") or "{}")
    except json.JSONDecodeError:
        return "process unknown"
    if not isinstance(info, dict) or "pid" not in info:
        return "process unknown"
    return f"pid {info['pid']} on {info.get('host', '?')}, started {info.get('started', '?')}"
