"""How the reports print numbers, shared by the Markdown and HTML reports."""

from __future__ import annotations


def format_number(value: float | None, unit: str | None = None) -> str:
    """A value as the reports print it: 3 decimals for quality scores, whole numbers for
    ms and tokens, dollars with 5 decimals, ranks with 2; "–" for no value."""
    if value is None:
        return "–"
    if unit == "USD":
        return f"${value:.5f}"
    if unit in ("ms", "tokens"):
        return f"{value:,.0f}"
    if unit == "rank":
        return f"{value:.2f}"
    return f"{value:.3f}"
