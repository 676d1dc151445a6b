"""Inline SVG charts for the HTML report: a radar of the metric families and per-metric
histograms.

Every function is pure: it takes numbers and labels and returns an ``<svg>`` string that
is well-formed XML, with every piece of text XML-escaped, so the report can place it in
the page as is. No chart refers to anything outside itself (no fonts, images or links).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from ragmeter.report.formatting import format_number

#: Colours shared with the page's stylesheet.
ACCENT = "#2563eb"
ACCENT_FILL = "#2563eb33"
GRID = "#e5e7eb"
AXIS = "#9ca3af"
TEXT = "#374151"
MUTED = "#6b7280"
MEAN = "#dc2626"

#: Histogram geometry (viewBox units).
_H_WIDTH, _H_HEIGHT = 260, 132
_H_LEFT, _H_RIGHT, _H_TOP, _H_BOTTOM = 30, 10, 14, 104


def _e(text: Any) -> str:
    return escape(str(text), quote=True)


def _f(x: float) -> str:
    """A coordinate, short."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


def _svg(width: float, height: float, label: str, body: list[str], css_class: str) -> str:
    return (
        f'<svg class="{_e(css_class)}" viewBox="0 0 {_f(width)} {_f(height)}" role="img" aria-label="{_e(label)}" '
        f'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif">'
        f"<title>{_e(label)}</title>{''.join(body)}</svg>"
    )


