"""Scoring one (sample, metric) pair safely, wherever it runs: in the engine's process or
in a cluster worker. An exception becomes an unscored, failed score that names the error,
never a crash and never a silent NaN; the seconds and the model usage are measured."""

from __future__ import annotations

import math
import time
import traceback
from typing import TYPE_CHECKING, Any

from ragmeter.data.schema import Sample
from ragmeter.data.secrets import redact
from ragmeter.judges.metering import Usage, metered
from ragmeter.metrics.base import Metric, Score

if TYPE_CHECKING:
    from ragmeter.judges import Judges


async def score_pair(metric: Metric, sample: Sample, judges: Judges) -> tuple[Score, float, Usage]:
    """Score ``sample`` with ``metric``, asking ``judges`` when it needs a model.

    Returns:
        The score (failed when the metric raised or returned something malformed), the
        seconds it took and the model usage it caused.
    """
    began = time.perf_counter()
    with metered() as usage:
        score = await _score_safely(metric, sample, judges)
    return score, time.perf_counter() - began, usage


async def _score_safely(metric: Metric, sample: Sample, judges: Judges) -> Score:
    try:
        score = await metric.score(sample, judges)
    except Exception as exc:  # one bad pair must not end the run
        frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
        return Score.unscored(
            redact(f"error: {type(exc).__name__}: {exc}"),
            {"traceback": redact("".join(frames[-3:])[-2000:])},
            failed=True,
        )
    return _checked(metric, score)


def _checked(metric: Metric, score: Any) -> Score:
    """Turn a metric's malformed return into an explicit failure instead of bad data."""
    if not isinstance(score, Score):
        return Score.unscored(f"error: metric returned {type(score).__name__}, not a Score", failed=True)
    if score.value is not None and metric.unit is None and not (0.0 <= score.value <= 1.0):
        if math.isclose(score.value, 1.0, abs_tol=1e-9) or math.isclose(score.value, 0.0, abs_tol=1e-9):
            return Score(min(max(score.value, 0.0), 1.0), score.explanation, details=score.details)
        return Score.unscored(f"error: metric returned {score.value}, outside [0, 1]", score.details, failed=True)
    return score
