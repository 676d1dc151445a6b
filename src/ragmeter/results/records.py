"""One sample's record in a run: the sample, where it came from, and its scores."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError

from ragmeter.data.issues import describe_briefly
from ragmeter.data.schema import Sample
from ragmeter.judges.config import validation_message
from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Score, finite_number

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
            TypeError, ValueError: A field is missing or of the wrong type, or a wall time
                is not a number of seconds (a hand-edited or damaged file); the message
                names the field, on one line.
        """
        for name, required in (("key", True), ("source", False), ("location", False), ("fingerprint", False)):
            if required and name not in data:
                raise ValueError(f"'{name}' is missing")
            if data.get(name) is not None and not isinstance(data[name], str):
                raise TypeError(f"'{name}' must be text, not {type(data[name]).__name__}")
        return cls(
            key=data["key"],
            sample=_sample(data),
            source=data.get("source") or "",
            location=data.get("location") or "",
            scores=_each(data, "scores", Score.from_dict),
            seconds=_each(data, "seconds", _seconds),
            usage=_each(data, "usage", Usage.from_dict),
            fingerprint=data.get("fingerprint"),
            configs=_mapping(data, "configs"),
        )


def _sample(data: dict[str, Any]) -> Sample:
    """The sample of a record; an error names the field (``sample.user_input``) on one line."""
    if "sample" not in data:
        raise ValueError("'sample' is missing")
    if not isinstance(data["sample"], dict):
        raise TypeError(f"'sample' must be an object, not {type(data['sample']).__name__}")
    try:
        return Sample.model_validate(data["sample"])
    except ValidationError as exc:
        raise ValueError(validation_message(exc, "sample.")) from None


def _seconds(value: Any) -> float:
    """A wall time in seconds: a finite number, 0 or more."""
    seconds = finite_number(value)
    if seconds is None or seconds < 0:
        raise ValueError(f"must be a number of seconds (0 or more), got {describe_briefly(value)}")
    return seconds


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