def _clamp01(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    if not math.isfinite(number):
        return 0.0
    return min(1.0, max(0.0, number))


def family_chart(families: Mapping[str, Mapping[str, Any]]) -> str:
    """The chart of the family means (``summary["families"]``: family -> {"mean", ...}):
    a radar with three families or more, horizontal bars with one or two."""
    if len(families) >= 3:
        return radar_chart(families)
    return family_bars(families)


def radar_chart(families: Mapping[str, Mapping[str, Any]]) -> str:
    """A radar (spider) chart of family means in [0, 1], one axis per family (three or
    more; with fewer there is no polygon to draw, use :func:`family_bars`)."""
    names = list(families)
    if len(names) < 3:
        return family_bars(families)
    width, height = 460, 330
    cx, cy, radius = width / 2, height / 2 + 4, 112
    n = len(names)
    angles = [-math.pi / 2 + 2 * math.pi * i / n for i in range(n)]

    def point(angle: float, r: float) -> tuple[float, float]:
        return cx + r * math.cos(angle), cy + r * math.sin(angle)

    body: list[str] = []
    for ring in (0.25, 0.5, 0.75, 1.0):
        points = " ".join(f"{_f(x)},{_f(y)}" for x, y in (point(a, radius * ring) for a in angles))
        body.append(f'<polygon points="{points}" fill="none" stroke="{GRID}" stroke-width="1"/>')
        x, y = point(angles[0], radius * ring)
        body.append(f'<text x="{_f(x + 4)}" y="{_f(y + 3)}" font-size="9" fill="{MUTED}">{ring:g}</text>')
    for angle in angles:
        x, y = point(angle, radius)
        body.append(f'<line x1="{_f(cx)}" y1="{_f(cy)}" x2="{_f(x)}" y2="{_f(y)}" stroke="{GRID}" stroke-width="1"/>')
    values = [_clamp01(families[name].get("mean")) for name in names]
    shape = " ".join(f"{_f(x)},{_f(y)}" for x, y in (point(a, radius * v) for a, v in zip(angles, values, strict=True)))
    body.append(f'<polygon points="{shape}" fill="{ACCENT_FILL}" stroke="{ACCENT}" stroke-width="2" stroke-linejoin="round"/>')
    for name, angle, value in zip(names, angles, values, strict=True):
        x, y = point(angle, radius * value)
        tip = f"{name}: {format_number(families[name].get('mean'))}"
        body.append(f'<circle cx="{_f(x)}" cy="{_f(y)}" r="4" fill="{ACCENT}"><title>{_e(tip)}</title></circle>')
        lx, ly = point(angle, radius + 16)
        cos = math.cos(angle)
        anchor = "start" if cos > 0.25 else "end" if cos < -0.25 else "middle"
        sin = math.sin(angle)
        ly += -8 if sin < -0.5 else 10 if sin > 0.5 else 0
        body.append(
            f'<text x="{_f(lx)}" y="{_f(ly)}" text-anchor="{anchor}" font-size="12" fill="{TEXT}">'
            f'<tspan font-weight="600">{_e(name)}</tspan>'
            f'<tspan x="{_f(lx)}" dy="14" fill="{MUTED}">{_e(format_number(families[name].get("mean")))}</tspan></text>'
        )
    label = "Mean score per metric family: " + ", ".join(f"{name} {format_number(families[name].get('mean'))}" for name in names)
    return _svg(width, height, label, body, "chart radar")


def family_bars(families: Mapping[str, Mapping[str, Any]]) -> str:
    """Horizontal bars of family means in [0, 1]; used when there are too few families
    for a radar (works for any number, including none)."""
    names = list(families)
    left, track, row = 120, 260, 30
    width = left + track + 60
    height = max(1, len(names)) * row + 26
    body: list[str] = []
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = left + track * tick
        body.append(f'<line x1="{_f(x)}" y1="6" x2="{_f(x)}" y2="{_f(height - 18)}" stroke="{GRID}" stroke-width="1"/>')
        body.append(f'<text x="{_f(x)}" y="{_f(height - 5)}" text-anchor="middle" font-size="9" fill="{MUTED}">{tick:g}</text>')
    if not names:
        body.append(f'<text x="{_f(width / 2)}" y="24" text-anchor="middle" font-size="12" fill="{MUTED}">no quality metrics</text>')
    for i, name in enumerate(names):
        y = 8 + i * row
        value = _clamp01(families[name].get("mean"))
        shown = format_number(families[name].get("mean"))
        body.append(
            f'<text x="{left - 8}" y="{_f(y + 15)}" text-anchor="end" font-size="12" font-weight="600" fill="{TEXT}">{_e(name)}</text>'
        )
        body.append(f'<rect x="{left}" y="{_f(y + 3)}" width="{_f(track)}" height="16" rx="3" fill="#f3f4f6"/>')
        body.append(
            f'<rect x="{left}" y="{_f(y + 3)}" width="{_f(track * value)}" height="16" rx="3" fill="{ACCENT}">'
            f"<title>{_e(f'{name}: {shown}')}</title></rect>"
        )
        body.append(f'<text x="{_f(left + track + 6)}" y="{_f(y + 15)}" font-size="12" fill="{TEXT}">{_e(shown)}</text>')
    label = "Mean score per metric family: " + (
        ", ".join(f"{name} {format_number(families[name].get('mean'))}" for name in names) or "none"
    )
    return _svg(width, height, label, body, "chart bars")


def _bins(values: Sequence[float], unit: str | None, bins: int) -> tuple[list[tuple[float, float]], list[int], bool]:
    """Bin edges and counts: [0, 1] for quality scores, the observed range for measurements
    (one bin per integer when the values are few distinct integers)."""
    if unit is None:
        lo, hi = 0.0, 1.0
        values = [min(1.0, max(0.0, v)) for v in values]
    else:
        lo, hi = min(values), max(values)
    integers = unit is not None and all(float(v).is_integer() for v in values) and hi - lo <= 24
    if integers:
        edges = [(k - 0.5, k + 0.5) for k in range(int(lo), int(hi) + 1)]
        counts = [0] * len(edges)
        for v in values:
            counts[int(v) - int(lo)] += 1
        return edges, counts, True
    if hi <= lo:
        pad = abs(lo) * 0.1 or 0.5
        lo, hi = lo - pad, hi + pad
    step = (hi - lo) / bins
    edges = [(lo + i * step, lo + (i + 1) * step) for i in range(bins)]
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int((v - lo) / step)))] += 1
    return edges, counts, False


def histogram(
    values: Sequence[float],
    *,
    unit: str | None = None,
    mean: float | None = None,
    label: str = "",
    bins: int = 10,
) -> str:
    """Histogram of one metric's scored values, with the mean marked.

    Args:
        values: The scored values (unscored samples left out); non-finite ones are ignored.
        unit: ``None`` for a quality score (bins over [0, 1]); otherwise a measurement's unit
            (bins over the observed range).
        mean: The mean to mark; computed from ``values`` when not given.
        label: What the chart shows (the metric id), for its accessible title.
        bins: Number of bins (measurements made of a few integers get one bin per integer).
    """
    data = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    left, right, top, bottom = _H_LEFT, _H_WIDTH - _H_RIGHT, _H_TOP, _H_BOTTOM
    body = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{AXIS}" stroke-width="1"/>']
    title = f"{label}: " if label else ""
    if not data:
        body.append(
            f'<text x="{_f((left + right) / 2)}" y="{_f((top + bottom) / 2)}" text-anchor="middle" font-size="11" '
            f'fill="{MUTED}">no scored values</text>'
        )
        return _svg(_H_WIDTH, _H_HEIGHT, f"{title}no scored values", body, "chart hist")
    edges, counts, integers = _bins(data, unit, max(1, bins))
    lo, hi = edges[0][0], edges[-1][1]

    def x_of(v: float) -> float:
        return left + (right - left) * (v - lo) / (hi - lo)

    body += _histogram_bars(edges, counts, integers, unit, x_of)
    body += _histogram_ticks(edges, integers, unit, x_of)
    average = sum(data) / len(data) if mean is None or not math.isfinite(mean) else float(mean)
    body += _mean_marker(average, unit, x_of)
    summary = f"{title}{len(data)} value{'s' if len(data) != 1 else ''}, mean {format_number(average, unit)}"
    return _svg(_H_WIDTH, _H_HEIGHT, summary, body, "chart hist")


