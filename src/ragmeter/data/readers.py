"""Reading sample records from files and frames, row by row, with each row's location.

Each reader yields ``(location, record, offset)``, where ``record`` is a dict to turn into a
:class:`~ragmeter.data.schema.Sample` or an :class:`~ragmeter.data.issues.InputIssue` for a row
that cannot be read (invalid JSON or UTF-8, a CSV row with the wrong number of cells...).
Problems with a whole source raise :class:`~ragmeter.data.issues.InputError`.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import sys
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

from ragmeter.data.encodings import decode_text, encoding_hint, file_hint, invalid_utf8, marked_wide_file, unicode_bom, unmarked_utf16_file
from ragmeter.data.files import TOO_DEEP as JSON_TOO_DEEP
from ragmeter.data.files import json_problem, json_value, unpaired_surrogate
from ragmeter.data.issues import InputError, InputIssue
from ragmeter.data.json_numbers import TOO_LONG_NUMBER, TooLongNumber, brief_json, json_loads, too_long_number

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
_BOM = b"\xef\xbb\xbf"
#: Most levels of nesting a sample's values may have (lists and objects inside each other).
MAX_DEPTH = 32
#: A bare JSON integer, as a list item: only an integer can be too long to read.
_INTEGER = re.compile(r"-?[0-9]+")
TOO_DEEP = f"nested too deeply: a sample's values may nest lists and objects at most {MAX_DEPTH} levels deep"


def describe_value(value: Any) -> str:
    """A value's type and a short repr, for messages."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


#: (location, record or issue, byte offset of the row in its file: JSON lines only).
Rows = Iterable[tuple[str, Any, int | None]]


def rows_of(source: Any) -> tuple[str, Rows]:
    if isinstance(source, (str, Path)):
        path = Path(source)
        return str(path), _rows_of_file(path)
    if hasattr(source, "to_pandas") and not hasattr(source, "iterrows"):
        source = source.to_pandas()
    if hasattr(source, "iterrows"):
        return "<DataFrame>", _rows_of_frame(source)
    if isinstance(source, (list, tuple)):
        return "<list>", ((f"row {i}", row, None) for i, row in enumerate(source, start=1))
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
    try:
        unmarked = unmarked_utf16_file(path) or (marked_wide_file(path) if suffix in (".jsonl", ".ndjson") else None)
    except OSError as exc:  # a folder of that name, a file the user may not read
        raise InputError([InputIssue(str(path), "file", None, f"cannot read the file: {exc.strerror or exc}")]) from None
    if unmarked:  # its lines decode as UTF-8 (or, in UTF-16 with its mark, every line is found not to be UTF-8)
        raise InputError([InputIssue(str(path), "file", None, unmarked)])
    if suffix in (".jsonl", ".ndjson"):
        return _rows_of_jsonl(path)
    data = path.read_bytes()
    if not data.strip():
        raise InputError([InputIssue(str(path), "file", None, "file is empty")])
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    elif unicode_bom(data):  # UTF-16 or UTF-32 with its mark: read as the UTF-8 it stands for
        try:
            data = decode_text(data).encode("utf-8")
        except ValueError as exc:
            raise InputError([InputIssue(str(path), "file", None, str(exc))]) from None
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
    hint = None
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            hint = hint if hint is not None else encoding_hint(data)
            bad[number] = invalid_utf8(raw, exc, hint)
            lines.append(raw.decode("utf-8", errors="replace"))
    return lines, bad


def _rows_of_jsonl(path: Path) -> Rows:
    """The rows of a JSON-lines file, read line by line (never the whole file at once), each
    with its byte offset so that it can be read again later."""
    name, hint, blank = str(path), None, True
    with path.open("rb") as handle:
        offset = 0
        for number, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            if number == 1 and raw.startswith(_BOM):
                raw, start = raw[len(_BOM) :], start + len(_BOM)
            location = f"line {number}"
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                blank = False  # a line that is not UTF-8 is content: it gets its issue
                hint = hint if hint is not None else file_hint(path)
                yield location, InputIssue(name, location, None, invalid_utf8(raw, exc, hint)), None
                continue
            if not text.strip():
                continue
            blank = False
            yield location, parse_json_line(name, location, text), start
    if blank:
        raise InputError([InputIssue(name, "file", None, "file is empty")])


