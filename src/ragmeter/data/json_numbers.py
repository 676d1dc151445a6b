"""JSON integers too long to read: Python refuses to convert an integer of more than 4300
digits (a guard against slow conversions), and its message advises changing an interpreter
limit. A reader says instead which number (shown briefly) and where it sits."""

from __future__ import annotations

import json
from typing import Any

#: What :func:`json_value` says of an integer too long to convert (Python's digit limit).
TOO_LONG_NUMBER = "invalid JSON: a number with more digits than can be read"


def brief_json(text: str, limit: int = 40) -> str:
    """``text`` as a JSON string (control characters escaped) cut to ``limit`` characters,
    with its length when cut: how a message shows a value that may be huge or hostile."""
    return json.dumps(text[:limit]) + (f"… ({len(text):,} characters)" if len(text) > limit else "")


class TooLongNumber(ValueError):
    """A JSON integer of more digits than Python converts. The message shows it briefly
    (:func:`brief_json`) and names its field (``metadata.n``, ``contexts[2]``) when known,
    never Python's advice to change an interpreter limit.

    Attributes:
        field: Where the number sits in the value, or ``None`` (the value itself, or unknown).
        shown: The number, shown briefly.
    """

    def __init__(self, digits: str, field: str | None):
        self.field, self.shown = field, brief_json(digits)
        super().__init__(f"{TOO_LONG_NUMBER}{self.where}: {self.shown}")

    @property
    def where(self) -> str:
        """`` in field '<field>'``, or nothing when the field is unknown."""
        return f" in field '{self.field}'" if self.field else ""

    @property
    def problem(self) -> str:
        """The message without the field, for an issue that names the field itself."""
        return f"{TOO_LONG_NUMBER}: {self.shown}"


def json_loads(text: str | bytes, **options: Any) -> Any:
    """``json.loads(text, **options)``, but an integer too long to convert raises
    :class:`TooLongNumber` (the text is read again, only then, to find it)."""
    try:
        return json.loads(text, **options)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except ValueError:
        found = too_long_number(text, **options)
        if found is None:
            raise
        raise found from None


def too_long_number(text: str | bytes, **options: Any) -> TooLongNumber | None:
    """The first integer of the JSON ``text`` too long to convert, with its field; ``None``
    when it has none (before whatever else stops the parser)."""
    found: list[_Digits] = []

    def integer(digits: str) -> Any:
        try:
            return int(digits)
        except ValueError:
            found.append(_Digits(digits))
            return found[-1]

    try:
        value = json.loads(text, **options, parse_int=integer)
    except (ValueError, RecursionError):
        value = None  # the parser stopped after the number, if it met one: its field is unknown
    return TooLongNumber(found[0].digits, _path_to(value, found[0])) if found else None


class _Digits:
    """An integer's digits, in the place of the integer they write."""

    def __init__(self, digits: str):
        self.digits = digits


def _path_to(value: Any, target: object) -> str | None:
    """The path of ``target`` inside ``value`` (``a.b[2]``), or ``None`` when it is ``value`` or absent."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if item is target:
            return path or None
        if isinstance(item, dict):
            stack += [(v, path + _key(k, first=not path)) for k, v in reversed(item.items())]
        elif isinstance(item, list):
            stack += [(v, f"{path}[{n}]") for n, v in reversed(list(enumerate(item)))]
    return None


def _key(key: str, first: bool) -> str:
    """A key as a path shows it: ``.name`` (``name`` first) when a short plain name, else as a
    brief JSON string in brackets (control characters escaped)."""
    if key.isidentifier() and len(key) <= 40:
        return key if first else f".{key}"
    return f"[{brief_json(key)}]"
