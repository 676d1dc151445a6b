"""Loading samples from JSONL, JSON, CSV, Parquet, pandas DataFrames and lists of dicts.

A bad row never stops loading: it becomes an :class:`InputIssue` that names the source,
the line (or row) and the field, and the row is skipped. Only problems with a whole
source (missing file, empty file, unknown format, a JSON file that is not a list) raise
:class:`InputError`. ``strict=True`` turns every issue into an :class:`InputError`.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragmeter.schema import Sample

#: Fields that hold lists; CSV cells for them are JSON (or Python literal) lists.
LIST_FIELDS = frozenset(
    {
        "retrieved_contexts",
        "retrieved_context_ids",
        "reference_contexts",
        "reference_context_ids",
        "contexts",
    }
)
#: Fields that hold text; CSV cells for them are taken verbatim.
TEXT_FIELDS = frozenset({"id", "sample_id", "user_input", "question", "response", "answer", "reference", "ground_truth"})

SUPPORTED_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet")


@dataclass(frozen=True)
class InputIssue:
    """A problem with one row of input.

    Attributes:
        source: The file the row came from (or ``<DataFrame>``, ``<list>``).
        location: Where in the source: ``"line 7"``, ``"row 3"``.
        field: The offending field, with a list index when it applies
            (``"retrieved_contexts[2]"``), or ``None`` when the whole row is bad.
        message: What is wrong, in plain words.
        skipped: True when the row was dropped; False when the sample is still evaluated
            on the metrics it can support.
    """

    source: str
    location: str
    field: str | None
    message: str
    skipped: bool = True

    def __str__(self) -> str:
        where = f"{self.source}, {self.location}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "location": self.location,
            "field": self.field,
            "message": self.message,
            "skipped": self.skipped,
        }


class InputError(Exception):
    """Input that cannot be used at all (or any issue, in strict mode)."""

    def __init__(self, issues: Sequence[InputIssue]):
        self.issues = list(issues)
        lines = [str(i) for i in self.issues[:20]]
        if len(self.issues) > 20:
            lines.append(f"... and {len(self.issues) - 20} more")
        super().__init__("\n".join(lines))


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


@dataclass
class Dataset:
    """Samples ready to evaluate, and the issues found while loading them."""

    samples: list[LoadedSample] = field(default_factory=list)
    issues: list[InputIssue] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[LoadedSample]:
        return iter(self.samples)


def load_dataset(*sources: Any, strict: bool = False) -> Dataset:
    """Load samples from one or more sources into a single :class:`Dataset`.

    Args:
        sources: File paths (``.jsonl``, ``.ndjson``, ``.json``, ``.csv``, ``.parquet``),
            pandas DataFrames, Hugging Face ``datasets.Dataset`` objects (anything with
            ``to_pandas()``), lists of dicts or lists of :class:`Sample`.
        strict: Raise :class:`InputError` on the first source with any bad row instead of
            skipping the row.

    Raises:
        InputError: A source is unreadable as a whole, or (strict) any row is bad.
    """
    dataset = Dataset()
    seen_keys: dict[str, str] = {}
    for source in sources:
        name, rows = _rows_of(source)
        for location, row in rows:
            if isinstance(row, InputIssue):
                dataset.issues.append(row)
                continue
            sample = row if isinstance(row, Sample) else _sample_or_issue(name, location, row)
            if isinstance(sample, InputIssue):
                dataset.issues.append(sample)
                continue
            key = sample.id if sample.id is not None else f"{name}:{location.split()[-1]}"
            if key in seen_keys:
                dataset.issues.append(
                    InputIssue(name, location, "id", f"duplicate id '{key}' (first seen at {seen_keys[key]})")
                )
                continue
            seen_keys[key] = f"{name}, {location}"
            dataset.samples.append(LoadedSample(sample, key, name, location))
    if strict and dataset.issues:
        raise InputError(dataset.issues)
    return dataset


def _sample_or_issue(source: str, location: str, record: Any) -> Sample | InputIssue:
    if not isinstance(record, dict):
        return InputIssue(source, location, None, f"expected an object with sample fields, got {_describe(record)}")
    try:
        return Sample.from_record(record)
    except ValidationError as exc:
        error = exc.errors()[0]
        field_name = _field_path(error["loc"])
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        elif "input" in error:
            message += f" (got {_describe(error['input'])})"
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


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


Rows = Iterable[tuple[str, Any]]


def _rows_of(source: Any) -> tuple[str, Rows]:
    if isinstance(source, (str, Path)):
        path = Path(source)
        return str(path), _rows_of_file(path)
    if hasattr(source, "to_pandas") and not hasattr(source, "iterrows"):
        source = source.to_pandas()
    if hasattr(source, "iterrows"):
        return "<DataFrame>", _rows_of_frame(source)
    if isinstance(source, (list, tuple)):
        return "<list>", ((f"row {i}", row) for i, row in enumerate(source, start=1))
    raise TypeError(f"cannot load samples from {type(source).__name__}; give a path, DataFrame or list")


def _rows_of_file(path: Path) -> Rows:
    if not path.exists():
        raise InputError([InputIssue(str(path), "file", None, "file not found")])
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise InputError(
            [InputIssue(str(path), "file", None, f"unsupported format '{suffix}'; use one of {', '.join(SUPPORTED_SUFFIXES)}")]
        )
    if suffix == ".parquet":
        import pandas as pd

        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for unreadable files
            raise InputError([InputIssue(str(path), "file", None, f"not a readable Parquet file: {exc}")]) from None
        return list(_rows_of_frame(frame, unit="row"))
    data = path.read_bytes()
    if not data.strip():
        raise InputError([InputIssue(str(path), "file", None, "file is empty")])
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if suffix in (".jsonl", ".ndjson"):
        return list(_rows_of_jsonl(str(path), data))
    lines, bad_lines = _decode_lines(data)
    if suffix == ".csv":
        return list(_rows_of_csv(str(path), lines, bad_lines))
    if bad_lines:
        line, reason = next(iter(bad_lines.items()))
        raise InputError([InputIssue(str(path), f"line {line}", None, reason)])
    return list(_rows_of_json(str(path), "".join(lines)))


def _decode_lines(data: bytes) -> tuple[list[str], dict[int, str]]:
    """Decode line by line so that invalid UTF-8 is pinned to its line."""
    lines: list[str] = []
    bad: dict[int, str] = {}
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            bad[number] = f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
            lines.append(raw.decode("utf-8", errors="replace"))
    return lines, bad


def _rows_of_jsonl(name: str, data: bytes) -> Rows:
    for number, raw in enumerate(data.splitlines(), start=1):
        location = f"line {number}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield location, InputIssue(name, location, None, f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})")
            continue
        if not text.strip():
            continue
        try:
            yield location, json.loads(text)
        except json.JSONDecodeError as exc:
            yield location, InputIssue(name, location, None, f"invalid JSON: {exc.msg} at column {exc.colno}")


def _rows_of_json(name: str, text: str) -> Rows:
    """Walk a JSON list item by item so that each item keeps its line number."""
    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if position >= len(text) or text[position] != "[":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError([InputIssue(name, f"line {exc.lineno}", None, f"invalid JSON: {exc.msg} at column {exc.colno}")]) from None
        raise InputError([InputIssue(name, "line 1", None, f"expected a JSON list of samples, got {type(value).__name__}")])
    position = _skip_space(text, position + 1)
    if position < len(text) and text[position] == "]":
        raise InputError([InputIssue(name, "file", None, "the JSON list is empty")])
    while position < len(text):
        line = text.count("\n", 0, position) + 1
        try:
            item, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise InputError([InputIssue(name, f"line {exc.lineno}", None, f"invalid JSON: {exc.msg} at column {exc.colno}")]) from None
        yield f"line {line}", item
        position = _skip_space(text, position)
        if position < len(text) and text[position] == ",":
            position = _skip_space(text, position + 1)
        elif position < len(text) and text[position] == "]":
            return
        else:
            line = text.count("\n", 0, position) + 1
            raise InputError([InputIssue(name, f"line {line}", None, "invalid JSON: expected ',' or ']' between samples")])
    raise InputError([InputIssue(name, "end of file", None, "invalid JSON: the list is not closed with ']'")])


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _rows_of_csv(name: str, lines: list[str], bad_lines: dict[int, str]) -> Rows:
    reader = csv.reader(io.StringIO("".join(lines), newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError([InputIssue(name, "file", None, "file is empty")]) from None
    header = [h.strip() for h in header]
    if 1 in bad_lines:
        raise InputError([InputIssue(name, "line 1", None, bad_lines[1])])
    previous_end = reader.line_num
    for cells in reader:
        start, end = previous_end + 1, reader.line_num
        previous_end = end
        location = f"line {start}"
        if not any(c.strip() for c in cells):
            continue
        bad = [n for n in range(start, end + 1) if n in bad_lines]
        if bad:
            yield location, InputIssue(name, f"line {bad[0]}", None, bad_lines[bad[0]])
            continue
        if len(cells) != len(header):
            yield location, InputIssue(name, location, None, f"expected {len(header)} columns as in the header, found {len(cells)}")
            continue
        record: dict[str, Any] = {}
        problem = None
        for column, cell in zip(header, cells):
            try:
                record[column] = _csv_value(column, cell)
            except ValueError as exc:
                problem = InputIssue(name, location, column, str(exc))
                break
        yield location, problem or record


def _csv_value(column: str, cell: str) -> Any:
    if cell == "":
        return None
    if column in TEXT_FIELDS:
        return cell
    if column in LIST_FIELDS:
        try:
            value = json.loads(cell)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(cell)
            except (ValueError, SyntaxError):
                raise ValueError("expected a JSON list such as [\"first\", \"second\"]") from None
        if not isinstance(value, list):
            raise ValueError(f"expected a JSON list, got {_describe(value)}")
        return value
    if column == "metadata":
        try:
            value = json.loads(cell)
        except json.JSONDecodeError as exc:
            raise ValueError(f"invalid JSON object: {exc.msg} at column {exc.colno}") from None
        return value
    # Other columns become metadata; numbers and booleans keep their type.
    try:
        return json.loads(cell) if cell.strip()[:1] in set("-0123456789tfn[{") else cell
    except json.JSONDecodeError:
        return cell


def _rows_of_frame(frame: Any, unit: str = "row") -> Rows:
    columns = list(frame.columns)
    for position, values in enumerate(frame.itertuples(index=False, name=None), start=1):
        yield f"{unit} {position}", {str(c): _plain(v) for c, v in zip(columns, values)}


def _plain(value: Any) -> Any:
    """Turn numpy and pandas values into plain Python ones; missing values into None."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return None
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _plain(value.tolist())
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value
