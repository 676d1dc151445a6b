"""The user's own red-team probes, from a YAML or JSON Lines file, checked as the packaged ones
are (:mod:`ragmeter.decide.redteam`): a probe fails when the answer holds one of its forbidden
strings (case-insensitive), or on an error.

Each probe is a mapping with these fields:

- ``id`` (required): a name unique in the run (also against the packaged probes' ids);
- ``question`` (required): what the application is asked;
- ``forbidden`` (required): a non-empty list of strings that must never appear in the answer;
- ``documents``: the documents retrieval hands the application (default: none);
- ``category``: the group its pass rate is reported in (default ``custom``; the packaged
  categories may be reused);
- ``lang``: its language, a label (default ``en``).

A YAML file holds a list of such mappings (or ``probes:`` followed by one); a ``.jsonl`` file
one JSON object per line (blank lines and lines starting with ``#`` are skipped). Every error
names the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from ragmeter.data.encodings import first_invalid_utf8, unmarked_utf16_file
from ragmeter.data.files import json_value, yaml_value
from ragmeter.data.issues import describe_briefly
from ragmeter.decide.redteam import Probe

FIELDS = ("id", "question", "forbidden", "documents", "category", "lang")
DEFAULT_CATEGORY = "custom"


class ProbeFileError(ValueError):
    """A probe file cannot be used; the message names the file, the line and the field.

    Attributes:
        path: The file.
        line: The 1-based line, when known.
        field: The probe's field at fault, when there is one.
    """

    def __init__(self, path: Path, line: int | None, field: str | None, message: str):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")
        self.path, self.line, self.field = path, line, field


#: One probe as read: the line it starts on, each field's line, and the value.
Record = tuple[int, dict[str, int], Any]


def load_probe_file(path: str | Path, taken: Iterable[str] = ()) -> list[Probe]:
    """The probes of a YAML (``.yaml``/``.yml``) or JSON Lines (``.jsonl``) file.

    Args:
        path: The file.
        taken: Ids already in use (the packaged probes', other files'); a probe may not reuse one.

    Raises:
        ProbeFileError: The file is missing, unreadable, not UTF-8 (its first line that is not,
            and the encoding it may be in: UTF-16 with its byte-order mark, Windows-1252...),
            UTF-16 without a byte-order mark
            (:func:`~ragmeter.data.encodings.unmarked_utf16`), not valid YAML or JSON, holds no
            probe, or a probe lacks a field, has one of the wrong type, an unknown field or an
            id already used.
    """
    path = Path(path)
    try:
        unmarked = unmarked_utf16_file(path)
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # "cannot read it: 'utf-8' codec can't decode byte 0xff in position 0" named no line or encoding
        line, said = first_invalid_utf8(path) or (None, "invalid UTF-8")
        raise ProbeFileError(path, line, None, said) from None
    except OSError as exc:
        raise ProbeFileError(path, None, None, f"cannot read it: {exc.strerror or exc}") from None
    if unmarked:  # valid UTF-8 all the same: the YAML or JSON would only be found invalid
        raise ProbeFileError(path, None, None, unmarked)
    records = _jsonl_records(path, text) if path.suffix.lower() == ".jsonl" else _yaml_records(path, text)
    if not records:
        raise ProbeFileError(path, None, None, "holds no probe")
    seen = dict.fromkeys(taken, 0)
    probes = []
    for line, lines, value in records:
        probe = _probe(path, line, lines, value)
        if probe.id in seen:
            first = f" (line {seen[probe.id]})" if seen[probe.id] else " (by a packaged probe or an earlier file)"
            raise ProbeFileError(path, lines.get("id", line), "id", f"{probe.id!r} is already used{first}")
        seen[probe.id] = line
        probes.append(probe)
    return probes


def _jsonl_records(path: Path, text: str) -> list[Record]:
    records = []
    for number, raw in enumerate(text.split("\n"), start=1):  # not splitlines: U+2028 is legal inside a JSON string
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            value = json_value(raw)
        except ValueError as exc:
            raise ProbeFileError(path, number, None, str(exc)) from None
        fields = {str(key): number for key in value} if isinstance(value, dict) else {}
        records.append((number, fields, value))
    return records


def _yaml_records(path: Path, text: str) -> list[Record]:
    try:
        data, node = yaml_value(text), yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        # Valid YAML that yaml_value refuses (an alias bomb) is said as the other YAML readers say it.
        said = f"not valid YAML: {problem}" if mark is not None else f"cannot read the probes file: {exc}"
        raise ProbeFileError(path, mark.line + 1 if mark is not None else None, None, said) from None
    if isinstance(data, dict) and list(data) == ["probes"] and isinstance(node, yaml.MappingNode):
        data, node = data["probes"], node.value[0][1]
    if data is None:
        return []
    if not isinstance(data, list) or not isinstance(node, yaml.SequenceNode):
        line = node.start_mark.line + 1 if node is not None else None
        raise ProbeFileError(path, line, None, "expected a list of probes (or probes: followed by a list)")
    records = []
    for value, item in zip(data, node.value, strict=True):
        fields = {str(key.value): child.start_mark.line + 1 for key, child in item.value} if isinstance(item, yaml.MappingNode) else {}
        records.append((item.start_mark.line + 1, fields, value))
    return records


def _probe(path: Path, line: int, lines: dict[str, int], value: Any) -> Probe:
    """One probe from its record, every field checked (module docstring)."""
    if not isinstance(value, dict):
        raise ProbeFileError(path, line, None, f"expected a probe (a mapping with {', '.join(FIELDS[:3])}), got {type(value).__name__}")

    def fail(field: str, message: str) -> ProbeFileError:
        return ProbeFileError(path, lines.get(field, line), field, message)

    unknown = [str(key) for key in value if key not in FIELDS]
    if unknown:
        raise fail(unknown[0], f"unknown field (a probe has {', '.join(FIELDS)})")
    texts = {}
    for field, default in (("id", None), ("question", None), ("category", DEFAULT_CATEGORY), ("lang", "en")):
        given = value.get(field, default)
        if given is None:
            raise fail(field, "missing; every probe needs one")
        if not isinstance(given, (str, int)) or isinstance(given, bool) or not str(given).strip():
            raise fail(field, f"expected non-empty text, got {describe_briefly(given)}")
        texts[field] = str(given).strip() if field != "question" else str(given)
    lists = {}
    for field, required in (("forbidden", True), ("documents", False)):
        given = value.get(field, None if required else [])
        if given is None:
            raise fail(field, "missing; list the strings that must never appear in the answer")
        if not isinstance(given, list) or not all(isinstance(item, str) for item in given):
            raise fail(field, f"expected a list of strings, got {describe_briefly(given)}")
        lists[field] = given
    if not any(s.strip() for s in lists["forbidden"]) or any(not s.strip() for s in lists["forbidden"]):
        raise fail("forbidden", "needs at least one string, and no empty one (an empty string is in every answer)")
    return Probe(texts["id"], texts["category"], texts["lang"], texts["question"], lists["documents"], lists["forbidden"])
