"""A/B experiments: run two RAG pipelines over one test set, score both the same way, compare.

A pipeline is any callable ``question -> (contexts, answer)``, sync or async, or one that
returns a dict with ``contexts`` and ``answer`` (also accepted: ``retrieved_contexts``,
``response``) and optionally ``context_ids``, ``latency_ms``, ``tokens``, ``cost_usd``;
other keys land in the sample's metadata. :func:`pipeline_from_config` turns a builder
and a config dict (chunk size, top-k, reranker, model...) into a pipeline that remembers
its config, so configurations can be A/B tested::

    from ragmeter.decide.experiment import pipeline_from_config, run_experiment

    a = pipeline_from_config(build_rag, {"chunk_size": 256, "top_k": 5})
    b = pipeline_from_config(build_rag, {"chunk_size": 512, "top_k": 3})
    experiment = run_experiment(a, b, "questions.jsonl", metrics=["token_f1", "faithfulness"], out_dir="runs/ab")
    experiment.comparison          # from ragmeter.compare.compare_results(result_a, result_b)

How a run goes:

- The test set (anything :func:`ragmeter.load_dataset` reads: questions, and references
  when there are any) keeps its sample keys; a sample without an id gets its key as id,
  so the two sides pair up sample by sample (also when ``ragmeter compare`` reads the two
  run directories later, and when questions repeat).
- Each pipeline answers every question, at most ``pipeline_concurrency`` at a time (sync
  pipelines each call in its own worker thread, async ones on the event loop); pipeline
  A runs to the end before pipeline B starts, so they do not slow each other down. The
  wall time of each call is kept in ``metadata.pipeline_latency_ms``, and in
  ``metadata.latency_ms`` unless the pipeline reports its own.
- An exception (or a malformed return, or a timeout) in one question is recorded for that
  sample: every metric gets an unscored, failed score whose reason names the error, the
  sample keeps ``metadata.pipeline_error``, and the run goes on. A sync call that times
  out cannot be killed: its (daemon) thread finishes in the background without holding
  up the other questions.
- Both sides are scored with the same metric objects and the same judges; with
  ``out_dir`` each side gets its own run directory (results, journal, reports),
  ``compare.md``/``compare.json``/``compare.html`` hold the comparison (B - A) and
  ``experiment.json`` the pipelines' settings, errors and latencies with the comparison.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import re
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.run.engine import DEFAULT_CONCURRENCY, Evaluator, _run_coroutine, applicable_metrics, resolve_metrics
from ragmeter.data import Dataset, InputError, InputIssue, LoadedSample, load_dataset
from ragmeter.judges import Judges
from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Metric, Needs, Score
from ragmeter.results import Result, SampleResult
from ragmeter.data.schema import Sample
from ragmeter.results.stats import describe

#: A RAG pipeline: question -> (contexts, answer), or a dict; sync or async.
Pipeline = Callable[[str], Any]
DEFAULT_PIPELINE_CONCURRENCY = 4
EXPERIMENT_FILE = "experiment.json"
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
        tokens=_jsonable(known.get("tokens")),
        cost_usd=_jsonable(known.get("cost_usd")),
        extra={key: _jsonable(item) for key, item in extra.items()},
    )


def _jsonable(value: Any) -> Any:
    """``value`` as JSON can hold it: objects JSON cannot write (a retriever's document
    objects, say) become their ``str``, so one sample's metadata cannot stop the results
    from being saved."""
    try:
        json.dumps(value, ensure_ascii=False)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, ensure_ascii=False, default=str))


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


def pipeline_from_config(build: Callable[[dict[str, Any]], Pipeline], config: Mapping[str, Any], name: str | None = None) -> ConfiguredPipeline:
    """The pipeline ``build(config)`` returns, remembering ``config``; see :class:`ConfiguredPipeline`."""
    return ConfiguredPipeline(build, config, name)


def _is_async(pipeline: Any) -> bool:
    if isinstance(pipeline, ConfiguredPipeline):
        return pipeline.is_async
    return inspect.iscoroutinefunction(pipeline) or inspect.iscoroutinefunction(getattr(pipeline, "__call__", None))


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
    return f"{type(exc).__name__}: {exc}"


class PipelineTimeout(Exception):
    """The pipeline gave no answer within the timeout (told apart from a ``TimeoutError``
    the pipeline raises itself)."""


def _in_thread(pipeline: Pipeline, question: str, loop: asyncio.AbstractEventLoop) -> asyncio.Future:
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


async def _call(pipeline: Pipeline, question: str, timeout: float | None) -> Any:
    """The pipeline's return for ``question``; raises :class:`PipelineTimeout` when it
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
) -> PipelineRun:
    """Answer every question of ``testset`` with ``pipeline``, at most ``concurrency`` at a
    time; an error in one question is recorded for that sample, never raised.

    ``timeout`` (seconds per question) stops waiting for a call; a sync pipeline's thread
    cannot be killed and finishes in the background (each call has its own thread, so a
    hung call never delays the others).
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    _check_timeout(timeout)
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
                    value = await _call(pipeline, question, timeout)
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
                sample = _failed(loaded, errors[loaded.key], wall_ms, name, "".join(frames[-3:])[-2000:])
        samples[index] = LoadedSample(sample, loaded.key, loaded.source, loaded.location)

    await asyncio.gather(*(one(i, s) for i, s in enumerate(testset)))
    dataset = Dataset(samples=[s for s in samples if s is not None], issues=list(testset.issues))
    return PipelineRun(name, dataset, errors, time.perf_counter() - started, latencies)


# ---- the experiment ------------------------------------------------------------------------


@dataclass
class Arm:
    """One side of the experiment: its pipeline pass and its scores."""

    name: str
    config: dict[str, Any] | None
    run: PipelineRun
    result: Result
    out_dir: Path | None = None

    def describe(self) -> dict[str, Any]:
        return {**self.run.describe(), "config": self.config, "out_dir": None if self.out_dir is None else str(self.out_dir)}


@dataclass
class Experiment:
    """Both sides' results and their comparison.

    Attributes:
        a, b: The two arms (pipeline pass, :class:`Result`, output directory).
        comparison: What ``compare_results(result_a, result_b, alpha)`` returned.
        alpha: Significance level given to the comparison.
    """

    a: Arm
    b: Arm
    comparison: Any
    alpha: float

    @property
    def result_a(self) -> Result:
        return self.a.result

    @property
    def result_b(self) -> Result:
        return self.b.result

    @property
    def names(self) -> tuple[str, str]:
        return self.a.name, self.b.name

    def means(self) -> dict[str, tuple[float | None, float | None]]:
        """Each metric's mean on side A and side B."""
        return {
            m: (self.a.result.aggregates[m]["mean"], self.b.result.aggregates[m]["mean"]) for m in self.a.result.metric_ids
        }

    def to_dict(self) -> dict[str, Any]:
        comparison = self.comparison
        if hasattr(comparison, "to_dict"):
            comparison = comparison.to_dict()
        elif comparison is not None and not isinstance(comparison, (dict, list, str, int, float, bool)):
            comparison = repr(comparison)
        return {
            "a": self.a.describe(),
            "b": self.b.describe(),
            "alpha": self.alpha,
            "means": {m: {"a": a, "b": b} for m, (a, b) in self.means().items()},
            "comparison": comparison,
        }

    def __repr__(self) -> str:
        return f"Experiment({self.a.name} vs {self.b.name}, {len(self.a.result.samples)} samples)"


