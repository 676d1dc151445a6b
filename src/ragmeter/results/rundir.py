"""A run directory: the files ``ragmeter eval`` writes and every later command reads.

Data files (this module):

- ``results.jsonl``: one JSON line per sample: the sample, each metric's score with its
  explanation, unscored reason and details, seconds and model usage.
- ``run.json``: the run's settings and bookkeeping, and the description of each metric.
- ``input_issues.jsonl``: every input problem (file, line or row, field, message).

Reports (``summary.json``, ``report.md``, ``report.html``) are written by
:mod:`ragmeter.report`; the journal by :mod:`ragmeter.run.journal`. A directory written
before ``run.json`` existed is read from its ``summary.json``.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar, overload

import numpy as np

from ragmeter.data import InputIssue
from ragmeter.data.files import json_object, read_json_lines, write_json, write_json_lines
from ragmeter.data.issues import describe_briefly
from ragmeter.results.records import SampleResult

RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"
ISSUES_FILE = "input_issues.jsonl"
#: Written by the report layer; read here only for directories older than run.json.
SUMMARY_FILE = "summary.json"

T = TypeVar("T")


class RunDirError(ValueError):
    """A directory that is not a readable ragmeter run; the message names the file (and line)."""


class StoredSamples(Sequence[SampleResult]):
    """The sample results of a ``results.jsonl`` file, read from disk when asked for: a run
    of any size is opened without holding its samples in memory.

    Args:
        path: The file.
        offsets: Byte offset of each sample's line, in order.
        lines: Line number (from 1) of each, for error messages.
        bounded: Ids of the metrics whose scores lie in [0, 1] (quality scores, no unit): a
            value outside is a damaged line.
    """

    def __init__(
        self, path: str | Path, offsets: Sequence[int], lines: Sequence[int] | None = None, bounded: Collection[str] = frozenset()
    ):
        self.path = Path(path)
        self._bounded = frozenset(bounded)
        self._offsets = np.asarray(offsets, dtype=np.int64)
        self._lines = np.asarray(lines if lines is not None else range(1, len(offsets) + 1), dtype=np.int64)
        # Held open: a later run that replaces the file does not change what this one reads.
        try:
            self._handle = self.path.open("rb")
        except OSError as exc:
            raise RunDirError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        self._closer = weakref.finalize(self, self._handle.close)

    @classmethod
    def of_file(cls, path: str | Path, bounded: Collection[str] = frozenset()) -> StoredSamples:
        """Find the lines of ``path`` (one pass over its bytes, nothing parsed); ``bounded``
        as for the class.

        Raises:
            RunDirError: It is missing or cannot be read.
        """
        path = Path(path)
        offsets, numbers = [], []
        try:
            with path.open("rb") as handle:
                for number, (offset, line) in enumerate(_lines_with_offsets(handle), start=1):
                    if line.strip():
                        offsets.append(offset)
                        numbers.append(number)
        except FileNotFoundError:
            raise RunDirError(f"{path} not found: is {path.parent} a directory written by `ragmeter eval`?") from None
        except OSError as exc:
            raise RunDirError(f"{path}: cannot read: {exc.strerror or exc}") from None
        return cls(path, offsets, numbers, bounded)

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> SampleResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[SampleResult]: ...

    def __getitem__(self, index: int | slice) -> SampleResult | list[SampleResult]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("sample index out of range")
        return self._parse(self._line_at(int(self._offsets[index])), int(self._lines[index]))

    def __iter__(self) -> Iterator[SampleResult]:
        """The samples in order."""
        for offset, number in zip(self._offsets, self._lines, strict=True):
            yield self._parse(self._line_at(int(offset)), int(number))

    def _line_at(self, offset: int, block: int = 1 << 16) -> bytes:
        """The line at ``offset``, read without moving any shared file position."""
        parts = []
        descriptor = self._handle.fileno()
        while True:
            chunk = os.pread(descriptor, block, offset)
            end = chunk.find(b"\n")
            if end >= 0 or not chunk:
                parts.append(chunk[: end + 1] if end >= 0 else chunk)
                return b"".join(parts)
            parts.append(chunk)
            offset += len(chunk)

    def _parse(self, line: bytes, number: int) -> SampleResult:
        try:
            record = json_object(line)
        except ValueError as exc:
            raise RunDirError(f"{self.path}, line {number}: {exc}") from None
        try:
            result = SampleResult.from_dict(record)
        except (KeyError, TypeError, ValueError) as exc:
            raise RunDirError(f"{self.path}, line {number}: not a valid sample result: {exc}") from None
        for metric, score in result.scores.items():
            if metric in self._bounded and score.value is not None and not 0 <= score.value <= 1:
                problem = f"'scores.{metric}': {metric} is a score in [0, 1], got {score.value!r}"
                raise RunDirError(f"{self.path}, line {number}: not a valid sample result: {problem}")
        return result


def _lines_with_offsets(handle: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Each line of a binary file (split on ``\\n`` only) with its byte offset."""
    offset = 0
    for line in handle:
        yield offset, line
        offset += len(line)


