"""A pipeline's reply, normalised, and the test-set sample it answers.

:func:`normalise_output` reads a reply (a ``(contexts, answer)`` pair or a dict);
:func:`answered` and :func:`failed` make the sample ``ragmeter eval`` scores, under the rules
of :func:`ragmeter.run.pipelines.run_pipeline`: a reply never replaces the test set's
ground truth, and no latency, tokens or cost of the test set is kept as the pipeline's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data import LoadedSample
from ragmeter.data.conversation import CONVERSATION, REFERENCE_TOOL_CALLS
from ragmeter.data.files import jsonable
from ragmeter.data.issues import describe_briefly
from ragmeter.data.schema import Sample
from ragmeter.metrics.base import finite_number

_OUTPUT_KEYS = {
    "contexts": "contexts",
    "retrieved_contexts": "contexts",
    "answer": "answer",
    "response": "answer",
    "context_ids": "context_ids",
    "retrieved_context_ids": "context_ids",
    "latency_ms": "latency_ms",
    "tokens": "tokens",
    "cost_usd": "cost_usd",
}
#: Metadata that describes one pipeline's answer: a test set's own values are dropped (they
#: are not this pipeline's), and ragmeter or the pipeline's known keys set them again.
_RUN_KEYS = ("latency_ms", "tokens", "cost_usd", "pipeline", "pipeline_latency_ms", "pipeline_error", "pipeline_traceback")
#: Metadata the metrics read as the test set's ground truth: never taken from a reply.
_GROUND_TRUTH_KEYS = ("expected_doc", "answerable", CONVERSATION, REFERENCE_TOOL_CALLS)


class PipelineOutputError(TypeError):
    """A pipeline returned something that is not (contexts, answer) or a dict with them."""


@dataclass(frozen=True)
class PipelineOutput:
    """What a pipeline returned for one question, normalised."""

    contexts: list[str]
    answer: str
    context_ids: list[str] | None = None
    latency_ms: float | None = None
    tokens: Any = None
    cost_usd: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _text_list(value: Any, what: str) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise PipelineOutputError(f"{what} must be a list of strings, got {type(value).__name__}")
    if not all(isinstance(v, str) for v in value):
        raise PipelineOutputError(f"{what} must hold strings only")
    return list(value)


def normalise_output(value: Any) -> PipelineOutput:
    """A pipeline's return as a :class:`PipelineOutput`.

    Raises:
        PipelineOutputError: Not a (contexts, answer) pair nor a dict with both.
    """
    if isinstance(value, Mapping):
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, item in value.items():
            name = _OUTPUT_KEYS.get(key)
            if name is None:
                extra[str(key)] = item
            elif name in known:
                raise PipelineOutputError(f"the pipeline's dict gives '{name}' twice (under two names)")
            else:
                known[name] = item
        missing = [k for k in ("contexts", "answer") if k not in known]
        if missing:
            raise PipelineOutputError(f"the pipeline's dict lacks {' and '.join(missing)} (keys given: {', '.join(map(str, value))})")
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        known, extra = {"contexts": value[0], "answer": value[1]}, {}
    else:
        raise PipelineOutputError(
            f"a pipeline must return (contexts, answer) or a dict with contexts and answer, got {type(value).__name__}"
        )
    answer = known["answer"]
    if not isinstance(answer, str):
        raise PipelineOutputError(f"the answer must be a string, got {type(answer).__name__}")
    context_ids = known.get("context_ids")
    latency = known.get("latency_ms")
    if latency is not None and (isinstance(latency, bool) or not isinstance(latency, (int, float))):
        raise PipelineOutputError(f"latency_ms must be a number, got {type(latency).__name__}")
    if latency is not None and not ((number := finite_number(latency)) is not None and number >= 0):
        raise PipelineOutputError(f"latency_ms must be a non-negative finite number, got {describe_briefly(latency)}")
    return PipelineOutput(
        contexts=_text_list(known["contexts"], "contexts"),
        answer=answer,
        context_ids=None if context_ids is None else _list_of_ids(context_ids),
        latency_ms=None if latency is None else float(latency),
        tokens=jsonable(known.get("tokens")),
        cost_usd=jsonable(known.get("cost_usd")),
        extra={key: jsonable(item) for key, item in extra.items()},
    )


def _list_of_ids(value: Any) -> list[str]:
    """``value`` as context ids: a list of strings or integers (as text); ``None``, a number
    with a fraction, ``True`` or an object is no id (``str()`` made "None" or "{'id': 3}" of them)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise PipelineOutputError(f"context_ids must be a list, got {type(value).__name__}")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            raise PipelineOutputError(f"context_ids must hold strings or integers, got {type(item).__name__}")
    return [str(item) for item in value]


def answered(loaded: LoadedSample, output: PipelineOutput, wall_ms: float, name: str) -> tuple[Sample, list[str]]:
    """The test-set sample with the pipeline's answer, and a warning for each reply key refused.

    Args:
        loaded: The test-set sample the pipeline was asked.
        output: The pipeline's normalised reply.
        wall_ms: The wall time of the call, in milliseconds.
        name: The pipeline's name (``metadata.pipeline``).
    """
    base = loaded.sample.model_dump(exclude_none=True)
    metadata = _without_run_keys(base.get("metadata", {}))
    warnings = []
    for key, value in output.extra.items():
        refused = _refused_key(key, metadata)
        if refused:
            warnings.append(f"{loaded.key}: the pipeline's reply key '{key}' was ignored: {refused}")
        else:
            metadata[key] = value
    metadata.update(pipeline=name, pipeline_latency_ms=round(wall_ms, 3))
    metadata["latency_ms"] = output.latency_ms if output.latency_ms is not None else round(wall_ms, 3)
    for key in ("tokens", "cost_usd"):
        if getattr(output, key) is not None:
            metadata[key] = getattr(output, key)
    base.update(retrieved_contexts=output.contexts, response=output.answer, metadata=metadata)
    base.pop("retrieved_context_ids", None)
    if output.context_ids is not None:
        base["retrieved_context_ids"] = output.context_ids
    return Sample.model_validate(base), warnings


def _without_run_keys(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The test set's metadata without the values of an earlier answer (latency, tokens, cost...)."""
    return {key: value for key, value in metadata.items() if key not in _RUN_KEYS}


def _refused_key(key: str, metadata: Mapping[str, Any]) -> str | None:
    """Why the reply's extra ``key`` may not be set in ``metadata`` (the test set's, without
    run keys), or None when it may."""
    if key in _RUN_KEYS:
        return "ragmeter sets it itself"
    if key in _GROUND_TRUTH_KEYS:
        return "it is ground truth the metrics read, only the test set gives it"
    if key in metadata:
        return "the test set's own value is kept"
    return None


def failed(loaded: LoadedSample, error: str, wall_ms: float | None, name: str, trace: str | None = None) -> Sample:
    """The test-set sample without response or contexts, its call's ``error`` (and the last
    frames of its traceback, ``trace``) in the metadata; ``wall_ms`` is None when the call
    never started, ``name`` the pipeline's."""
    base = loaded.sample.model_dump(exclude_none=True)
    for key in ("retrieved_contexts", "retrieved_context_ids", "response"):
        base.pop(key, None)
    metadata = {**_without_run_keys(base.get("metadata", {})), "pipeline": name, "pipeline_error": error}
    if trace:
        metadata["pipeline_traceback"] = trace
    if wall_ms is not None:
        metadata["pipeline_latency_ms"] = round(wall_ms, 3)
    base["metadata"] = metadata
    return Sample.model_validate(base)
