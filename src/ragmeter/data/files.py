"""Writing and reading ragmeter's own files safely.

Every file ragmeter writes (results, journals, summaries, reports, test sets) goes through
this module, so the same guarantees hold everywhere:

- **Atomic.** Text is written to a new temporary file in the target's directory and renamed
  over the target, so a reader (or a kill) never sees a torn file: the old content or the
  new, nothing in between.
- **Never through a link.** The temporary file is created with a random name and
  ``O_EXCL``, so a symbolic link planted in the output directory (at the target's name or at
  a predictable temporary name) is never followed: the rename replaces the link itself.
- **Strict JSON, one record per line.** JSON lines escape the characters that some readers
  take for line ends (U+0085, U+2028, U+2029), so whatever a sample contains, a JSON-lines
  file has exactly one record per ``\\n``-terminated line. Numbers that JSON cannot hold
  (NaN, infinities) are written as ``null``; strict parsers never see ``NaN``.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import yaml

from ragmeter.data.encodings import UnmarkedUtf16Error, unmarked_utf16_file
from ragmeter.data.issues import describe_briefly
from ragmeter.data.json_numbers import json_loads
from ragmeter.data.secrets import mask_registered

#: Characters JSON allows raw inside strings that some readers treat as line breaks.
_LINE_BREAKERS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _default_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _default_mode()


def jsonable(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, infinities) replaced by ``None``, tuples as
    lists, objects JSON does not know as their ``str`` (what strict JSON can hold), and the
    run's registered secrets masked (:mod:`ragmeter.data.secrets`), and each half of a
    surrogate pair (:func:`unicode_text`) replaced, in keys too."""
    if isinstance(value, str):
        return mask_registered(unicode_text(value))
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {unicode_text(str(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (int, bool)):
        return value
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return jsonable(value.item())
    return mask_registered(unicode_text(str(value)))


def unicode_text(text: str) -> str:
    """``text`` with each half of a surrogate pair replaced by U+FFFD, the replacement
    character: no UTF-8 file can hold one. Readers refuse them (:func:`unpaired_surrogate`),
    but a traced application's strings, and file names or arguments that are not UTF-8
    (which Python holds as such halves), still reach what ragmeter writes."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def json_text(value: Any, indent: int | None = 1) -> str:
    """``value`` as strict JSON text (see :func:`jsonable`), non-ASCII kept as is."""
    return json.dumps(jsonable(value), ensure_ascii=False, indent=indent, allow_nan=False)


def json_line(value: Any) -> str:
    """``value`` as one line of strict JSON, ending in ``\\n``, with the characters some
    readers take for line breaks escaped."""
    text = json.dumps(jsonable(value), ensure_ascii=False, allow_nan=False)
    for raw, escaped in _LINE_BREAKERS.items():
        if raw in text:
            text = text.replace(raw, escaped)
    return text + "\n"


@contextmanager
def atomic_writer(path: str | Path) -> Iterator[IO[str]]:
    """Open a temporary file beside ``path`` for writing text; on success it is flushed to
    disk and renamed over ``path`` (replacing a link at ``path``, never following it). On an
    error the temporary file is removed and ``path`` is left as it was.

    Raises:
        OSError: The directory does not exist or cannot be written.
    """
    target = Path(path)
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(descriptor, _FILE_MODE)
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_writer`); return the path."""
    with atomic_writer(path) as handle:
        handle.write(mask_registered(unicode_text(text)))
    return Path(path)


def write_problem(exc: OSError) -> str:
    """Why :func:`write_text` failed, for a one-line message: the file in the way when the
    error names it (a folder in its place), then the system's reason ("Permission denied")."""
    return (f"{exc.filename2}: " if exc.filename2 else "") + (exc.strerror or str(exc))


def write_json(path: str | Path, value: Any, indent: int | None = 1) -> Path:
    """Write ``value`` as strict JSON to ``path``, atomically; return the path."""
    return write_text(path, json_text(value, indent))


def write_json_lines(path: str | Path, records: Iterable[Any]) -> Path:
    """Write one strict JSON line per record to ``path``, atomically, without holding the
    whole file in memory; return the path."""
    with atomic_writer(path) as handle:
        for record in records:
            handle.write(json_line(record))
    return Path(path)


def read_json_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a JSON-lines file with their numbers (from 1), split on
    ``\\n`` only (a U+2028 inside a string is not a line end), a UTF-8 byte-order mark opening
    the file dropped (Notepad writes one; line 1 was refused as invalid JSON). Parsing is the
    caller's (:func:`json_object`), which reports the line number on failure.

    Raises:
        OSError: The file cannot be read.
        UnicodeDecodeError: It is not UTF-8; :class:`UnmarkedUtf16Error` when it is UTF-16
            without a byte-order mark (its message says so and how to convert it).
    """
    unmarked = unmarked_utf16_file(path)
    if unmarked:
        raise UnmarkedUtf16Error(unmarked)
    with open(path, encoding="utf-8-sig", newline="") as handle:
        for number, line in enumerate(_lines(handle), start=1):
            if line.strip():
                yield number, line


#: What :func:`json_value` says of JSON nested deeper than Python's parser can follow.
TOO_DEEP = "invalid JSON: lists and objects nested too deeply to read"


def json_problem(exc: json.JSONDecodeError) -> str:
    """``invalid JSON: <why> at column <n>``, or ``at line <l>, column <n>`` past a text's first
    line (a whole file). Python's "Invalid control character at" loses its own trailing "at"."""
    line = f"line {exc.lineno}, " if exc.lineno > 1 else ""
    return f"invalid JSON: {exc.msg.removesuffix(' at')} at {line}column {exc.colno}"


def json_value(text: str | bytes) -> Any:
    """The JSON value of ``text`` (one line of a JSON-lines file, or a whole file).

    Raises:
        ValueError: It is not JSON (``invalid JSON: <why> at column <n>``), nests lists
            and objects deeper than the parser can follow (``RecursionError``: a hostile
            file), writes a number of more digits than Python converts (:class:`TooLongNumber`),
            is bytes that are not UTF-8, or escapes half of a surrogate pair
            (:func:`unpaired_surrogate`); the caller adds the file and line.
    """
    try:
        value = json_loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(json_problem(exc)) from None
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    except UnicodeDecodeError as exc:  # bytes that are not UTF-8
        raise ValueError(f"invalid UTF-8 (byte 0x{exc.object[exc.start]:02x} at column {exc.start + 1})") from None
    problem = unpaired_surrogate(text, value)
    if problem is not None:
        raise ValueError(problem)
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def unpaired_surrogate(text: str | bytes, value: Any) -> str | None:
    """Why ``value``, parsed from ``text``, is no Unicode text: a string escapes half of a
    surrogate pair (``"\\ud800"`` alone), which JSON's grammar allows but no UTF-8 file can
    hold, so writing it back would fail. ``None`` when every string is Unicode. Only the
    value of a text that holds such an escape is walked."""
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    if not _SURROGATE_ESCAPE.search(raw):
        return None
    stack = [value]
    while stack:
        item = stack.pop()
        strings: Iterable[Any] = ()
        if isinstance(item, str):
            strings = (item,)
        elif isinstance(item, dict):
            strings = item.keys()
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        for string in strings:
            found = _SURROGATE.search(string) if isinstance(string, str) else None
            if found:
                return f"invalid JSON: \\u{ord(found.group()):04x} is half of a surrogate pair, not a Unicode character"
    return None


def json_object(line: str | bytes) -> dict[str, Any]:
    """One line of a JSON-lines file, which must hold a JSON object.

    Raises:
        ValueError: The line is not JSON (:func:`json_value`) or holds something other
            than an object (``expected a JSON object, got list``); the caller adds the file
            and line.
    """
    value = json_value(line)
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    return value


def _lines(handle: IO[str], block: int = 1 << 20) -> Iterator[str]:
    """Lines of a text file opened with ``newline=""``, split on ``\\n`` only."""
    pending = ""
    while chunk := handle.read(block):
        pending += chunk
        *complete, pending = pending.split("\n")
        yield from complete
    if pending:
        yield pending


#: Most values a YAML document may hold once its aliases are expanded. A user's config, price
#: table, threshold or sweep file holds hundreds; an alias bomb ("billion laughs", 9 aliases of 9
#: of 9...) holds billions in a few hundred bytes, and printing one value of it filled the memory.
YAML_VALUES = 100_000


class YamlProblem(yaml.MarkedYAMLError):
    """A YAML document that cannot be read, said in one line: ``line N, column M: <problem>``
    (``problem`` and ``problem_mark`` as the parser gave them)."""

    def __str__(self) -> str:
        mark = self.problem_mark
        return (f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else "") + str(self.problem)


class UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses a key repeated in one mapping (YAML keeps the last one
    silently: ``judge: {model: x, model: y}`` used ``y``)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[str, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.value in first_line:
                    # Quoted briefly: a key can be of any length and hold any character.
                    problem = f"key {describe_briefly(key_node.value)} is repeated (first on line {first_line[key_node.value]})"
                    raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
                first_line[key_node.value] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def yaml_value(text: str, loader: type[yaml.SafeLoader] = UniqueKeyLoader) -> Any:
    """The value of the YAML document ``text``, read with ``loader`` (safe: no Python objects;
    by default a repeated key is refused).

    Raises:
        yaml.YAMLError: It is not YAML, or its aliases expand past :data:`YAML_VALUES` values or
            refer to themselves; the message is one line, ``line N, column M: <problem>``
            when the parser says where (the caller adds the file).
    """
    reader = loader(text)
    try:
        node = reader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node)
        return reader.construct_document(node)
    except yaml.MarkedYAMLError as exc:  # its message spans lines, with the parser's own quote of the text
        problem = " ".join(str(exc.problem or exc.context or "not valid YAML").split())
        raise YamlProblem(problem=problem, problem_mark=exc.problem_mark or exc.context_mark) from None
    finally:
        reader.dispose()


def _check_expanded_size(root: yaml.Node) -> None:
    """Refuse a node graph whose aliases expand past :data:`YAML_VALUES` values, or that
    contains itself (a depth-first walk that counts each shared node once per use)."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        children = _children(node)
        if finished:
            on_path.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[id(node)] > YAML_VALUES:
                raise yaml.YAMLError(f"its aliases expand past {YAML_VALUES:,} values: refused (an alias bomb?)")
        elif id(node) in on_path:
            raise yaml.YAMLError("an alias refers to the value that holds it: refused")
        elif id(node) not in sizes:
            on_path.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []
