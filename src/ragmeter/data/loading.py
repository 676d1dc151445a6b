"""Loading samples from JSONL, JSON, CSV, Parquet, pandas DataFrames and lists of dicts.

A bad row never stops loading: it becomes an :class:`InputIssue` that names the source,
the line (or row) and the field, and the row is skipped. Only problems with a whole
source (missing file, empty file, unknown format, a JSON file that is not a list) raise
:class:`InputError`. ``strict=True`` turns every issue into an :class:`InputError`.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, overload

from pydantic import ValidationError

from ragmeter.data.issues import InputError, InputIssue
from ragmeter.data.readers import MAX_DEPTH, TOO_DEEP, describe_value, rows_of
from ragmeter.data.schema import Sample

#: JSON-lines files larger than this (bytes) keep their samples on disk (see :class:`SampleList`).
KEEP_ON_DISK_ABOVE = 64 * 2**20


@dataclass(frozen=True)
class LoadedSample:
    """A sample together with where it came from.

    Attributes:
        sample: The sample.
        key: Unique key within the dataset: the sample id, or source and line.
        source: The file (or ``<DataFrame>``) it came from.
        location: Its line or row in that source.
    """

    sample: Sample
    key: str
    source: str
    location: str


class SampleList(Sequence[LoadedSample]):
    """The samples of a dataset, in order. Samples of a large JSON-lines file are not held:
    only where each one is in the file, and the file is read again when a sample is asked
    for (the most recently used are kept), so a run of any size loads in little memory.
    """

    def __init__(self, samples: Iterable[LoadedSample] = ()):
        self._entries: list[LoadedSample | tuple[_JsonLines, int, str, str]] = list(samples)

    def append(self, sample: LoadedSample) -> None:
        self._entries.append(sample)

    def append_stored(self, source: _JsonLines, offset: int, key: str, location: str) -> None:
        """A sample to read from ``source`` at ``offset`` when it is asked for."""
        self._entries.append((source, offset, key, location))

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> LoadedSample: ...

    @overload
    def __getitem__(self, index: slice) -> list[LoadedSample]: ...

    def __getitem__(self, index: int | slice) -> LoadedSample | list[LoadedSample]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        entry = self._entries[index]
        if isinstance(entry, LoadedSample):
            return entry
        source, offset, key, location = entry
        return LoadedSample(source.sample_at(offset), key, source.name, location)

    def __iter__(self) -> Iterator[LoadedSample]:
        return (self[i] for i in range(len(self)))


class _JsonLines:
    """A JSON-lines source kept on disk: its samples are read back by byte offset, from a
    file descriptor held open (a file replaced meanwhile does not change what is read)."""

    def __init__(self, path: Path):
        self.name = str(path)
        self._handle = path.open("rb")
        self._closer = weakref.finalize(self, self._handle.close)
        self.sample_at = lru_cache(maxsize=1024)(self._read)

    def _read(self, offset: int) -> Sample:
        self._handle.seek(offset)
        line = self._handle.readline()
        return Sample.from_record(json.loads(line))


@dataclass
class Dataset:
    """Samples ready to evaluate, and the issues found while loading them."""

    samples: Sequence[LoadedSample] = field(default_factory=SampleList)
    issues: list[InputIssue] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[LoadedSample]:
        return iter(self.samples)


def load_dataset(*sources: Any, strict: bool = False, keep_on_disk_above: int = KEEP_ON_DISK_ABOVE) -> Dataset:
    """Load samples from one or more sources into a single :class:`Dataset`.

    Args:
        sources: File paths (``.jsonl``, ``.ndjson``, ``.json``, ``.csv``, ``.parquet``),
            pandas DataFrames, Hugging Face ``datasets.Dataset`` objects (anything with
            ``to_pandas()``), lists of dicts or lists of :class:`Sample`.
        strict: Raise :class:`InputError` on the first source with any bad row instead of
            skipping the row.
        keep_on_disk_above: JSON-lines files larger than this many bytes are checked row by
            row now but their samples stay on disk, read again when used (see
            :class:`SampleList`); smaller sources are held in memory.

    Raises:
        InputError: A source is unreadable as a whole, or (strict) any row is bad.
    """
    samples = SampleList()
    dataset = Dataset(samples=samples)
    seen_keys: dict[str, str] = {}
    for source in sources:
        name, rows = rows_of(source)
        on_disk = _JsonLines(Path(source)) if _large_json_lines(source, keep_on_disk_above) else None
        for location, row, offset in rows:
            if isinstance(row, InputIssue):
                dataset.issues.append(row)
                continue
            sample = _checked_sample(name, location, row) if isinstance(row, Sample) else _sample_or_issue(name, location, row)
            if isinstance(sample, InputIssue):
                dataset.issues.append(sample)
                continue
            key = sample.id if sample.id is not None else f"{name}:{location.split()[-1]}"
            if key in seen_keys:
                dataset.issues.append(InputIssue(name, location, "id", f"duplicate id '{key}' (first seen at {seen_keys[key]})"))
                continue
            seen_keys[key] = f"{name}, {location}"
            if on_disk is not None and offset is not None:
                samples.append_stored(on_disk, offset, key, location)
            else:
                samples.append(LoadedSample(sample, key, name, location))
    if strict and dataset.issues:
        raise InputError(dataset.issues)
    return dataset


def _large_json_lines(source: Any, threshold: int) -> bool:
    if not isinstance(source, (str, Path)):
        return False
    path = Path(source)
    return path.suffix.lower() in (".jsonl", ".ndjson") and path.is_file() and path.stat().st_size > threshold


def _checked_sample(source: str, location: str, sample: Sample) -> Sample | InputIssue:
    """A :class:`Sample` given as it is, held to the same nesting limit as a record read from
    a file (deeper values could not be written to the run's files or shown in its report)."""
    deep = too_deep(dict(sample))
    return sample if deep is None else InputIssue(source, location, deep, TOO_DEEP)


def _sample_or_issue(source: str, location: str, record: Any) -> Sample | InputIssue:
    if not isinstance(record, dict):
        return InputIssue(source, location, None, f"expected an object with sample fields, got {describe_value(record)}")
    deep = too_deep(record)
    if deep is not None:
        return InputIssue(source, location, deep, TOO_DEEP)
    try:
        return Sample.from_record(record)
    except ValidationError as exc:
        error = exc.errors()[0]
        field_name = _field_path(error["loc"])
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        elif "input" in error:
            message += f" (got {describe_value(error['input'])})"
        more = len(exc.errors()) - 1
        if more:
            message += f"; and {more} more problem{'s' if more > 1 else ''} in this row"
        return InputIssue(source, location, field_name, message)
    except ValueError as exc:
        return InputIssue(source, location, None, str(exc))


def _field_path(loc: Sequence[Any]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def as_dataset(data: Any, strict: bool = False) -> Dataset:
    """``data`` as a :class:`Dataset`: a Dataset as it is; a path or a list of paths, a
    DataFrame, a Hugging Face dataset or a list of dicts or Samples loaded with
    :func:`load_dataset`."""
    if isinstance(data, Dataset):
        return data
    if isinstance(data, (list, tuple)) and data and all(isinstance(d, (str, Path)) for d in data):
        return load_dataset(*data, strict=strict)
    return load_dataset(data, strict=strict)


def too_deep(record: dict[str, Any], limit: int = MAX_DEPTH) -> str | None:
    """The top-level field of ``record`` whose value nests lists and objects more than
    ``limit`` levels deep, or ``None``. Iterative, so any depth is measured safely."""
    for key, value in record.items():
        stack = [(value, 1)]
        while stack:
            item, depth = stack.pop()
            if isinstance(item, (dict, list, tuple)):
                if depth > limit:
                    return str(key)
                children = item.values() if isinstance(item, dict) else item
                stack.extend((child, depth + 1) for child in children)
    return None
