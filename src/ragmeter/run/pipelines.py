"""Running a RAG pipeline over a test set: each question answered, each failure recorded.

A pipeline is any callable ``question -> (contexts, answer)``, sync or async, or one that
returns a dict with ``contexts`` and ``answer`` (also accepted: ``retrieved_contexts``,
``response``) and optionally ``context_ids``, ``latency_ms``, ``tokens``, ``cost_usd``;
other keys land in the sample's metadata. :func:`pipeline_from_config` turns a builder and
a config dict (chunk size, top-k, reranker, model...) into a pipeline that remembers its
config.

:func:`run_pipeline` answers every question, at most ``concurrency`` at a time (sync
pipelines each call in their own worker thread, async ones on the event loop). The wall time
of each call is kept in ``metadata.pipeline_latency_ms``, and in ``metadata.latency_ms``
unless the pipeline reports its own. An exception (or a malformed return, or a timeout) in
one question is recorded for that sample (``metadata.pipeline_error``, no response) and the
run goes on. A sync call that times out cannot be killed: its (daemon) thread finishes in
the background without holding up the other questions.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data import Dataset, LoadedSample
from ragmeter.data.files import jsonable
from ragmeter.data.schema import Sample
from ragmeter.data.secrets import redact
from ragmeter.results.stats import describe

#: A RAG pipeline: question -> (contexts, answer), or a dict; sync or async.
#: A RAG pipeline: question -> (contexts, answer), or a dict; sync or async.
Pipeline = Callable[[str], Any]
DEFAULT_PIPELINE_CONCURRENCY = 4
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
    if latency is not None and not (math.isfinite(latency) and latency >= 0):
        raise PipelineOutputError(f"latency_ms must be a non-negative finite number, got {latency!r}")
    return PipelineOutput(
        contexts=_text_list(known["contexts"], "contexts"),
        answer=answer,
        context_ids=None if context_ids is None else [str(c) for c in _list_of_ids(context_ids)],
        latency_ms=None if latency is None else float(latency),
        tokens=jsonable(known.get("tokens")),
        cost_usd=jsonable(known.get("cost_usd")),
        extra={key: jsonable(item) for key, item in extra.items()},
    )


def _list_of_ids(value: Any) -> list[Any]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise PipelineOutputError(f"context_ids must be a list, got {type(value).__name__}")
    return list(value)


class ConfiguredPipeline:
    """A pipeline built from a config dict; remembers the config (for the report).

    Args:
        build: ``config -> pipeline``; called once, now.
        config: The settings (chunk size, top-k, reranker, model...).
        name: Short name; default: the config as ``key=value`` pairs.
    """

    def __init__(self, build: Callable[[dict[str, Any]], Pipeline], config: Mapping[str, Any], name: str | None = None):
        self.config = dict(config)
        self.name = name or ", ".join(f"{k}={v}" for k, v in self.config.items()) or "pipeline"
        self.pipeline = build(dict(self.config))
        if not callable(self.pipeline):
            raise TypeError(f"build({self.config}) returned {type(self.pipeline).__name__}, not a callable pipeline")

    @property
    def is_async(self) -> bool:
        return _is_async(self.pipeline)

    def __call__(self, question: str) -> Any:
        return self.pipeline(question)

    def __repr__(self) -> str:
        return f"ConfiguredPipeline({self.name})"


def pipeline_from_config(
    build: Callable[[dict[str, Any]], Pipeline], config: Mapping[str, Any], name: str | None = None
) -> ConfiguredPipeline:
    """The pipeline ``build(config)`` returns, remembering ``config``; see :class:`ConfiguredPipeline`."""
    return ConfiguredPipeline(build, config, name)


def _is_async(pipeline: Any) -> bool:
    if isinstance(pipeline, ConfiguredPipeline):
        return pipeline.is_async
    return inspect.iscoroutinefunction(pipeline) or inspect.iscoroutinefunction(getattr(pipeline, "__call__", None))  # noqa: B004  (the method, not callability)


# ---- running one pipeline ------------------------------------------------------------------


@dataclass
class PipelineRun:
    """The samples one pipeline produced.

    Attributes:
        name: The pipeline's name.
        dataset: The test set's samples with the pipeline's contexts and answers; samples
            whose call failed carry ``metadata.pipeline_error`` and no response.
        errors: Sample key -> the error of its call.
        seconds: Wall time of the whole pass.
        latencies_ms: Wall time of each successful call, by sample key.
    """

    name: str
    dataset: Dataset
    errors: dict[str, str]
    seconds: float
    latencies_ms: dict[str, float]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n_samples": len(self.dataset),
            "n_errors": len(self.errors),
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "latency_ms": describe(list(self.latencies_ms.values())),
        }


def _error_text(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}")


class PipelineTimeout(Exception):
    """The pipeline gave no answer within the timeout (told apart from a ``TimeoutError``
    the pipeline raises itself)."""


def _in_thread(pipeline: Pipeline, question: Any, loop: asyncio.AbstractEventLoop) -> asyncio.Future:
    """Call a sync pipeline in a new daemon thread; its outcome lands in the future.

    One thread per call rather than a fixed pool: a call that hangs past its timeout
    keeps only its own thread, never a pool worker the next questions would queue
    behind, and a daemon thread does not keep the interpreter alive at exit.
    """
    future = loop.create_future()

    def settle(outcome: tuple[bool, Any]) -> None:
        if future.done():  # given up on (timeout) or cancelled
            return
        if outcome[0]:
            future.set_result(outcome[1])
        else:
            future.set_exception(outcome[1])

    def target() -> None:
        try:
            outcome = (True, pipeline(question))
        except StopIteration as exc:  # a future cannot hold it (it would hang the wait)
            error = RuntimeError(f"the pipeline raised StopIteration{f': {exc}' if str(exc) else ''}")
            error.__cause__ = exc
            outcome = (False, error)
        except BaseException as exc:  # handed to the waiting coroutine
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:  # the loop is closed: nobody waits for this answer any more
            pass

    threading.Thread(target=target, name="ragmeter-pipeline", daemon=True).start()
    return future


async def _call(pipeline: Pipeline, question: Any, timeout: float | None) -> Any:
    """The pipeline's return for ``question`` (its text, or the sample); raises :class:`PipelineTimeout` when it
    takes longer than ``timeout`` seconds in all (also for a sync pipeline that returns
    an awaitable)."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout

    async def within(awaitable: Awaitable[Any]) -> Any:
        if deadline is None:
            return await awaitable
        task = asyncio.ensure_future(awaitable)
        try:
            done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - loop.time()))
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            raise PipelineTimeout(f"no answer within {timeout:g} s")
        return task.result()

    value = await within(pipeline(question) if _is_async(pipeline) else _in_thread(pipeline, question, loop))
    if inspect.isawaitable(value):  # a sync wrapper around an async pipeline
        value = await within(value)
    return value