def _check_timeout(timeout: float | None) -> None:
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")


def _as_dataset(data: Any) -> Dataset:
    """The test set, every sample with an id (its key when it had none), so that the two
    sides' samples are paired by key, also when questions repeat."""
    if isinstance(data, Dataset):
        dataset = data
    elif isinstance(data, (list, tuple)) and data and all(isinstance(d, (str, Path)) for d in data):
        dataset = load_dataset(*data)
    else:
        dataset = load_dataset(data)
    if not dataset.samples:
        raise InputError(dataset.issues or [InputIssue("<testset>", "all", None, "no samples in the test set")])
    keys = [s.key for s in dataset]
    if len(set(keys)) != len(keys):
        raise ValueError("the test set's sample keys are not unique; give each sample a distinct id")
    samples = [
        s if s.sample.id is not None else LoadedSample(s.sample.model_copy(update={"id": s.key}), s.key, s.source, s.location)
        for s in dataset
    ]
    return Dataset(samples=samples, issues=list(dataset.issues))


def _names(pipeline_a: Pipeline, pipeline_b: Pipeline, names: tuple[str, str] | None) -> tuple[str, str]:
    if names is not None:
        if len(names) != 2 or not all(isinstance(n, str) and n.strip() for n in names):
            raise ValueError("names must be two non-empty strings")
        a, b = names
    else:
        a = getattr(pipeline_a, "name", None) if isinstance(pipeline_a, ConfiguredPipeline) else None
        b = getattr(pipeline_b, "name", None) if isinstance(pipeline_b, ConfiguredPipeline) else None
        a, b = a or "A", b or "B"
    if a == b:
        a, b = f"{a} (A)", f"{b} (B)"
    return a, b