def write_run(
    directory: str | Path,
    samples: Sequence[SampleResult],
    run: dict[str, Any],
    metrics: list[dict[str, Any]],
    issues: Iterable[InputIssue],
) -> None:
    """Write ``results.jsonl``, ``run.json`` and ``input_issues.jsonl`` into ``directory``
    (created if missing), each atomically. ``results.jsonl`` is not rewritten when
    ``samples`` are read from that very file."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / RESULTS_FILE
    stored_here = isinstance(samples, StoredSamples) and target.exists() and samples.path.resolve() == target.resolve()
    if not stored_here:
        write_json_lines(target, (s.to_dict() for s in samples))
    write_json(directory / RUN_FILE, {"run": run, "metrics": metrics})
    write_json_lines(directory / ISSUES_FILE, (i.to_dict() for i in issues))


def read_run(directory: str | Path) -> tuple[StoredSamples, list[dict[str, Any]], list[InputIssue], dict[str, Any]]:
    """The sample results (read from disk when asked for), metric descriptions, input
    issues and run settings of a run directory.

    Raises:
        RunDirError: A file is missing, is not valid JSON, or holds records of the wrong
            shape; the message names the file and the line.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise RunDirError(f"{directory} is not a directory written by `ragmeter eval`")
    header = _read_header(directory)
    bounded = {m["id"] for m in header["metrics"] if m["unit"] is None}
    samples = StoredSamples.of_file(directory / RESULTS_FILE, bounded)
    issues_path = directory / ISSUES_FILE
    issues = _records(issues_path, lambda r: InputIssue(**r), "input issue") if issues_path.exists() else []
    metrics = [{k: v for k, v in m.items() if k != "aggregate"} for m in header["metrics"]]
    return samples, metrics, issues, header.get("run") or {}