def parse_json_line(name: str, location: str, text: str | bytes) -> Any:
    """The record on one JSON line, or the :class:`InputIssue` that says why it is not one."""
    try:
        return json_value(text)
    except TooLongNumber as exc:
        return InputIssue(name, location, exc.field, exc.problem)
    except ValueError as exc:  # a sample nested too deeply is said with this reader's depth limit
        return InputIssue(name, location, None, TOO_DEEP if str(exc) == JSON_TOO_DEEP else str(exc))


def _rows_of_json(name: str, text: str) -> Rows:
    """Walk a JSON list item by item so that each item keeps its line number."""
    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if position >= len(text) or text[position] != "[":
        try:
            value = json_loads(text)
        except json.JSONDecodeError as exc:
            raise InputError([InputIssue(name, f"line {exc.lineno}", None, json_problem(exc))]) from None
        except RecursionError:
            raise InputError([InputIssue(name, "file", None, TOO_DEEP)]) from None
        except TooLongNumber as exc:
            raise InputError([InputIssue(name, "file", exc.field, exc.problem)]) from None
        raise InputError([InputIssue(name, "line 1", None, f"expected a JSON list of samples, got {type(value).__name__}")])
    position = _skip_space(text, position + 1)
    if position < len(text) and text[position] == "]":
        raise InputError([InputIssue(name, "file", None, "the JSON list is empty")])
    while position < len(text):
        line, start = text.count("\n", 0, position) + 1, position
        try:
            item, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise InputError([InputIssue(name, f"line {exc.lineno}", None, json_problem(exc))]) from None
        except (RecursionError, ValueError) as exc:
            # Too deep for the parser, or a number too long: this item is a row issue; the items after it still load.
            end = _end_of_item(text, position)
            if end is None:
                raise InputError([InputIssue(name, "end of file", None, "invalid JSON: the list is not closed with ']'")]) from None
            number = None if isinstance(exc, RecursionError) else too_long_number(text[position:end])
            problem = (number.field, number.problem) if number is not None else (None, TOO_DEEP)
            item, position = InputIssue(name, f"line {line}", *problem), end
        else:
            surrogate = unpaired_surrogate(text[start:position], item)
            if surrogate is not None:
                item = InputIssue(name, f"line {line}", None, surrogate)
        yield f"line {line}", item, None
        position = _skip_space(text, position)
        if position < len(text) and text[position] == ",":
            position = _skip_space(text, position + 1)
        elif position < len(text) and text[position] == "]":
            return
        else:
            line = text.count("\n", 0, position) + 1
            raise InputError([InputIssue(name, f"line {line}", None, "invalid JSON: expected ',' or ']' between samples")])
    raise InputError([InputIssue(name, "end of file", None, "invalid JSON: the list is not closed with ']'")])


def _end_of_item(text: str, start: int) -> int | None:
    """The position just after the list item that starts at ``start``: a bare integer (one too
    long to read is an item too, not the start of the next item's object) or an array or object
    (:func:`_end_of_container`); ``None`` when that is not closed."""
    bare = _INTEGER.match(text, start)
    return bare.end() if bare else _end_of_container(text, start)