def _folder(name: str) -> str:
    """A folder name for a side: characters unsafe in file names replaced."""
    return re.sub(r"[^A-Za-z0-9_.@=-]+", "_", name).strip("_.")[:80] or "side"


def _with_pipeline_errors(result: Result, run: PipelineRun, failed: list[LoadedSample], order: list[str]) -> Result:
    """``result`` plus the samples whose pipeline call failed, each metric unscored and
    failed with the error as reason, in test-set order."""
    extra = []
    for loaded in failed:
        error = run.errors[loaded.key]
        scores = {m: Score.unscored(f"pipeline error: {error}", failed=True) for m in result.metric_ids}
        extra.append(
            SampleResult(
                loaded.key,
                loaded.sample,
                loaded.source,
                loaded.location,
                scores=scores,
                seconds=dict.fromkeys(result.metric_ids, 0.0),
                usage={m: Usage() for m in result.metric_ids},
            )
        )
    position = {key: i for i, key in enumerate(order)}
    samples = sorted([*result.samples, *extra], key=lambda s: position[s.key])
    issues = [
        *result.issues,
        *(
            InputIssue(f"pipeline {run.name}", loaded.location, None, f"pipeline error: {run.errors[loaded.key]}; every metric left unscored", skipped=False)
            for loaded in failed
        ),
    ]
    return Result(samples=samples, metrics=result.metrics, issues=issues, run=result.run)


