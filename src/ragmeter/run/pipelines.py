"""Running a RAG pipeline over a test set: each question answered, each failure recorded.

A pipeline is any callable ``question -> (contexts, answer)``, sync or async, or one that
returns a dict with ``contexts`` and ``answer`` (also accepted: ``retrieved_contexts``,
``response``) and optionally ``context_ids``, ``latency_ms``, ``tokens``, ``cost_usd``;
other keys land in the sample's metadata, unless they would replace a test set field (see
:func:`run_pipeline`). :func:`pipeline_from_config` turns a builder and
a config dict (chunk size, top-k, reranker, model...) into a pipeline that remembers its
config.

:func:`run_pipeline` answers every question, at most ``concurrency`` at a time (sync
pipelines each call in their own worker thread, async ones on the event loop). The wall time
of each call is kept in ``metadata.pipeline_latency_ms``, and in ``metadata.latency_ms``
unless the pipeline reports its own. An exception (or a malformed return, or a timeout) in
one question is recorded for that sample (``metadata.pipeline_error``, no response) and the
run goes on; so is a ``SystemExit``, ``KeyboardInterrupt`` or other ``BaseException`` the
pipeline's own code raises (a real Ctrl-C reaches the run through
:func:`ragmeter.run.sync.run_sync`, never through the pipeline). A sync call that times out
cannot be killed: its (daemon) thread finishes in the background without holding up the
other questions.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragmeter.data import Dataset, LoadedSample
from ragmeter.data.secrets import redact
from ragmeter.results.stats import describe
from ragmeter.run.replies import answered, failed, normalise_output

#: A RAG pipeline: question -> (contexts, answer), or a dict; sync or async.
Pipeline = Callable[[str], Any]
DEFAULT_PIPELINE_CONCURRENCY = 4


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
        warnings: A line per reply key that was not applied ("<sample key>: ... '<key>' ..."):
            it would have replaced a test set field or a value ragmeter sets, in test set order.
    """

    name: str
    dataset: Dataset
    errors: dict[str, str]
    seconds: float
    latencies_ms: dict[str, float]
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n_samples": len(self.dataset),
            "n_errors": len(self.errors),
            "errors": self.errors,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "latency_ms": describe(list(self.latencies_ms.values())),
        }


