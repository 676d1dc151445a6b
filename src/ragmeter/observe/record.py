"""One traced request (or one step of it) as ragmeter records it: a :class:`SpanRecord`.

A request traced with ``@ragmeter.trace`` gives one record; steps inside it traced with
``ragmeter.span(...)`` give one record each, sharing the request's ``trace_id`` and naming
their parent. :mod:`ragmeter.observe.export` joins a trace's records into one sample.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ragmeter.data.issues import describe_briefly

#: What a span did, as OpenInference names it (``openinference.span.kind``): every kind it
#: defines, so that spans another OpenInference tracer wrote are read, not refused.
SPAN_KINDS = ("CHAIN", "RETRIEVER", "LLM", "TOOL", "EMBEDDING", "RERANKER", "AGENT", "GUARDRAIL", "EVALUATOR", "PROMPT", "UNKNOWN")
#: Most tokens a span may count: what the store's integer columns hold (PostgreSQL's INTEGER).
MAX_TOKENS = 2**31 - 1
#: Most characters of a span's ids and kind: what the store's columns hold (PostgreSQL refuses
#: longer values, and with them the whole import; SQLite does not check).
STORED_LENGTHS = {"trace_id": 64, "span_id": 64, "parent_id": 64, "kind": 16}
#: The fields an application sets with ``Span.set``, and what each takes.
SETTABLE = {
    "question": "a text (str)",
    "response": "a text (str)",
    "model": "a text (str)",
    "prompt_tokens": f"a whole number from 0 to {MAX_TOKENS}",
    "completion_tokens": f"a whole number from 0 to {MAX_TOKENS}",
    "cost_usd": "a finite number",
}


def too_long(record: SpanRecord) -> str | None:
    """Why the store's columns cannot hold ``record`` (an id or its kind longer than
    :data:`STORED_LENGTHS`, naming the key), or ``None`` when they can."""
    for key, most in STORED_LENGTHS.items():
        value = getattr(record, key)
        if value is not None and len(value) > most:
            return f"'{key}' {describe_briefly(value)} is {len(value)} characters; the store holds {most}"
    return None


def settable_value(key: str, value: Any) -> Any:
    """``value`` as the field ``key`` of :data:`SETTABLE` holds it (``None`` clears the field; a
    token count of 812.0 is 812).

    Raises:
        ValueError: The field cannot hold ``value`` (a number as ``model``, ``"812"`` or 12.5 as a
            token count); the message says what the field takes and what it was given.
    """
    if value is None:
        return None
    if key in ("question", "response", "model"):
        fits = isinstance(value, str)
    else:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if fits and key != "cost_usd":
            fits = value == int(value) and 0 <= value <= MAX_TOKENS
            value = int(value) if fits else value
    if not fits:
        raise ValueError(f"'{key}' takes {SETTABLE[key]}, got {describe_briefly(value)}")
    return float(value) if key == "cost_usd" else value


@dataclass
class RetrievedContext:
    """One retrieved text.

    Attributes:
        text: The text given to the model.
        id: Identifier of the document or chunk it came from, when known.
        score: The retriever's score for it, when known.
    """

    text: str
    id: str | None = None
    score: float | None = None


@dataclass
class SpanRecord:
    """One request, or one step of it.

    Attributes:
        trace_id: Identifier shared by every span of one request (32 hex digits).
        span_id: This span's identifier (16 hex digits).
        parent_id: The enclosing span's identifier; ``None`` for the request itself.
        name: What was traced (the function's qualified name, or the name given).
        kind: One of :data:`SPAN_KINDS`.
        started_at: Start time, ISO 8601 in UTC.
        latency_ms: Wall time of the span in milliseconds.
        question: The user's question.
        contexts: The texts retrieved for it, best first.
        response: The answer returned.
        model: The generating model's name.
        prompt_tokens: Tokens sent to the model.
        completion_tokens: Tokens the model generated.
        cost_usd: What the request cost, in US dollars.
        error: ``"ExceptionType: message"`` when the span ended with an exception.
        attributes: Anything else the application attached (JSON values).
    """

    trace_id: str
    span_id: str
    name: str
    started_at: str
    parent_id: str | None = None
    kind: str = "CHAIN"
    latency_ms: float | None = None
    question: str | None = None
    contexts: list[RetrievedContext] = field(default_factory=list)
    response: str | None = None
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    error: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON object; absent values are left out. The attributes' values are
        taken as they are, never copied: the application's objects (a client, a lock) need not
        be copyable, and a sink writes what JSON cannot hold as its text."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["contexts"] = [{k: v for k, v in asdict(c).items() if v is not None} for c in self.contexts]
        data["attributes"] = dict(self.attributes)
        return {k: v for k, v in data.items() if v is not None and v != [] and v != {}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpanRecord:
        """A record from :meth:`to_dict`'s object.

        Raises:
            ValueError: A required key is missing, a key is unknown, or a value has the wrong type
                (the message names the key).
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)}")
        for key in ("trace_id", "span_id", "name", "started_at"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"'{key}' must be a string")
        built = _contexts_of(data.get("contexts") or [])
        for key in ("question", "response", "model", "error", "parent_id"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise ValueError(f"'{key}' must be a string")
        if data.get("parent_id") is not None and data["parent_id"] == data["span_id"]:
            raise ValueError("'parent_id' is the span's own id: a span cannot be its own parent (its trace would have no root)")
        if not isinstance(data.get("kind", ""), str):
            raise ValueError("'kind' must be a string")
        if data.get("kind", "CHAIN") not in SPAN_KINDS:
            raise ValueError(f"'kind' must be one of {', '.join(SPAN_KINDS)}, got {describe_briefly(data['kind'])}")
        if not isinstance(data.get("attributes", {}), dict):
            raise ValueError("'attributes' must be an object")
        for key in ("latency_ms", "prompt_tokens", "completion_tokens", "cost_usd"):
            value = data.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
                raise ValueError(f"'{key}' must be a number, got {describe_briefly(value)}")
        for key in ("prompt_tokens", "completion_tokens"):
            value = data.get(key)
            if value is not None and not (value == int(value) and 0 <= value <= MAX_TOKENS):
                raise ValueError(f"'{key}' must be a whole number from 0 to {MAX_TOKENS}, got {describe_briefly(value)}")
        return cls(**{**data, "contexts": built})


def _contexts_of(contexts: Any) -> list[RetrievedContext]:
    """The retrieved contexts of a span's ``contexts`` value (a list of objects).

    Raises:
        ValueError: It is no list of objects with a ``text`` string, or an item has another key, an
            ``id`` that is no string or a ``score`` that is no finite number (the message names the
            item, counted from 1, and the key).
    """
    if not isinstance(contexts, list) or not all(isinstance(c, dict) and isinstance(c.get("text"), str) for c in contexts):
        raise ValueError("'contexts' must be a list of objects with a 'text' string")
    for number, context in enumerate(contexts, start=1):
        unknown = sorted(set(context) - {"text", "id", "score"})
        score, key = context.get("score"), context.get("id")
        if unknown:
            problem = f"unknown key(s) {', '.join(map(describe_briefly, unknown))}"
        elif key is not None and not isinstance(key, str):
            problem = f"'id' must be a string, got {describe_briefly(key)}"
        elif score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)):
            problem = f"'score' must be a number, got {describe_briefly(score)}"
        else:
            continue
        raise ValueError(f"'contexts' item {number}: {problem}")
    return [RetrievedContext(**c) for c in contexts]