def _end_of_container(text: str, start: int) -> int | None:
    """The position just after the JSON array or object that starts at ``start`` (strings
    and escapes respected, any depth, nothing parsed), or ``None`` when it is not closed."""
    depth, position, in_string = 0, start, False
    while position < len(text):
        char = text[position]
        if in_string:
            if char == "\\":
                position += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return position + 1
        position += 1
    return None


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _rows_of_csv(name: str, lines: list[str], bad_lines: dict[int, str]) -> Rows:
    # The csv module refuses cells over 128 KB by default; a retrieved document can be longer.
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    reader = csv.reader(io.StringIO("".join(lines), newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError([InputIssue(name, "file", None, "file is empty")]) from None
    header = [h.strip() for h in header]
    if 1 in bad_lines:
        raise InputError([InputIssue(name, "line 1", None, bad_lines[1])])
    twice = next((column for position, column in enumerate(header) if column and column in header[:position]), None)
    if twice is not None:
        raise InputError([InputIssue(name, "line 1", twice, "the header names this column twice: which one to read is unclear")])
    offset: int | None = reader.line_num
    while offset is not None:  # each read starts further on: it ends
        offset = yield from _csv_records(name, header, lines, offset, bad_lines)


def _never_closed(record: str) -> bool:
    """Whether the CSV ``record`` (its lines) opens a quoted cell it never closes, which the csv
    module reads on to the end of the file; a quote inside an unquoted cell (``5" screen``) is text."""
    try:
        list(csv.reader(io.StringIO(record, newline=""), strict=True))
    except csv.Error as exc:
        return "unexpected end of data" in str(exc)
    return False


def _csv_records(
    name: str, header: list[str], lines: list[str], offset: int, bad_lines: dict[int, str]
) -> Generator[Any, None, int | None]:
    """The rows of a CSV file after its line ``offset``. A quoted cell that is never closed
    swallows the file's end into itself: the row is an issue and the lines after its first
    are read again, whose number this returns (``None`` when the file was read to its end)."""
    reader = csv.reader(io.StringIO("".join(lines[offset:]), newline=""))
    previous_end = 0
    for cells in reader:
        start, end = offset + previous_end + 1, offset + reader.line_num
        previous_end = reader.line_num
        location = f"line {start}"
        if not any(c.strip() for c in cells):
            continue
        bad = [n for n in range(start, end + 1) if n in bad_lines]
        if bad:
            yield location, InputIssue(name, f"line {bad[0]}", None, bad_lines[bad[0]]), None
            continue
        if end == len(lines) and end > start and _never_closed("".join(lines[start - 1 : end])):
            yield location, InputIssue(name, location, None, "a quoted cell is never closed (the lines after it are read on)"), None
            return start
        if len(cells) != len(header):
            yield location, InputIssue(name, location, None, f"expected {len(header)} columns as in the header, found {len(cells)}"), None
            continue
        record: dict[str, Any] = {}
        problem = None
        for column, cell in zip(header, cells, strict=True):
            try:
                record[column] = _csv_value(column, cell)
            except (ValueError, RecursionError, MemoryError) as exc:
                problem = InputIssue(name, location, column, str(exc) if isinstance(exc, ValueError) else TOO_DEEP)
                break
        yield location, problem or record, None
    return None


def _csv_value(column: str, cell: str) -> Any:
    if cell == "":
        return None
    if column in TEXT_FIELDS:
        return cell
    if column in LIST_FIELDS:
        try:
            value = _json_cell(cell)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(cell)
            except (ValueError, SyntaxError):
                raise ValueError('expected a JSON list such as ["first", "second"]') from None
        if not isinstance(value, list):
            raise ValueError(f"expected a JSON list, got {describe_value(value)}")
        return value
    if column == "metadata":
        try:
            value = _json_cell(cell)
        except json.JSONDecodeError as exc:
            raise ValueError(json_problem(exc)) from None
        return value
    # Other columns become metadata; numbers and booleans keep their type.
    try:
        return _json_cell(cell) if cell.strip()[:1] in set("-0123456789tfn[{") else cell
    except json.JSONDecodeError:
        return cell


def _json_cell(cell: str, limit: int = 40) -> Any:
    """The JSON value of a CSV cell.

    Raises:
        json.JSONDecodeError: It is not JSON.
        ValueError: It writes a number of more digits than Python converts; the message
            shows the cell as a JSON string (control characters escaped), cut to ``limit``
            characters, never Python's advice to change an interpreter limit.
    """
    try:
        return json.loads(cell)
    except json.JSONDecodeError:
        raise
    except ValueError:
        raise ValueError(f"{TOO_LONG_NUMBER}: {brief_json(cell, limit)}") from None


def _rows_of_frame(frame: Any, unit: str = "row") -> Rows:
    columns = list(frame.columns)
    for position, values in enumerate(frame.itertuples(index=False, name=None), start=1):
        yield f"{unit} {position}", {str(c): _plain(v) for c, v in zip(columns, values, strict=True)}, None


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
