"""Reading human labels: one JSON object per line naming a sample by ``id``.

``{"id": "q7", "label": 1}`` (a score in [0, 1], for ``calibrate``) or
``{"id": "q7", "better": "A"}`` (a preference, for ``pairwise``). Every problem is kept
with its file and line: bytes that are no UTF-8, bad JSON, a missing field, a value of the
wrong kind, an id that is not text or a number (null, true, a list), an id labelled twice
(the first label is kept). Nothing is dropped silently.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from ragmeter.data.encodings import decode_text, encoding_hint, invalid_utf8, unicode_bom, unmarked_utf16
from ragmeter.data.files import json_value
from ragmeter.data.issues import describe_briefly
from ragmeter.data.schema import id_text
from ragmeter.metrics.base import finite_number

V = TypeVar("V")


@dataclass
class Labels(Generic[V]):
    """Labels by sample id, and the problems met reading them (each naming file and line)."""

    by_id: dict[str, V] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def score(value: Any) -> float:
    """A label that is a number in [0, 1] (0/1 for yes/no)."""
    if finite_number(value) is None or not 0 <= value <= 1:
        raise ValueError(f"must be a number in [0, 1], got {describe_briefly(value)}")
    return float(value)


def preference(value: Any) -> str:
    """A label saying which of two responses is better: ``"a"``, ``"b"`` or ``"tie"``
    (written A, B or tie, in any case)."""
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text not in ("a", "b", "tie"):
        raise ValueError(f"must be A, B or tie, got {describe_briefly(value)}")
    return text


def read_labels(path: str | Path, field_name: str, parse: Callable[[Any], V]) -> Labels[V]:
    """Read a labels file.

    Args:
        path: JSON-lines file with one ``{"id": ..., field_name: ...}`` per line.
        field_name: The field holding the label (``"label"``, ``"better"``).
        parse: Turns the field's value into a label; raises ``ValueError`` naming what is
            wrong (see :func:`score`, :func:`preference`).

    Raises:
        ValueError: The file cannot be read (missing, a folder, not readable), is UTF-16 without
            a byte-order mark (:func:`~ragmeter.data.encodings.unmarked_utf16`) or holds no line
            but blank ones; the message names the file. UTF-16 or UTF-32 with its mark is read.
    """
    labels: Labels[V] = Labels()
    try:
        data = Path(path).read_bytes()
    except OSError as exc:  # "[Errno 21] Is a directory: 'labels.jsonl'" said neither what the file was for nor plainly why
        raise ValueError(f"{path}: cannot read the labels file: {exc.strerror or exc}") from None
    if unicode_bom(data) in ("utf-16", "utf-32"):  # Windows' "Unicode" text, read as the samples reader reads it
        try:
            data = decode_text(data).encode("utf-8")
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    if not data.removeprefix(codecs.BOM_UTF8).strip():  # no label and no problem: it was taken as labels that matched nothing
        raise ValueError(f'{path}: the labels file is empty (one {{"id": ..., "{field_name}": ...}} per line)')
    unmarked = unmarked_utf16(data)
    if unmarked:  # valid UTF-8 all the same: every line would only be found invalid JSON
        raise ValueError(f"{path}: {unmarked}")
    hint = None  # which encoding the file may be in: worked out once, for the first line that is no UTF-8
    for number, raw in enumerate(data.removeprefix(codecs.BOM_UTF8).split(b"\n"), start=1):  # a byte-order mark is no part of line 1
        where = f"{path}, line {number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:  # replaced by U+FFFD, they made an id that matched no sample
            hint = hint if hint is not None else encoding_hint(data)
            labels.problems.append(f"{where}: {invalid_utf8(raw, exc, hint)}")
            continue
        if not line.strip():
            continue
        try:
            row = json_value(line)
        except ValueError as exc:
            labels.problems.append(f"{where}: {exc}")
            continue
        if not isinstance(row, dict) or "id" not in row or field_name not in row:
            labels.problems.append(f'{where}: expected {{"id": ..., "{field_name}": ...}}')
            continue
        key = id_text(row["id"])  # as a sample's id is read: 7 and 7.0 are "7"
        if not isinstance(key, str) or not key.strip():
            labels.problems.append(f"{where}: 'id' must be text or a number, got {describe_briefly(row['id'])}")
            continue
        try:
            value = parse(row[field_name])
        except ValueError as exc:
            labels.problems.append(f"{where}: '{field_name}' of {describe_briefly(key)} {exc}")
            continue
        if key in labels.by_id:
            labels.problems.append(f"{where}: id {describe_briefly(key)} labelled again; the first label is kept")
            continue
        labels.by_id[key] = value
    return labels