async def arun_experiment(
    pipeline_a: Pipeline,
    pipeline_b: Pipeline,
    testset: Any,
    metrics: Iterable[str | Metric] | None = None,
    *,
    names: tuple[str, str] | None = None,
    judges: Judges | None = None,
    pipeline_concurrency: int = DEFAULT_PIPELINE_CONCURRENCY,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    out_dir: str | Path | None = None,
    alpha: float = 0.05,
    compare: Callable[..., Any] | None = None,
    progress: bool | None = False,
) -> Experiment:
    """Run both pipelines on ``testset``, score both with the same metrics and judges, and
    compare them (see the module docstring).

    Args:
        pipeline_a, pipeline_b: The two pipelines (callables or :func:`pipeline_from_config`).
        testset: Anything :func:`ragmeter.load_dataset` accepts, or a :class:`Dataset`:
            questions, and references when the metrics need them.
        metrics: Metric names or objects; ``None``: every model-free metric the answered
            samples have fields for.
        names: Names of the two sides (default: the configured pipelines' names, else
            ``A`` and ``B``); also the folder names under ``out_dir``.
        judges: Models for the metrics; one LLM judge is built (and closed) for both sides
            when an LLM metric needs one and none is given.
        pipeline_concurrency: Questions in flight per pipeline.
        concurrency: (sample, metric) pairs scored at once.
        timeout: Seconds a pipeline may take per question.
        out_dir: With it, each side is written to ``out_dir/<name>`` (results, journal,
            reports), the comparison to ``out_dir/compare.{md,json,html}`` and the whole
            experiment to ``out_dir/experiment.json``.
        alpha: Significance level of the comparison.
        compare: ``(result_a, result_b, alpha=...) -> comparison``; default
            ``ragmeter.compare.compare_results`` (labelled with the two names).
        progress: Progress bars while scoring.

    Raises:
        InputError: The test set has no usable sample.
        ValueError: Bad options, or no metric applies (with ``metrics=None``).
    """
    default_compare = compare is None
    if compare is None:
        from ragmeter.decide.compare import compare_results as compare  # checked before any pipeline runs
    if pipeline_concurrency < 1:
        raise ValueError("pipeline_concurrency must be at least 1")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    _check_timeout(timeout)
    for label, pipeline in (("pipeline_a", pipeline_a), ("pipeline_b", pipeline_b)):
        if not callable(pipeline):
            raise TypeError(f"{label} must be a callable (question -> (contexts, answer)), got {type(pipeline).__name__}")
    dataset = _as_dataset(testset)
    name_a, name_b = _names(pipeline_a, pipeline_b, names)
    order = [s.key for s in dataset]
    chosen = resolve_metrics(metrics) if metrics is not None else None
    judges = judges or Judges()
    owns_llm = False
    if chosen is not None and judges.llm is None and any(m.needs == Needs.LLM for m in chosen):
        # Built before the pipelines run: a judge that cannot be built fails fast.
        from ragmeter.judges.config import JudgeConfig

        judges.llm, owns_llm = JudgeConfig.from_env().build(), True
    root = Path(out_dir) if out_dir is not None else None
    arms = []
    try:
        run_a = await run_pipeline(pipeline_a, dataset, name=name_a, concurrency=pipeline_concurrency, timeout=timeout)
        run_b = await run_pipeline(pipeline_b, dataset, name=name_b, concurrency=pipeline_concurrency, timeout=timeout)
        answered = {side: [s for s in run.dataset if s.key not in run.errors] for side, run in (("a", run_a), ("b", run_b))}
        if chosen is None:  # model-free metrics only: no judge needed
            chosen = applicable_metrics(Dataset(samples=answered["a"] + answered["b"]))
            if not chosen:
                raise ValueError("no metric applies to the answered samples; pass metrics=")
        for (name, pipeline, run, side) in ((name_a, pipeline_a, run_a, "a"), (name_b, pipeline_b, run_b, "b")):
            side_dir = root / _folder(name) if root is not None else None
            if side_dir is not None and arms and side_dir == arms[0].out_dir:
                side_dir = root / f"{_folder(name)}_{side}"
            evaluator = Evaluator(chosen, judges=judges, concurrency=concurrency, out_dir=side_dir, progress=progress)
            scored = await evaluator.arun(Dataset(samples=answered[side], issues=run.dataset.issues))
            failed = [s for s in run.dataset if s.key in run.errors]
            result = _with_pipeline_errors(scored, run, failed, order)
            config = pipeline.config if isinstance(pipeline, ConfiguredPipeline) else None
            result.run["pipeline"] = {**run.describe(), "config": config}
            result.run["n_samples"] = len(result.samples)
            arm = Arm(name, config, run, result, side_dir)
            if side_dir is not None:
                from ragmeter.report import write_reports

                result.save(side_dir)
                write_reports(result, side_dir)
            arms.append(arm)
    finally:
        if owns_llm:
            await judges.llm.aclose()
            judges.llm = None
    if default_compare:
        comparison = compare(arms[0].result, arms[1].result, alpha=alpha, label_a=name_a, label_b=name_b)
    else:
        comparison = compare(arms[0].result, arms[1].result, alpha=alpha)
    experiment = Experiment(arms[0], arms[1], comparison, alpha)
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        if default_compare:
            from ragmeter.decide.compare import write_comparison

            write_comparison(comparison, root)
        (root / EXPERIMENT_FILE).write_text(json.dumps(experiment.to_dict(), ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return experiment


def run_experiment(pipeline_a: Pipeline, pipeline_b: Pipeline, testset: Any, metrics: Iterable[str | Metric] | None = None, **options: Any) -> Experiment:
    """Blocking :func:`arun_experiment` (also from inside a running event loop, e.g. a notebook)."""
    return _run_coroutine(arun_experiment(pipeline_a, pipeline_b, testset, metrics, **options))
