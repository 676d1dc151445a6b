"""What a metric is, what it returns, and how metrics are found by name.

A metric is a small frozen dataclass: its fields are its parameters (``k`` for rank
metrics, thresholds...). It declares the sample fields it needs and whether it needs a
judge, and ``score`` returns a :class:`Score`: a value, or no value and the reason why.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import reprlib
import types
import typing
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from ragmeter.data.schema import Sample

if TYPE_CHECKING:
    from ragmeter.judges import Judges


class Needs(str, Enum):
    """What a metric needs besides the sample."""

    NOTHING = "nothing"
    EMBEDDINGS = "embeddings"
    LLM = "llm"


#: Why :meth:`Metric.unusable_fields` names a required field the sample lacks.
MISSING = "missing"
#: Metric families, in the order reports show them.
FAMILIES: dict[str, str] = {
    "retrieval": "Retrieval: were the right contexts retrieved, and ranked first?",
    "groundedness": "Groundedness: is the response supported by the retrieved contexts?",
    "correctness": "Correctness: does the response agree with the reference answer?",
    "relevance": "Relevance: does the response address the question?",
    "lexical": "Lexical overlap between response and reference",
    "robustness": "Robustness: refusals, noise, citations, expected documents",
    "criteria": "Custom criteria: aspects and rubrics you define",
    "agents": "Agents and conversations: tool calls, goals, contexts used across turns",
    "efficiency": "Efficiency: latency, tokens and cost",
}


def finite_number(value: object) -> float | None:
    """``value`` as a float when it is a finite number, else ``None``.

    Args:
        value: Anything; an int or a float counts, a bool does not, nor an integer too
            large for a float (``10**400``, which ``math.isfinite`` cannot even take).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class Score:
    """The outcome of one metric on one sample.

    Attributes:
        value: The score, in [0, 1] for quality metrics (in the metric's unit for
            measurements such as latency); ``None`` when the sample could not be scored.
        explanation: One or two sentences saying why the value is what it is.
        reason: Why there is no value. Required when ``value`` is ``None``.
        details: Intermediate results: matched tokens, per-sentence similarities,
            per-context relevance, claims and verdicts...
        failed: True when an error (an exception, a judge failure) rather than the
            sample itself prevented scoring. Failed scores are retried when a run resumes.
    """

    value: float | None
    explanation: str = ""
    reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    failed: bool = False

    def __post_init__(self) -> None:
        if self.value is None and not self.reason:
            raise ValueError("a Score without a value must say why (reason)")
        if self.value is not None and (isinstance(self.value, bool) or not math.isfinite(self.value)):
            raise ValueError(f"a Score value must be a finite number, got {self.value!r}")

    @classmethod
    def unscored(cls, reason: str, details: dict[str, Any] | None = None, *, failed: bool = False) -> Score:
        """A score with no value, and the reason."""
        return cls(value=None, reason=reason, details=details or {}, failed=failed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "explanation": self.explanation,
            "reason": self.reason,
            "details": self.details,
            "failed": self.failed,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Score:
        """The score :meth:`to_dict` wrote.

        Raises:
            TypeError, ValueError: ``data`` is not an object, or not a valid score (a damaged file).
        """
        if not isinstance(data, dict):
            raise TypeError(f"a score must be an object, not {type(data).__name__}")
        value = data.get("value")
        if value is not None and finite_number(value) is None:
            raise ValueError(f"a score's value must be a finite number or null, got {reprlib.repr(value)}")
        for key, kinds in (("explanation", (str,)), ("reason", (str,)), ("details", (dict,))):
            if data.get(key) is not None and not isinstance(data[key], kinds):
                raise ValueError(f"a score's {key} must be {'an object' if key == 'details' else 'text'}, got {reprlib.repr(data[key])}")
        return cls(
            value=value,
            explanation=data.get("explanation") or "",
            reason=data.get("reason"),
            details=data.get("details") or {},
            failed=bool(data.get("failed")),
        )


@dataclass(frozen=True)
class Metric(ABC):
    """Base class of all metrics. Subclasses are frozen dataclasses; fields are parameters.

    Class attributes every metric sets:
        name: Registry name, used on the command line.
        family: One of :data:`FAMILIES`.
        needs: What it needs besides the sample (:class:`Needs`).
        required: Sample fields (``"response"``) or metadata keys
            (``"metadata.expected_doc"``) that must be present.
        unit: ``None`` for a quality score in [0, 1]; otherwise the unit of a measurement
            (``"ms"``, ``"tokens"``, ``"USD"``, ``"rank"``), which may exceed 1.
        higher_is_better: Direction of improvement.
    """

    name: ClassVar[str]
    family: ClassVar[str]
    needs: ClassVar[Needs] = Needs.NOTHING
    required: ClassVar[tuple[str, ...]] = ()
    unit: ClassVar[str | None] = None
    higher_is_better: ClassVar[bool] = True

    def __post_init__(self) -> None:
        """Check each parameter whose field is a ``float``, ``int``, ``bool`` or ``str`` (or
        one of them or ``None``) against that type: a float must be a finite number (an int
        will do), an int an integer, a bool true or false, a str text; a bool is no number.

        A metric's own ``__post_init__`` checks ranges and other fields, then calls this, so
        that its more precise message comes first.

        Raises:
            ValueError: ``<metric>: <parameter> must be <what>, got <value>``.
        """
        for parameter, (kind, optional) in _parameter_types(type(self)).items():
            value = getattr(self, parameter)
            if not (value is None and optional) and not _fits(value, kind):
                raise ValueError(f"{self.name}: {parameter} must be {_KINDS[kind]}, got {reprlib.repr(value)}")

    @property
    def id(self) -> str:
        """Name plus the cut-off for rank metrics (``ndcg@5``): the column name in results."""
        k = getattr(self, "k", None)
        return f"{self.name}@{k}" if k is not None else self.name

    @property
    def description(self) -> str:
        """First paragraph of the metric's docstring."""
        doc = (type(self).__doc__ or "").strip().replace("``", "`")
        return " ".join(doc.split("\n\n")[0].split())

    def config(self) -> dict[str, Any]:
        """The parameters, for reports and for telling runs with different settings apart."""
        return dataclasses.asdict(self)

    def config_hash(self) -> str:
        payload = json.dumps({"metric": self.name, **self.config()}, sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def missing_fields(self, sample: Sample) -> list[str]:
        """Required fields the sample lacks: a field that is ``None``, a metadata key that is
        absent (an explicit ``null`` in metadata is a value the metric interprets)."""
        return [
            f
            for f in self.required
            if (f.removeprefix("metadata.") not in sample.metadata if f.startswith("metadata.") else sample.get(f) is None)
        ]

    def unusable_fields(self, sample: Sample) -> dict[str, str]:
        """Required fields the metric cannot use in ``sample``, each with why: :data:`MISSING`
        (:meth:`missing_fields`), or, for ``retrieved_context_ids``, that they are not one per
        context (:meth:`Sample.unpaired_ids`): a rank metric would credit ids to the wrong
        texts, so it leaves such a sample unscored, as one without ids."""
        unusable = dict.fromkeys(self.missing_fields(sample), MISSING)
        unpaired = sample.unpaired_ids() if "retrieved_context_ids" in self.required else None
        if unpaired and "retrieved_context_ids" not in unusable:
            unusable["retrieved_context_ids"] = unpaired
        return unusable

    @abstractmethod
    async def score(self, sample: Sample, judges: Judges) -> Score:
        """Score one sample. ``judges`` holds the embedder and LLM judge, when needed."""

    def info(self) -> dict[str, Any]:
        """Everything reports need to know about the metric."""
        return {
            "id": self.id,
            "name": self.name,
            "family": self.family,
            "needs": self.needs.value,
            "required": list(self.required),
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "description": self.description,
            "config": self.config(),
        }


#: The parameter types :meth:`Metric.__post_init__` checks, and what a value of each must be.
_KINDS: dict[type, str] = {float: "a finite number", int: "an integer", bool: "true or false", str: "text"}


@cache
def _parameter_types(cls: type[Metric]) -> dict[str, tuple[type, bool]]:
    """The parameters of metric class ``cls`` that :data:`_KINDS` names a check for, each with
    its type and whether ``None`` is allowed (``int | None``). A class whose annotations do not
    resolve (one defined inside a function) checks its own parameters."""
    try:
        hints = typing.get_type_hints(cls)
    except NameError:
        return {}
    found = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        kinds = [a for a in args if a is not type(None)]
        if len(kinds) == 1 and kinds[0] in _KINDS:
            found[f.name] = (kinds[0], len(kinds) < len(args))
    return found


def _fits(value: object, kind: type) -> bool:
    """Whether ``value`` is a ``kind`` as :meth:`Metric.__post_init__` means it."""
    if kind is float:
        return finite_number(value) is not None
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)