def _answered(loaded: LoadedSample, output: PipelineOutput, wall_ms: float, name: str) -> Sample:
    base = loaded.sample.model_dump(exclude_none=True)
    metadata = {**base.get("metadata", {}), **output.extra, "pipeline": name, "pipeline_latency_ms": round(wall_ms, 3)}
    metadata["latency_ms"] = output.latency_ms if output.latency_ms is not None else round(wall_ms, 3)
    for key in ("tokens", "cost_usd"):
        if getattr(output, key) is not None:
            metadata[key] = getattr(output, key)
    base.update(retrieved_contexts=output.contexts, response=output.answer, metadata=metadata)
    base.pop("retrieved_context_ids", None)
    if output.context_ids is not None:
        base["retrieved_context_ids"] = output.context_ids
    return Sample.model_validate(base)


def _failed(loaded: LoadedSample, error: str, wall_ms: float | None, name: str, trace: str | None = None) -> Sample:
    base = loaded.sample.model_dump(exclude_none=True)
    for key in ("retrieved_contexts", "retrieved_context_ids", "response"):
        base.pop(key, None)
    metadata = {**base.get("metadata", {}), "pipeline": name, "pipeline_error": error}
    if trace:
        metadata["pipeline_traceback"] = trace
    metadata.pop("latency_ms", None)
    if wall_ms is not None:
        metadata["pipeline_latency_ms"] = round(wall_ms, 3)
    base["metadata"] = metadata
    return Sample.model_validate(base)


async def run_pipeline(
    pipeline: Pipeline,
    testset: Dataset,
    *,
    name: str = "pipeline",
    concurrency: int = DEFAULT_PIPELINE_CONCURRENCY,
    timeout: float | None = None,
    with_sample: bool = False,
) -> PipelineRun:
    """Answer every question of ``testset`` with ``pipeline``, at most ``concurrency`` at a
    time; an error in one question is recorded for that sample, never raised.

    ``with_sample`` calls the pipeline with the whole test-set :class:`Sample` (its id,
    metadata...) instead of the question text.

    ``timeout`` (seconds per question) stops waiting for a call; a sync pipeline's thread
    cannot be killed and finishes in the background (each call has its own thread, so a
    hung call never delays the others).
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    check_timeout(timeout)
    gate = asyncio.Semaphore(concurrency)
    errors: dict[str, str] = {}
    latencies: dict[str, float] = {}
    samples: list[LoadedSample | None] = [None] * len(testset)
    started = time.perf_counter()

    async def one(index: int, loaded: LoadedSample) -> None:
        question = loaded.sample.user_input
        wall_ms: float | None = None
        async with gate:
            try:
                if not question or not question.strip():
                    raise ValueError("the test set sample has no question (user_input)")
                began = time.perf_counter()
                try:
                    value = await _call(pipeline, loaded.sample if with_sample else question, timeout)
                finally:
                    wall_ms = (time.perf_counter() - began) * 1000
                sample = _answered(loaded, normalise_output(value), wall_ms, name)
                latencies[loaded.key] = wall_ms
            except PipelineTimeout as exc:
                errors[loaded.key] = f"TimeoutError: {exc}"
                sample = _failed(loaded, errors[loaded.key], wall_ms, name)
            except Exception as exc:  # one question must not end the run
                frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
                errors[loaded.key] = _error_text(exc)
                sample = _failed(loaded, errors[loaded.key], wall_ms, name, redact("".join(frames[-3:])[-2000:]))
        samples[index] = LoadedSample(sample, loaded.key, loaded.source, loaded.location)

    await asyncio.gather(*(one(i, s) for i, s in enumerate(testset)))
    dataset = Dataset(samples=[s for s in samples if s is not None], issues=list(testset.issues))
    return PipelineRun(name, dataset, errors, time.perf_counter() - started, latencies)


def check_timeout(timeout: float | None) -> None:
    """``timeout`` must be a positive number of seconds, or None for no limit."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
