"""Finding metrics by name: ``register`` (a class decorator), ``metric_classes``, ``create_metric``.

The built-in metrics register themselves when :mod:`ragmeter.metrics` is imported (its
``__init__`` imports every family module), so the registry never imports a metric module.
"""

from __future__ import annotations

import dataclasses
import difflib
import reprlib
from typing import Any

from ragmeter.metrics.base import FAMILIES, Metric

_REGISTRY: dict[str, type[Metric]] = {}

#: Most digits a cut-off after ``@`` may have (Python refuses to convert past about 4300).
CUTOFF_DIGITS = 9


def register(cls: type[Metric]) -> type[Metric]:
    """Class decorator: make a metric available by its ``name``."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"two metrics are named '{cls.name}'")
    if cls.family not in FAMILIES:
        raise ValueError(f"metric '{cls.name}' has unknown family '{cls.family}'")
    _REGISTRY[cls.name] = cls
    return cls


def metric_classes() -> dict[str, type[Metric]]:
    """All registered metrics by name, in registration order."""
    return dict(_REGISTRY)


def create_metric(spec: str, **params: Any) -> Metric:
    """Build a metric from its name, optionally with a cut-off: ``"ndcg"``, ``"ndcg@5"``.

    Args:
        spec: Metric name, with ``@k`` for metrics that take a cut-off ``k``.
        params: Other parameters of the metric (its dataclass fields).

    Raises:
        ValueError: Unknown name (with suggestions), or a cut-off the metric does not take,
            or parameters the metric does not accept.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"a metric name must be a non-empty string, got {spec!r}")
    name, _, cutoff = spec.strip().partition("@")
    if name not in _REGISTRY:
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `ragmeter metrics` lists them"
        raise ValueError(f"unknown metric '{name}'{hint}")
    cls = _REGISTRY[name]
    accepted = sorted(f.name for f in dataclasses.fields(cls) if f.init)
    for parameter in params:
        if parameter not in accepted:
            close = difflib.get_close_matches(str(parameter), accepted, n=1)
            hint = f"did you mean {close[0]}?" if close else f"its parameters: {', '.join(accepted) or 'none'}"
            raise ValueError(f"metric '{name}' has no parameter {reprlib.repr(parameter)}; {hint}")
    if cutoff:
        if "k" not in accepted:
            raise ValueError(f"metric '{name}' takes no @k cut-off")
        # isascii: str.isdigit also takes superscripts ('²'), which int() refuses.
        if not (cutoff.isascii() and cutoff.isdigit() and len(cutoff) <= CUTOFF_DIGITS) or int(cutoff) < 1:
            raise ValueError(
                f"metric '{name}': the cut-off after @ must be a positive integer of at most {CUTOFF_DIGITS} digits,"
                f" got {reprlib.repr(cutoff)}"
            )
        if "k" in params:
            raise ValueError(f"metric '{name}': the cut-off is given twice, as @{int(cutoff)} and as k: give one")
        params["k"] = int(cutoff)
    try:
        return cls(**params)
    except TypeError as exc:
        raise ValueError(f"metric '{name}': {exc}") from None