def _error_text(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {_message(exc)}")


def _message(exc: BaseException) -> str:
    """``str(exc)``, or a placeholder when the pipeline's exception cannot give its message
    (its ``__str__`` raises): recording one question's error must not end the run."""
    try:
        return str(exc)
    except Exception as failure:
        return f"<its message cannot be shown: {type(failure).__name__}>"


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
        except BaseException as exc:  # handed to the waiting coroutine
            outcome = (False, _recordable(exc))
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:  # the loop is closed: nobody waits for this answer any more
            pass

    threading.Thread(target=target, name="ragmeter-pipeline", daemon=True).start()
    return future


def _recordable(exc: BaseException) -> Exception:
    """``exc``, raised by the pipeline, as an error its question can be recorded with.

    A ``StopIteration`` cannot travel through a future (it would hang the wait), and a
    ``SystemExit``, ``KeyboardInterrupt``, ``CancelledError`` or other ``BaseException`` would
    end the whole run: each becomes a ``RuntimeError`` naming it, caused by it.
    """
    if isinstance(exc, Exception) and not isinstance(exc, StopIteration):
        return exc
    message = _message(exc)
    error = RuntimeError(f"the pipeline raised {type(exc).__name__}{f': {message}' if message else ''}")
    error.__cause__ = exc
    return error


async def _guarded(awaitable: Awaitable[Any]) -> Any:
    """Await ``awaitable`` (the pipeline's); a ``BaseException`` it raises comes out as
    :func:`_recordable` makes it, except the cancellation of this wait itself."""
    try:
        return await awaitable
    except asyncio.CancelledError:
        raise  # our own cancel (a timeout, Ctrl-C); the pipeline's own is told apart in _call
    except BaseException as exc:
        raise _recordable(exc) from exc


async def _call(pipeline: Pipeline, question: Any, timeout: float | None) -> Any:
    """The pipeline's return for ``question`` (its text, or the sample); raises :class:`PipelineTimeout` when it
    takes longer than ``timeout`` seconds in all (also for a sync pipeline that returns
    an awaitable)."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout

    async def within(awaitable: Awaitable[Any]) -> Any:
        task = asyncio.ensure_future(awaitable)
        try:
            done, _ = await asyncio.wait({task}, timeout=None if deadline is None else max(0.0, deadline - loop.time()))
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            raise PipelineTimeout(f"no answer within {timeout:g} s")
        if task.cancelled():  # not by us: the pipeline raised CancelledError itself
            raise RuntimeError("the pipeline raised CancelledError")
        return task.result()

    value = await within(_guarded(pipeline(question)) if _is_async(pipeline) else _in_thread(pipeline, question, loop))
    if inspect.isawaitable(value):  # a sync wrapper around an async pipeline
        value = await within(_guarded(value))
    return value


async def run_pipeline(
    pipeline: Pipeline,
    testset: Dataset,
    *,
    name: str = "pipeline",
    concurrency: int = DEFAULT_PIPELINE_CONCURRENCY,
    timeout: float | None = None,
    with_sample: bool = False,
    on_answer: Callable[[LoadedSample, LoadedSample, list[str]], None] | None = None,
) -> PipelineRun:
    """Answer every question of ``testset`` with ``pipeline``, at most ``concurrency`` at a
    time; an error in one question is recorded for that sample, never raised.

    ``with_sample`` calls the pipeline with the whole test-set :class:`Sample` (its id,
    metadata...) instead of the question text.

    ``on_answer(asked, answered, warnings)``, if given, is called as each question finishes
    with the test-set sample, the sample made of its reply (or error), and the reply keys
    refused for it (to journal it at once).

    ``timeout`` (seconds per question) stops waiting for a call; a sync pipeline's thread
    cannot be killed and finishes in the background (each call has its own thread, so a
    hung call never delays the others).

    What a reply may set: the sample's ``response``, ``retrieved_contexts`` and
    ``retrieved_context_ids`` (replaced, or removed when the reply gives no ids), and
    ``metadata.latency_ms`` (default: the wall time), ``metadata.tokens`` and
    ``metadata.cost_usd``; the test set's own values of these three, and of ``pipeline``,
    ``pipeline_latency_ms``, ``pipeline_error`` and ``pipeline_traceback``, are dropped, so
    no stale figure is charged to this pipeline. Any other reply key is added to the metadata
    unless the test set's metadata already has it or it is ground truth the metrics read
    (``expected_doc``, ``answerable``, ``conversation``, ``reference_tool_calls``); such a key
    is ignored and named in :attr:`PipelineRun.warnings`. The test set's ``user_input``,
    ``reference``, ``reference_contexts``, ``reference_context_ids`` and ``id`` are never
    changed.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    check_timeout(timeout)
    gate = asyncio.Semaphore(concurrency)
    errors: dict[str, str] = {}
    latencies: dict[str, float] = {}
    refused: dict[int, list[str]] = {}
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
                sample, refused[index] = answered(loaded, normalise_output(value), wall_ms, name)
                latencies[loaded.key] = wall_ms
            except PipelineTimeout as exc:
                errors[loaded.key] = f"TimeoutError: {exc}"
                sample = failed(loaded, errors[loaded.key], wall_ms, name)
            except Exception as exc:  # one question must not end the run
                frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
                errors[loaded.key] = _error_text(exc)
                sample = failed(loaded, errors[loaded.key], wall_ms, name, redact("".join(frames[-3:])[-2000:]))
        samples[index] = result = LoadedSample(sample, loaded.key, loaded.source, loaded.location)
        if on_answer is not None:
            on_answer(loaded, result, refused.get(index, []))

    await asyncio.gather(*(one(i, s) for i, s in enumerate(testset)))
    dataset = Dataset(samples=[s for s in samples if s is not None], issues=list(testset.issues))
    warnings = [line for index in sorted(refused) for line in refused[index]]
    return PipelineRun(name, dataset, errors, time.perf_counter() - started, latencies, warnings)


def check_timeout(timeout: float | None) -> None:
    """``timeout`` must be a positive number of seconds, or None for no limit."""
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
