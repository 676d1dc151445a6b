"""A score's 0.5 line moved to where labelled data puts it.

A metric may rank samples well but compute a quantity that is no probability (answer
relevancy's mean question similarity), so 0.5 on it is no line between good and bad. Such a
metric has a ``line`` fitted where labelled good and bad samples part, checked on a set it
was not fitted on, and reports :func:`at_line` of its value: the line scores 0.5, and the
order of samples, so ROC-AUC, is kept. (Answer correctness was tried and kept its value:
``benchmarks/correctness_line.py``.)
"""

from __future__ import annotations

import reprlib

from ragmeter.metrics.base import finite_number


def at_line(value: float, line: float) -> float:
    """``value`` (in [0, 1]) on the scale where ``line`` is 0.5: linear from 0 to the line
    and from the line to 1, so 0 and 1 stay where they are, the order of any two values is
    kept, and a value scores 0.5 or more exactly when it reaches the line (``line`` 0.5
    leaves every value as it is)."""
    if value < line:
        return 0.5 * value / line
    return 0.5 + 0.5 * (value - line) / (1 - line)


def check_line(metric: str, line: float) -> None:
    """Raise ValueError, naming ``metric``, unless ``line`` is a number strictly between 0 and 1."""
    if finite_number(line) is None or not 0 < line < 1:
        raise ValueError(f"{metric}: line must be a number between 0 and 1, got {reprlib.repr(line)}")
