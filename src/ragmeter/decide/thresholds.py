"""Thresholds of a quality gate: the YAML file, its rules, and their checks.

Thresholds file (YAML): a mapping from metric id to a rule::

    token_f1: 0.6                      # mean >= 0.6
    faithfulness: {min: 0.8, on: ci_low}   # the lower end of the 95% CI >= 0.8
    latency_ms: {max: 1500}            # lower is better: mean <= 1500
    cost_usd: {max: 0.002, on: ci_high}

A bare number is a minimum of the mean. ``min`` is for metrics where higher is better and
``on`` is ``mean`` (default) or ``ci_low``; ``max`` is for metrics where lower is better
(``latency_ms``, ``total_tokens``, ``cost_usd``, ``first_relevant_rank``,
``noise_sensitivity``) and ``on`` is ``mean`` or ``ci_high``. Only ``true`` and ``false``
are booleans (YAML 1.2), and a metric given twice is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.data.files import UniqueKeyLoader, yaml_value
from ragmeter.data.issues import describe_briefly
from ragmeter.metrics.base import finite_number
from ragmeter.metrics.registry import metric_classes
from ragmeter.report.formatting import format_number
from ragmeter.results import Result


class GateInputError(ValueError):
    """A thresholds file or option that cannot be used; the message names file and key."""


@dataclass(frozen=True)
class Threshold:
    """One threshold rule: ``on`` (mean, ci_low or ci_high) must be >= ``value`` (bound
    ``min``) or <= ``value`` (bound ``max``)."""

    metric: str
    bound: str
    value: float
    on: str = "mean"

    def holds(self, observed: float) -> bool:
        return observed >= self.value if self.bound == "min" else observed <= self.value

    def versus(self, observed: float, unit: str | None) -> str:
        """``observed`` next to the bound, e.g. "0.412 < min 0.500"; with more digits when
        the two would print alike."""
        if self.bound == "min":
            relation = "≥" if observed >= self.value else "<"
        else:
            relation = "≤" if observed <= self.value else ">"
        shown, limit = format_number(observed, unit), format_number(self.value, unit)
        if shown == limit and observed != self.value:
            shown, limit = f"{observed:.6g}", f"{self.value:.6g}"
        return f"{shown} {relation} {self.bound} {limit}"


def parse_threshold(spec: Any, info: dict[str, Any], *, allow_on: bool = True) -> Threshold:
    """A rule from its YAML value.

    Args:
        spec: A number (a minimum of the mean) or a mapping with ``min`` or ``max`` and,
            with ``allow_on``, ``on`` (``mean``, ``ci_low`` for ``min``, ``ci_high`` for ``max``).
        info: The metric's description (:meth:`ragmeter.metrics.base.Metric.info`): its
            ``id``, ``unit`` and ``higher_is_better``.
        allow_on: False for a single sample, which has no mean or interval.

    Raises:
        ValueError: The value is not a valid rule for this metric (the message says why
            and what to write instead; it does not name the file).
    """
    metric, unit = info["id"], info.get("unit")
    higher_is_better = bool(info.get("higher_is_better", True))
    direction = "higher" if higher_is_better else "lower"
    bound_key = "min" if higher_is_better else "max"
    allowed_on = ("mean", "ci_low") if higher_is_better else ("mean", "ci_high")
    if _is_number(spec):
        if not higher_is_better:
            raise ValueError(f"{direction} is better for this metric: write {{max: {spec}}} (a bare number is a minimum)")
        spec = {"min": spec}
    if not isinstance(spec, dict):
        raise ValueError(f"expected a number or a mapping like {{{bound_key}: 0.7, on: mean}}, got {_describe(spec)}")
    unknown = [k for k in spec if k not in ("min", "max", "on")]
    if unknown:
        shown = ", ".join(_describe(k) for k in unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        raise ValueError(f"unknown key(s) {shown}; use {bound_key}" + (" and on" if allow_on else ""))
    bounds = [k for k in ("min", "max") if k in spec]
    if len(bounds) != 1:
        raise ValueError(f"give exactly one of min or max ({direction} is better for this metric: use {bound_key})")
    bound = bounds[0]
    if bound != bound_key:
        raise ValueError(f"{direction} is better for this metric: use {bound_key}, not {bound}")
    value = spec[bound]
    if not _is_number(value):
        raise ValueError(f"{bound} must be a number, got {_describe(value)}")
    if unit is None and not 0 <= value <= 1:
        raise ValueError(f"{metric} scores are in [0, 1]; got {bound} {value:g}")
    on = spec.get("on", "mean")
    if "on" in spec and not allow_on:
        raise ValueError("'on' does not apply to a single sample")
    if on not in allowed_on:
        raise ValueError(f"on must be {' or '.join(allowed_on)}, got {_describe(on)}")
    return Threshold(metric, bound, float(value), on)


def _is_number(value: Any) -> bool:
    return finite_number(value) is not None


def _describe(value: Any) -> str:
    text = describe_briefly(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load_thresholds(path: str | Path, result: Result) -> list[Threshold]:
    """Read and validate a thresholds file against the metrics of ``result``.

    Only ``true`` and ``false`` are booleans in the file (``on``, ``yes``, ``off`` are
    plain words, as in YAML 1.2), and a metric given twice is an error, not a silent override.

    Raises:
        GateInputError: The file is missing, not YAML (or an alias bomb), not a mapping,
            repeats a key, names a metric the run does not have, or gives an invalid rule; the
            message names the file and key (and the line and column, for YAML errors).
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GateInputError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GateInputError(f"{path}: cannot read: {exc}") from None
    try:
        data = yaml_value(text, _thresholds_loader())
    except yaml.YAMLError as exc:  # said as for the other YAML files: yaml_value's message is one line
        raise GateInputError(f"{path}: cannot read the thresholds file: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise GateInputError(f"{path}: expected a mapping of metric id to threshold (e.g. 'token_f1: 0.6'), got {_describe(data)}")
    known = {m["id"]: m for m in result.metrics}
    rules = []
    for key, spec in data.items():
        metric = str(key)
        if metric not in known:
            # Quoted briefly: a key from the file can be of any length and hold any character.
            what = "was not evaluated in this run" if metric.split("@")[0] in metric_classes() else "is not a ragmeter metric"
            quoted = _describe(key)
            raise GateInputError(f"{path}: key {quoted}: unknown metric: {quoted} {what}; the run has {', '.join(known) or 'no metric'}")
        try:
            rules.append(parse_threshold(spec, known[metric]))
        except ValueError as exc:
            raise GateInputError(f"{path}: key {_describe(key)}: {exc}") from None
    return rules


def _thresholds_loader() -> type:
    """A safe YAML loader with YAML 1.2 booleans (``{min: 0.8, on: ci_low}`` keeps its
    ``on`` key) that rejects a key repeated in one mapping (:class:`UniqueKeyLoader`)."""
    import re

    import yaml

    class Loader(UniqueKeyLoader):
        """Its own class: the booleans below change this loader only."""

    bool_tag = "tag:yaml.org,2002:bool"
    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != bool_tag]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(bool_tag, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    return Loader
