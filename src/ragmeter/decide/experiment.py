"""A/B experiments: run two RAG pipelines over one test set, score both the same way, compare.

::

    from ragmeter import pipeline_from_config, run_experiment

    a = pipeline_from_config(build_rag, {"chunk_size": 256, "top_k": 5})
    b = pipeline_from_config(build_rag, {"chunk_size": 512, "top_k": 3})
    experiment = run_experiment(a, b, "questions.jsonl", metrics=["token_f1", "faithfulness"], out_dir="runs/ab")
    experiment.comparison          # ragmeter.decide.compare.compare_results(result_a, result_b)

How a run goes:

- The test set (anything :func:`ragmeter.load_dataset` reads: questions, and references
  when there are any) keeps its sample keys; a sample without an id gets its key as id,
  so the two sides pair up sample by sample (also when ``ragmeter compare`` reads the two
  run directories later, and when questions repeat).
- Each pipeline answers every question (:func:`ragmeter.run.pipelines.run_pipeline`);
  pipeline A runs to the end before pipeline B starts, so they do not slow each other down.
  A question whose call fails leaves that sample unscored on every metric, with the error
  as reason, and the run goes on.
- Both sides are scored with the same metric objects and the same judges; with
  ``out_dir`` each side gets its own run directory (results, journal, reports),
  ``compare.md``/``compare.json``/``compare.html`` hold the comparison (B - A) and
  ``experiment.json`` the pipelines' settings, errors and latencies with the comparison.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmeter.data import Dataset, InputError, InputIssue, LoadedSample, as_dataset
from ragmeter.data.files import write_json
from ragmeter.decide.compare import compare_results
from ragmeter.judges import Judges
from ragmeter.judges.metering import Usage
from ragmeter.metrics import Metric, Needs, Score
from ragmeter.report import write_reports
from ragmeter.report.compare import write_comparison
from ragmeter.results import Result, SampleResult
from ragmeter.run.engine import DEFAULT_CONCURRENCY, Evaluator, applicable_metrics, default_llm_judge, resolve_metrics
from ragmeter.run.executor import RemoteExecutor
from ragmeter.run.pipelines import (
    DEFAULT_PIPELINE_CONCURRENCY,
    ConfiguredPipeline,
    Pipeline,
    PipelineRun,
    check_timeout,
    run_pipeline,
)
from ragmeter.run.sync import run_sync

EXPERIMENT_FILE = "experiment.json"

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
        return {m: (self.a.result.aggregates[m]["mean"], self.b.result.aggregates[m]["mean"]) for m in self.a.result.metric_ids}

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


def _as_dataset(data: Any) -> Dataset:
    """The test set, every sample with an id (its key when it had none), so that the two
    sides' samples are paired by key, also when questions repeat."""
    dataset = as_dataset(data)
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
        a = pipeline_a.name if isinstance(pipeline_a, ConfiguredPipeline) else "A"
        b = pipeline_b.name if isinstance(pipeline_b, ConfiguredPipeline) else "B"
    if a == b:
        a, b = f"{a} (A)", f"{b} (B)"
    return a, b


def _folder(name: str) -> str:
    """A folder name for a side: characters unsafe in file names replaced."""
    return re.sub(r"[^A-Za-z0-9_.@=-]+", "_", name).strip("_.")[:80] or "side"


