"""Score drift: each metric over time on a control chart whose limits come from the bootstrap
intervals.

A series is a run of points in time order (stored runs, or days of the monitor's scores), each
with a mean and its 95% bootstrap interval. The first ``baseline`` points set the centre line
(their means weighted by their sample counts). A later point is out of control when its mean is
further from the centre than three standard errors, where the standard error combines the
point's own (the bootstrap interval's width / 3.92) with the spread between the baseline points
beyond what their own intervals explain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ragmeter.results.stats import describe

#: Standard errors between the centre line and a control limit.
SIGMAS = 3.0
#: Width of a 95% interval in standard errors.
INTERVAL_WIDTH = 2 * 1.959964


@dataclass
class Point:
    """One point of a series: a run or a time window.

    Attributes:
        label: What it is (a run id, a day).
        at: When (ISO time), for ordering.
        mean: The metric's mean.
        ci_low: Lower end of its 95% bootstrap interval (``None``: fewer than two values).
        ci_high: Upper end.
        n: Scored samples behind it.
    """

    label: str
    at: str
    mean: float
    ci_low: float | None
    ci_high: float | None
    n: int


@dataclass
class ControlPoint:
    """A point checked against the control limits.

    Attributes:
        point: The point.
        lower: Lower control limit for it (``None`` for baseline points).
        upper: Upper control limit.
        out_of_control: Its mean is outside the limits.
    """

    point: Point
    lower: float | None
    upper: float | None
    out_of_control: bool


@dataclass
class ControlChart:
    """A metric's control chart.

    Attributes:
        metric: The metric id.
        centre: The centre line (baseline mean), ``None`` without baseline points.
        points: Every point in time order, the baseline ones first.
        alarm: The latest point is out of control.
        left_out: Ids of what was left out of the chart because the metric was scored with
            other settings than at the latest point (their means measure something else).
        left_out_of: What those ids are: ``"run"`` or ``"trace"``.
    """

    metric: str
    centre: float | None
    points: list[ControlPoint]
    alarm: bool
    left_out: list[str] = field(default_factory=list)
    left_out_of: str = "run"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def window_point(label: str, at: str, values: Sequence[float]) -> Point | None:
    """A point from raw scores (a time window of the monitor): mean and bootstrap interval;
    ``None`` without values."""
    if not values:
        return None
    description = describe(list(values))
    return Point(label, at, float(description["mean"] or 0.0), description["ci_low"], description["ci_high"], len(values))


def _standard_error(point: Point) -> float | None:
    if point.ci_low is None or point.ci_high is None:
        return None
    return (point.ci_high - point.ci_low) / INTERVAL_WIDTH


def control_chart(metric: str, points: Sequence[Point], baseline: int) -> ControlChart:
    """Check each point after the first ``baseline`` against control limits from them.

    Args:
        metric: The metric id (for the report).
        points: The series, in time order.
        baseline: How many leading points set the centre line (at least 1).

    Raises:
        ValueError: ``baseline`` is below 1.
    """
    if baseline < 1:
        raise ValueError("the baseline needs at least one point")
    ordered = sorted(points, key=lambda p: p.at)
    base, later = ordered[:baseline], ordered[baseline:]
    if not base:
        return ControlChart(metric, None, [], False)
    weights = np.array([max(p.n, 1) for p in base], dtype=float)
    means = np.array([p.mean for p in base])
    centre = float(np.average(means, weights=weights))
    own = [se for se in (_standard_error(p) for p in base) if se is not None]
    between = max(0.0, float(np.var(means, ddof=1)) - float(np.mean(np.square(own)))) if len(base) > 1 and own else 0.0
    checked = [ControlPoint(p, None, None, False) for p in base]
    for point in later:
        se = _standard_error(point)
        spread = math.sqrt((se or 0.0) ** 2 + between)
        if spread == 0.0:
            checked.append(ControlPoint(point, None, None, False))
            continue
        lower, upper = centre - SIGMAS * spread, centre + SIGMAS * spread
        checked.append(ControlPoint(point, lower, upper, not lower <= point.mean <= upper))
    return ControlChart(metric, centre, checked, bool(later) and checked[-1].out_of_control)
