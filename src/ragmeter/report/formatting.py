"""How numbers are printed, everywhere: reports, the terminal, comparisons, gates.

One place decides the digits, so the same value reads the same in report.md, report.html,
compare.md, the gate's table and the terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NONE = "–"


def format_number(value: float | None, unit: str | None = None) -> str:
    """A value as the reports print it: 3 decimals for quality scores, whole numbers for
    ms and tokens, dollars with 5 decimals, ranks with 2; "–" for no value."""
    if value is None:
        return NONE
    if unit == "USD":
        return f"${value:.5f}"
    if unit in ("ms", "tokens"):
        return f"{value:,.0f}"
    if unit == "rank":
        return f"{value:.2f}"
    return f"{value:.3f}"


def format_signed(value: float | None, unit: str | None = None) -> str:
    """A difference with its sign (− for negative), in the metric's unit; no sign when it
    rounds to zero."""
    if value is None:
        return NONE
    text = format_number(abs(value), unit)
    if text.strip("$0.,") == "":
        return text
    return ("+" if value > 0 else "−") + text


def format_interval(low: float | None, high: float | None, unit: str | None = None, *, signed: bool = False) -> str:
    """``[low, high]`` in the metric's unit (with signs for differences); "–" without one."""
    if low is None or high is None:
        return NONE
    shown = format_signed if signed else format_number
    return f"[{shown(low, unit)}, {shown(high, unit)}]"


def format_p(p: float | None) -> str:
    """A p-value for people: "–" when there is none, "<0.001" when tiny."""
    if p is None:
        return NONE
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}"


def format_p_equals(p: float | None) -> str:
    """A p-value in a sentence: "p = 0.012", "p < 0.001"."""
    text = format_p(p)
    return f"p {text[0]} {text[1:]}" if text.startswith("<") else f"p = {text}"


def format_percent(share: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage, "–" for none."""
    return NONE if share is None else f"{100 * share:.{digits}f}%"


def format_estimate(entry: Mapping[str, Any], undefined: str = "undefined") -> str:
    """``{"value", "ci_low", "ci_high"}`` as "0.812 [0.701, 0.894]"; ``undefined`` when the
    value is ``None``, the value alone when there is no interval."""
    if entry.get("value") is None:
        return undefined
    if entry.get("ci_low") is None:
        return format_number(entry["value"])
    return f"{format_number(entry['value'])} {format_interval(entry['ci_low'], entry['ci_high'])}"