def _histogram_bars(
    edges: list[tuple[float, float]], counts: list[int], integers: bool, unit: str | None, x_of: Callable[[float], float]
) -> list[str]:
    """The grid, the count scale and one bar per bin (with its range and count as a tooltip)."""
    left, right, top, bottom = _H_LEFT, _H_WIDTH - _H_RIGHT, _H_TOP, _H_BOTTOM
    peak = max(counts)
    body = []
    for tick in (0.25, 0.5, 0.75, 1.0):
        y = bottom - (bottom - top) * tick
        body.append(f'<line x1="{left}" y1="{_f(y)}" x2="{right}" y2="{_f(y)}" stroke="{GRID}" stroke-width="0.5"/>')
    body.append(f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" font-size="9" fill="{MUTED}">{peak}</text>')
    body.append(f'<text x="{left - 4}" y="{bottom}" text-anchor="end" font-size="9" fill="{MUTED}">0</text>')
    for (a, b), count in zip(edges, counts, strict=True):
        x0, x1 = x_of(a), x_of(b)
        h = (bottom - top) * count / peak
        span = f"{int(a + 0.5)}" if integers else f"{format_number(a, unit)}–{format_number(b, unit)}"
        tip = f"{span}: {count} sample{'s' if count != 1 else ''}"
        bar = max(0.5, min(x1 - x0 - min(8.0, max(1.5, (x1 - x0) * 0.12)), 36.0))
        body.append(
            f'<rect x="{_f((x0 + x1 - bar) / 2)}" y="{_f(bottom - h)}" width="{_f(bar)}" height="{_f(h)}" '
            f'fill="{ACCENT}" fill-opacity="0.75"><title>{_e(tip)}</title></rect>'
        )
    return body


def _histogram_ticks(edges: list[tuple[float, float]], integers: bool, unit: str | None, x_of: Callable[[float], float]) -> list[str]:
    """Labels under the x axis: each integer (thinned), or the range's ends and 0.5 for scores."""
    bottom = _H_BOTTOM
    lo, hi = edges[0][0], edges[-1][1]
    if integers:
        step = max(1, math.ceil(len(edges) / 8))
        ticks = [(x_of((a + b) / 2), str(int(a + 0.5))) for a, b in edges[::step]]
    else:
        ticks = [(x_of(lo), format_number(lo, unit) if unit else f"{lo:g}"), (x_of(hi), format_number(hi, unit) if unit else f"{hi:g}")]
        if unit is None:
            ticks.insert(1, (x_of(0.5), "0.5"))
    body = []
    for i, (x, text) in enumerate(ticks):
        anchor = "middle" if integers else ("start" if i == 0 else "end" if i == len(ticks) - 1 else "middle")
        body.append(f'<text x="{_f(x)}" y="{bottom + 12}" text-anchor="{anchor}" font-size="9" fill="{MUTED}">{_e(text)}</text>')
    return body


def _mean_marker(average: float, unit: str | None, x_of: Callable[[float], float]) -> list[str]:
    """A dashed line at the mean, labelled."""
    left, right, top, bottom = _H_LEFT, _H_WIDTH - _H_RIGHT, _H_TOP, _H_BOTTOM
    mx = min(right, max(left, x_of(average)))
    shown = format_number(average, unit)
    anchor = "end" if mx > left + (right - left) * 0.7 else "start"
    offset = -3 if anchor == "end" else 3
    return [
        f'<line x1="{_f(mx)}" y1="{top - 4}" x2="{_f(mx)}" y2="{bottom}" stroke="{MEAN}" stroke-width="1.5" stroke-dasharray="3 2">'
        f"<title>{_e(f'mean {shown}')}</title></line>",
        f'<text x="{_f(mx + offset)}" y="{bottom + 24}" text-anchor="{anchor}" font-size="9" fill="{MEAN}">{_e(f"mean {shown}")}</text>',
    ]