def distinct_folders(names: Sequence[str]) -> list[str]:
    """A folder name per name in ``names`` (see :func:`_folder`), distinct even when two names
    differ only in characters unsafe in file names, in letter case, or past the 80th
    character: each name whose folder another name shares gets the first 8 hex digits of its
    SHA-256 appended, so the same names give the same folders on every run (a resumed sweep
    finds its journals) and no run overwrites another."""
    bases = [_folder(name) for name in names]
    shared = Counter(base.casefold() for base in bases)
    return [
        base if shared[base.casefold()] == 1 else f"{base[:71]}_{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
        for base, name in zip(bases, names, strict=True)
    ]


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
            InputIssue(
                f"pipeline {run.name}",
                loaded.location,
                None,
                f"pipeline error: {run.errors[loaded.key]}; every metric left unscored",
                skipped=False,
            )
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
    _check_options(pipeline_a, pipeline_b, pipeline_concurrency, alpha, timeout)
    dataset = _as_dataset(testset)
    name_a, name_b = _names(pipeline_a, pipeline_b, names)
    chosen = resolve_metrics(metrics) if metrics is not None else None
    judges = judges or Judges()
    owns_llm = False
    if chosen is not None and judges.llm is None and any(m.needs == Needs.LLM for m in chosen):
        # Built before the pipelines run: a judge that cannot be built fails fast.
        judges.llm, owns_llm = default_llm_judge(), True
    root = Path(out_dir) if out_dir is not None else None
    try:
        runs = [
            await run_pipeline(pipeline, dataset, name=name, concurrency=pipeline_concurrency, timeout=timeout)
            for pipeline, name in ((pipeline_a, name_a), (pipeline_b, name_b))
        ]
        answered = [[s for s in run.dataset if s.key not in run.errors] for run in runs]
        if chosen is None:  # model-free metrics only: no judge needed
            chosen = applicable_metrics(Dataset(samples=answered[0] + answered[1]))
            if not chosen:
                raise ValueError("no metric applies to the answered samples; pass metrics=")
        folders = _folders(root, name_a, name_b)
        arms = [
            await _score_arm(pipeline, run, samples, folder, chosen, judges, [s.key for s in dataset], concurrency, progress)
            for pipeline, run, samples, folder in zip((pipeline_a, pipeline_b), runs, answered, folders, strict=True)
        ]
    finally:
        if owns_llm and judges.llm is not None:
            await judges.llm.aclose()
            judges.llm = None
    if compare is None:
        comparison: Any = compare_results(arms[0].result, arms[1].result, alpha=alpha, label_a=name_a, label_b=name_b)
    else:
        comparison = compare(arms[0].result, arms[1].result, alpha=alpha)
    experiment = Experiment(arms[0], arms[1], comparison, alpha)
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        if compare is None:
            write_comparison(comparison, root)
        write_json(root / EXPERIMENT_FILE, experiment.to_dict())
    return experiment


def _check_options(pipeline_a: Pipeline, pipeline_b: Pipeline, pipeline_concurrency: int, alpha: float, timeout: float | None) -> None:
    if pipeline_concurrency < 1:
        raise ValueError("pipeline_concurrency must be at least 1")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    check_timeout(timeout)
    for label, pipeline in (("pipeline_a", pipeline_a), ("pipeline_b", pipeline_b)):
        if not callable(pipeline):
            raise TypeError(f"{label} must be a callable (question -> (contexts, answer)), got {type(pipeline).__name__}")


def _folders(root: Path | None, name_a: str, name_b: str) -> tuple[Path | None, Path | None]:
    """The run directory of each side under ``root`` (``None`` without one); two names that
    give the same folder get the side as a suffix."""
    if root is None:
        return None, None
    a, b = root / _folder(name_a), root / _folder(name_b)
    return (a, b) if a != b else (root / f"{_folder(name_a)}_a", root / f"{_folder(name_b)}_b")


async def _score_arm(
    pipeline: Pipeline,
    run: PipelineRun,
    answered: list[LoadedSample],
    folder: Path | None,
    metrics: list[Metric],
    judges: Judges,
    order: list[str],
    concurrency: int,
    progress: bool | None,
    executor: RemoteExecutor | None = None,
) -> Arm:
    """Score one side's answered samples, add its failed ones, and write its run directory
    (``executor``: where the pairs are scored; ``None``: in this process)."""
    evaluator = Evaluator(metrics, judges=judges, concurrency=concurrency, out_dir=folder, progress=progress, executor=executor)
    scored = await evaluator.arun(Dataset(samples=answered, issues=run.dataset.issues))
    failed = [s for s in run.dataset if s.key in run.errors]
    result = _with_pipeline_errors(scored, run, failed, order)
    config = pipeline.config if isinstance(pipeline, ConfiguredPipeline) else None
    result.run["pipeline"] = {**run.describe(), "config": config}
    result.run["n_samples"] = len(result.samples)
    if folder is not None:
        result.save(folder)
        write_reports(result, folder)
    return Arm(run.name, config, run, result, folder)


def run_experiment(
    pipeline_a: Pipeline, pipeline_b: Pipeline, testset: Any, metrics: Iterable[str | Metric] | None = None, **options: Any
) -> Experiment:
    """Blocking :func:`arun_experiment` (also from inside a running event loop, e.g. a notebook)."""
    return run_sync(arun_experiment(pipeline_a, pipeline_b, testset, metrics, **options))
