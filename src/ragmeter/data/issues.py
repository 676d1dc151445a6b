"""Input problems: one bad row (:class:`InputIssue`), input that cannot be used (:class:`InputError`),
and a bad value from a user's file shown briefly in a message (:func:`describe_briefly`).

An issue names the source, the line (or row) and the field, so the user can find and fix it.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


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


def describe_briefly(value: object) -> str:
    """``value``'s ``repr`` for a message, cut to about 60 characters (a list or mapping shows its
    first items), so a huge value from a user's file never floods the message or the memory;
    an integer too long for Python to write out (past 4,300 digits) is said to be one."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of about {value.bit_length() * 0.30103:.0f} digits"
    return reprlib.repr(value)
