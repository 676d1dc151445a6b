"""One sample's record in a run: the sample, where it came from, and its scores."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragmeter.data.schema import Sample
from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Score

T = TypeVar("T")


@dataclass
class SampleResult:
    """One sample's scores.

    Attributes:
        key: The sample's key in the dataset (its id, or source and line).
        sample: The sample itself.
        source: File (or ``<DataFrame>``) it came from.
        location: Line or row in that source.
        scores: Score per metric id.
        seconds: Wall time per metric id spent scoring it (as first measured, for
            scores resumed from the journal).
        usage: Model calls, tokens and cost per metric id.
        fingerprint: Hash of the sample's content when it was scored (a later run reuses a
            score only for an unchanged sample).
        configs: Hash of each metric's settings when it scored the sample (a later run
            reuses a score only for unchanged settings).
    """

    key: str
    sample: Sample
    source: str
    location: str
    scores: dict[str, Score] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)
    fingerprint: str | None = None
    configs: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "fingerprint": self.fingerprint,
            "configs": self.configs,
            "source": self.source,
            "location": self.location,
            "sample": self.sample.model_dump(exclude_none=True),
            "scores": {m: s.to_dict() for m, s in self.scores.items()},
            "seconds": self.seconds,
            "usage": {m: u.to_dict() for m, u in self.usage.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleResult:
        """The record :meth:`to_dict` wrote.

        Raises:
            KeyError, TypeError, ValueError: A field is missing or of the wrong type (a
                hand-edited or damaged file); the message names the field.
        """
        return cls(
            key=data["key"],
            sample=Sample.model_validate(data["sample"]),
            source=data.get("source", ""),
            location=data.get("location", ""),
            scores=_each(data, "scores", Score.from_dict),
            seconds=_mapping(data, "seconds"),
            usage=_each(data, "usage", Usage.from_dict),
            fingerprint=data.get("fingerprint"),
            configs=_mapping(data, "configs"),
        )


def _mapping(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The object ``data[name]`` (empty when missing or null)."""
    value = data.get(name) or {}
    if not isinstance(value, dict):
        raise TypeError(f"'{name}' must be an object, not {type(value).__name__}")
    return value


def _each(data: dict[str, Any], name: str, build: Callable[[Any], T]) -> dict[str, T]:
    """``build`` applied to each value of the object ``data[name]``; an error names the entry."""
    built = {}
    for key, item in _mapping(data, name).items():
        try:
            built[key] = build(item)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"'{name}.{key}': {exc}") from None
    return built
