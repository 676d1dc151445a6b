"""Knowledge-base change: which documents were added, removed or edited since a baseline.

A snapshot is the SHA-256 of each file under the knowledge base's folder (by relative path),
kept as JSON; comparing a new snapshot with the baseline gives the three lists.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ragmeter.data.files import json_value, write_json


class SnapshotError(ValueError):
    """A knowledge base or baseline that cannot be read; the message names the file."""


@dataclass
class KnowledgeBaseChange:
    """Documents added, removed and edited since the baseline (relative paths, sorted).

    Attributes:
        added: In the knowledge base now, not in the baseline.
        removed: In the baseline, gone now.
        edited: In both, with other content.
        unchanged: How many documents are the same.
    """

    added: list[str]
    removed: list[str]
    edited: list[str]
    unchanged: int

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.edited)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "changed": self.changed}


def snapshot(folder: str | Path, leave_out: Iterable[Path | None] = ()) -> dict[str, str]:
    """The SHA-256 of every file under ``folder`` (hidden files and folders left out), by
    relative path with ``/`` separators; a name that is no UTF-8 with its bytes escaped
    (``bad\\xff.md``), so the key is the same on every run and two such names stay two.

    Args:
        folder: The knowledge base's folder.
        leave_out: Paths of files not to count (``None`` is passed over): the snapshot itself
            and the ``drift kb --json`` report, when they are kept inside ``folder`` (they
            change on every run: they alarmed on every run).

    Raises:
        SnapshotError: ``folder`` is not a readable folder.
    """
    root = Path(folder)
    if not root.is_dir():
        raise SnapshotError(f"{root} is not a folder")
    skipped = {Path(path).resolve() for path in leave_out if path is not None}
    hashes = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts) and path.resolve() not in skipped:
            try:
                hashes[_key(relative.as_posix())] = _sha256(path)
            except OSError as exc:
                raise SnapshotError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return hashes


def _key(name: str) -> str:
    """``name`` as a snapshot key: as it is, or, when it is no UTF-8 (Python holds its bytes
    as halves of surrogate pairs, which a written snapshot would turn into U+FFFD), with
    those bytes escaped."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


def _sha256(path: Path) -> str:
    """The file's SHA-256, read a megabyte at a time (a knowledge base may hold videos)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def read_snapshot(path: str | Path) -> dict[str, str]:
    """A snapshot written by :func:`write_snapshot`.

    Raises:
        SnapshotError: It is missing, not JSON, or not an object of path to hash.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SnapshotError(f"{path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{path}: cannot read: {exc}") from None
    try:
        data = json_value(text)
    except ValueError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    documents = data.get("documents") if isinstance(data, dict) else None
    if not isinstance(documents, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in documents.items()):
        raise SnapshotError(f"{path}: expected an object with 'documents' mapping each path to its SHA-256")
    return documents


def write_snapshot(path: str | Path, documents: dict[str, str]) -> Path:
    """Write a snapshot atomically; return the path."""
    return write_json(path, {"documents": documents})


def compare_snapshots(baseline: dict[str, str], current: dict[str, str]) -> KnowledgeBaseChange:
    """What changed from ``baseline`` to ``current``."""
    added = sorted(set(current) - set(baseline))
    removed = sorted(set(baseline) - set(current))
    both = set(baseline) & set(current)
    edited = sorted(p for p in both if baseline[p] != current[p])
    return KnowledgeBaseChange(added, removed, edited, len(both) - len(edited))