def _read_header(directory: Path) -> dict[str, Any]:
    """The run settings and metric descriptions: ``run.json``, else ``summary.json``."""
    for name in (RUN_FILE, SUMMARY_FILE):
        path = directory / name
        if not path.exists():
            continue
        try:
            header = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise RunDirError(f"{path}: cannot read: {exc}") from None
        except json.JSONDecodeError as exc:
            raise RunDirError(f"{path}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
        if not isinstance(header, dict) or not isinstance(header.get("metrics"), list):
            raise RunDirError(f"{path}: expected an object with a 'metrics' list")
        problem = _header_problem(header)
        if problem is not None:
            raise RunDirError(f"{path}: {problem}")
        return header
    raise RunDirError(f"{directory / RUN_FILE} not found: is {directory} a directory written by `ragmeter eval`?")


#: Field types: the types a value may have, and how a message says them.
_Kind = tuple[tuple[type, ...], str]
_TEXT: _Kind = ((str,), "text")
_OBJECT: _Kind = ((dict,), "an object")
_LIST: _Kind = ((list,), "a list")
_NUMBER: _Kind = ((int, float), "a number")
_TEXT_OR_NULL: _Kind = ((str, type(None)), "text or null")
#: Each field of a metric's description with its type, and whether it must be there (the
#: reports read the required ones of every metric).
_METRIC_FIELDS: dict[str, tuple[_Kind, bool]] = {
    "id": (_TEXT, True),
    "family": (_TEXT, True),
    "unit": (((str, type(None)), "text or null"), True),
    "higher_is_better": (((bool,), "true or false"), True),
    "name": (_TEXT, False),
    "needs": (_TEXT, False),
    "description": (_TEXT, False),
    "required": (_LIST, False),
    "config": (_OBJECT, False),
}
#: The run settings the reports read, with the type each must have when it is there.
_RUN_FIELDS: dict[str, _Kind] = {
    "n_samples": ((int,), "a whole number"),
    "seconds": ((int, float), "a number"),
    "sources": _LIST,
    "started_at": _TEXT,
    "ragmeter_version": _TEXT,
    "judge": ((dict, type(None)), "an object or null"),
}


def _header_problem(header: dict[str, Any]) -> str | None:
    """What is wrong with a header's fields (``field 'run.seconds' must be ...``), or ``None``."""
    run = header.get("run")
    if run is not None and not isinstance(run, dict):
        return f"field 'run' must be an object, not {type(run).__name__}"
    for name, kind in _RUN_FIELDS.items():
        if run and name in run and not _is(run[name], kind):
            return f"field 'run.{name}' must be {kind[1]}, not {type(run[name]).__name__}"
    if run and isinstance(run.get("sources"), list) and not all(isinstance(s, str) for s in run["sources"]):
        return "field 'run.sources' must be a list of text"
    if run and run.get("judge"):
        problem = _judge_problem(run["judge"], "run.judge")
        if problem is not None:
            return problem
    seen: set[str] = set()
    for position, metric in enumerate(header["metrics"]):
        where = f"metrics[{position}]"
        if not isinstance(metric, dict):
            return f"field '{where}' must be an object, not {type(metric).__name__}"
        for name, (kind, required) in _METRIC_FIELDS.items():
            if name not in metric and required:
                return f"field '{where}.{name}' is missing"
            if name in metric and not _is(metric[name], kind):
                return f"field '{where}.{name}' must be {kind[1]}, not {type(metric[name]).__name__}"
        if metric["id"] in seen:
            return f"field '{where}.id': metric {describe_briefly(metric['id'])} is listed twice"
        seen.add(metric["id"])
    return None


#: The fields of a judge's description (``run.judge``) the reports read, with their types; an
#: ensemble's members are judges too. Each list's or object's items: :data:`_JUDGE_ITEMS`.
_JUDGE_FIELDS: dict[str, _Kind] = {
    "backend": _TEXT,
    "model": _TEXT,
    "combine": _TEXT,
    "verdict_mode": _TEXT,
    "base_url": _TEXT_OR_NULL,
    "verdict_mode_used": _TEXT_OR_NULL,
    "verdict_methods": _OBJECT,
    "prompt_files": _OBJECT,
    "p_yes_spread": _OBJECT,
    "probe": ((dict, str), "an object or text"),
    "members": _LIST,
    "warnings": _LIST,
}
_JUDGE_ITEMS: dict[str, _Kind] = {
    "verdict_methods": ((int,), "a whole number"),
    "prompt_files": _TEXT,
    "p_yes_spread": _OBJECT,
    "members": _OBJECT,
    "warnings": _TEXT,
}
#: A task's entry of an ensemble's ``p_yes_spread``, the verdict probe, and each mode it tried.
_SPREAD_FIELDS: dict[str, _Kind] = {"mean": _NUMBER, "max": _NUMBER, "share_split": _NUMBER}
_PROBE_FIELDS: dict[str, _Kind] = {"chosen": _TEXT_OR_NULL, "tried": _LIST}
_TRIED_FIELDS: dict[str, _Kind] = {
    "mode": _TEXT_OR_NULL,
    "method": _TEXT_OR_NULL,
    "error": _TEXT_OR_NULL,
    "roc_auc": ((int, float, type(None)), "a number or null"),
    "balanced_accuracy": ((int, float, type(None)), "a number or null"),
}


def _judge_problem(judge: dict[str, Any], where: str) -> str | None:
    """What is wrong with a judge's description at ``where`` (``run.judge.members[1]``), or ``None``."""
    problem = _fields_problem(judge, _JUDGE_FIELDS, where)
    if problem is not None:
        return problem
    for name, kind in _JUDGE_ITEMS.items():
        items = judge.get(name) or []
        for key, item in items.items() if isinstance(items, dict) else enumerate(items):
            place = f"{where}.{name}[{describe_briefly(key)}]"
            if not _is(item, kind):
                return f"field '{place}' must be {kind[1]}, not {type(item).__name__}"
            if name == "members":
                problem = _judge_problem(item, place)
            elif name == "p_yes_spread":
                problem = _fields_problem(item, _SPREAD_FIELDS, place)
            if problem is not None:
                return problem
    probe = judge.get("probe")
    if not isinstance(probe, dict):
        return None
    problem = _fields_problem(probe, _PROBE_FIELDS, f"{where}.probe")
    for position, tried in enumerate(probe.get("tried") or [] if problem is None else []):
        place = f"{where}.probe.tried[{position}]"
        if not isinstance(tried, dict):
            return f"field '{place}' must be an object, not {type(tried).__name__}"
        problem = _fields_problem(tried, _TRIED_FIELDS, place)
        if problem is not None:
            return problem
    return problem


def _fields_problem(record: dict[str, Any], fields: dict[str, _Kind], where: str) -> str | None:
    """The first field of ``record`` (when there) not of its type in ``fields``, said as a problem, or ``None``."""
    for name, kind in fields.items():
        if name in record and not _is(record[name], kind):
            return f"field '{where}.{name}' must be {kind[1]}, not {type(record[name]).__name__}"
    return None


def _is(value: Any, kind: _Kind) -> bool:
    """Whether ``value`` has the type ``kind`` asks for; ``True`` and ``False`` are not numbers here."""
    types = kind[0]
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def _records(path: Path, build: Callable[[dict[str, Any]], T], what: str) -> list[T]:
    """``build`` applied to each object of a JSON-lines file; errors name file and line."""
    if not path.exists():
        raise RunDirError(f"{path} not found: is {path.parent} a directory written by `ragmeter eval`?")
    built = []
    try:
        for number, line in read_json_lines(path):
            try:
                record = json_object(line)
            except ValueError as exc:
                raise RunDirError(f"{path}, line {number}: {exc}") from None
            try:
                built.append(build(record))
            except (KeyError, TypeError, ValueError) as exc:
                raise RunDirError(f"{path}, line {number}: not a valid {what}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: cannot read: {exc}") from None
    return built
