"""Sweeps: a grid of pipeline configurations over one test set, all scored the same way, and
which of them are worth keeping.

::

    # sweep.yaml
    pipeline: my_rag:answer        # answer(config, sample) -> (contexts, answer) or a dict
    grid:                          # every combination (here 2 x 2 = 4 configurations)
      chunk_size: [256, 512]
      top_k: [3, 5]
    # or configs: [{chunk_size: 256, top_k: 3}, ...]

Each configuration answers every question (:func:`ragmeter.run.pipelines.run_pipeline`, the
sample passed whole), one configuration after the other, and is scored like one side of an
A/B experiment (its own run directory under ``out_dir``). Then:

- **quality** is the mean of one metric (``quality``); **latency** the mean of the samples'
  ``metadata.latency_ms`` (the pipeline's own figure, else its wall time per call) and
  **cost** the mean of ``metadata.cost_usd`` when the pipeline reports it;
- the **Pareto front** holds the configurations no other one beats on all three at once
  (at least as good on each, better on one; a dimension no configuration reports is left out);
- the **best** configuration (highest quality) is compared with every other one on the
  quality metric with ragmeter's paired statistics (:func:`ragmeter.decide.compare.compare_results`:
  paired bootstrap interval, paired permutation test), the p-values Holm-corrected across the
  comparisons: those *significantly worse than the best* can be dropped.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ragmeter.data.files import write_json, yaml_value
from ragmeter.data.issues import describe_briefly
from ragmeter.decide.compare import compare_results
from ragmeter.decide.experiment import _as_dataset, _score_arm, distinct_folders
from ragmeter.judges import Judges
from ragmeter.metrics import Metric, Needs
from ragmeter.report.sweep import write_sweep_report
from ragmeter.results import Result
from ragmeter.results.inference import holm
from ragmeter.run.engine import DEFAULT_CONCURRENCY, default_llm_judge, resolve_metrics
from ragmeter.run.executor import RemoteExecutor
from ragmeter.run.pipeline_sources import load_pipeline
from ragmeter.run.pipelines import DEFAULT_PIPELINE_CONCURRENCY, ConfiguredPipeline, run_pipeline
from ragmeter.run.sync import run_sync

SWEEP_FILE = "sweep.json"
WORSE = "significantly worse than the best"
NOT_WORSE = "not significantly worse"
#: The verdict of a configuration none of whose samples has a quality score (every pipeline call failed, say).
NOT_COMPARED = "not compared: no sample scored"
#: Most configurations a sweep runs (each answers and scores the whole test set).
MAX_CONFIGURATIONS = 1000


@dataclass
class SweepPoint:
    """One configuration of a sweep and how it did.

    Attributes:
        name: The configuration as ``key=value`` pairs.
        config: The configuration.
        result: Its scores.
        quality: Mean of the quality metric (``None`` when no sample was scored).
        latency_ms: Mean latency per question.
        cost_usd: Mean cost per question (``None`` when the pipeline reports none).
        errors: Questions whose pipeline call failed.
        folder: Its run directory's name inside the sweep's output directory (``None``
            without one); see :func:`~ragmeter.decide.experiment.distinct_folders`.
        pareto: On the Pareto front of quality against latency and cost.
        versus_best: The paired comparison with the best configuration (``None`` for the best).
    """

    name: str
    config: dict[str, Any]
    result: Result
    quality: float | None
    latency_ms: float | None
    cost_usd: float | None
    errors: int
    folder: str | None = None
    pareto: bool = False
    versus_best: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        keys = ("name", "config", "quality", "latency_ms", "cost_usd", "errors", "folder", "pareto", "versus_best")
        return {key: getattr(self, key) for key in keys}


@dataclass
class Sweep:
    """A finished sweep: every configuration, the best one, and the settings."""

    quality_metric: str
    points: list[SweepPoint]
    best: str | None
    alpha: float
    settings: dict[str, Any] = field(default_factory=dict)

    def point(self, name: str) -> SweepPoint:
        """The configuration named ``name``."""
        return next(p for p in self.points if p.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "quality_metric": self.quality_metric,
            "best": self.best,
            "alpha": self.alpha,
            "pareto_front": [p.name for p in self.points if p.pareto],
            "significantly_worse": [p.name for p in self.points if p.versus_best and p.versus_best["verdict"] == WORSE],
            "points": [p.to_dict() for p in self.points],
            "settings": self.settings,
        }


def grid_configs(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in order (the last key varies fastest).

    Raises:
        ValueError: A key's values are not a non-empty list, or the grid has more than
            :data:`MAX_CONFIGURATIONS` combinations (counted before any is built: eight
            settings of ten values are 10^8, which filled the memory).
    """
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid.{key}: expected a non-empty list of values, got {describe_briefly(values)}")
    _check_count(math.prod(len(values) for values in grid.values()), "grid", " x ".join(str(len(v)) for v in grid.values()))
    return [dict(zip(grid, combination, strict=True)) for combination in itertools.product(*grid.values())]


def _check_count(count: int, where: str, how: str) -> None:
    """A usage error when ``count`` configurations (from ``where``, counted ``how``) are too many."""
    if count > MAX_CONFIGURATIONS:
        raise ValueError(
            f"{where}: {count:,} configurations ({how}); a sweep runs at most {MAX_CONFIGURATIONS:,}, "
            "each over the whole test set: narrow it or split it into several sweeps"
        )


def load_sweep_file(path: str | Path) -> tuple[str | None, list[dict[str, Any]]]:
    """The pipeline (``module:function``, or ``None`` when the file names none) and the
    configurations of a sweep file (see the module docstring).

    Raises:
        ValueError: The file is unreadable or malformed; the message names the file and key.
    """
    try:
        data = yaml_value(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the sweep file: {exc}") from None
    if not isinstance(data, dict) or ("grid" in data) == ("configs" in data):
        raise ValueError(f"{path}: expected a mapping with either grid: (values per setting) or configs: (a list of settings)")
    pipeline = data.get("pipeline")
    if pipeline is not None and not isinstance(pipeline, str):
        raise ValueError(f"{path}: pipeline: expected module:function, got {describe_briefly(pipeline)}")
    if "grid" in data:
        if not isinstance(data["grid"], dict) or not data["grid"]:
            raise ValueError(f"{path}: grid: expected a mapping of setting -> list of values")
        try:
            return pipeline, grid_configs(data["grid"])
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    configs = data["configs"]
    if not isinstance(configs, list) or not configs or not all(isinstance(c, dict) for c in configs):
        raise ValueError(f"{path}: configs: expected a non-empty list of mappings")
    _check_count(len(configs), f"{path}: configs", "listed")
    return pipeline, configs


def import_pipeline(spec: str) -> Callable[..., Any]:
    """The Python callable ``spec`` names: ``module:function``, or ``module:factory()`` for
    what a factory builds (:func:`ragmeter.run.pipeline_sources.load_pipeline`).

    Raises:
        ValueError: ``spec`` is a URL (an endpoint takes a question, not these arguments), or
            the module or function cannot be found or built; the message names ``spec``.
    """
    if spec.startswith(("http://", "https://")):
        raise ValueError(f"'{spec}': give a Python callable as module:function; an HTTP endpoint cannot be called with these arguments")
    return load_pipeline(spec)


def pareto_front(points: Sequence[SweepPoint]) -> set[str]:
    """The names of the points no other point dominates on quality (higher), latency and
    cost (lower); a dimension missing from every point is left out, a point missing a
    dimension others have is dominated on it."""
    dims = [d for d in ("latency_ms", "cost_usd") if any(getattr(p, d) is not None for p in points)]

    def values(p: SweepPoint) -> list[float]:
        quality = p.quality if p.quality is not None else float("-inf")
        return [-quality, *(getattr(p, d) if getattr(p, d) is not None else float("inf") for d in dims)]

    def dominates(a: SweepPoint, b: SweepPoint) -> bool:
        va, vb = values(a), values(b)
        return all(x <= y for x, y in zip(va, vb, strict=True)) and any(x < y for x, y in zip(va, vb, strict=True))

    return {p.name for p in points if p.quality is not None and not any(dominates(o, p) for o in points if o is not p)}


def _mean(values: Iterable[Any]) -> float | None:
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return sum(numbers) / len(numbers) if numbers else None


def _point(pipeline: ConfiguredPipeline, result: Result, quality_metric: str, errors: int, folder: str | None) -> SweepPoint:
    answered = [s for s in result.samples if "pipeline_error" not in s.sample.metadata]
    return SweepPoint(
        pipeline.name,
        pipeline.config,
        result,
        result.aggregates[quality_metric]["mean"],
        _mean(s.sample.metadata.get("latency_ms") for s in answered),
        _mean(s.sample.metadata.get("cost_usd") for s in answered),
        errors,
        folder,
    )


def _check_names(names: list[str]) -> None:
    """A usage error when two configurations have the same name (``k=1`` for both ``1`` and
    ``"1"``): the comparisons with the best and the report tell configurations by name."""
    first: dict[str, int] = {}
    for number, name in enumerate(names, 1):
        if name in first:
            raise ValueError(f"configurations {first[name]} and {number} are both named {name!r}: give each configuration distinct values")
        first[name] = number


def _versus_best(points: list[SweepPoint], best: SweepPoint, quality_metric: str, alpha: float) -> None:
    """Compare every point with the best on the quality metric; Holm across the comparisons."""
    others = [p for p in points if p is not best]
    compared = [compare_results(best.result, p.result, metrics=[quality_metric], alpha=alpha).metric(quality_metric) for p in others]
    tested = [(p.name, c.p_permutation) for p, c in zip(others, compared, strict=True) if c.p_permutation is not None]
    adjusted = dict(zip((name for name, _ in tested), holm([p for _, p in tested]), strict=True))
    for point, c in zip(others, compared, strict=True):
        p_holm = adjusted.get(point.name)
        worse = p_holm is not None and p_holm < alpha and (c.improvement() or 0) < 0
        verdict = NOT_COMPARED if point.quality is None else WORSE if worse else NOT_WORSE
        point.versus_best = {
            "n_pairs": c.n_pairs,
            "mean_diff": c.mean_diff,
            "ci_low": c.ci_low,
            "ci_high": c.ci_high,
            "p_permutation": c.p_permutation,
            "p_holm": p_holm,
            "verdict": verdict,
        }


async def arun_sweep(
    pipeline: Callable[..., Any],
    configs: Sequence[Mapping[str, Any]],
    testset: Any,
    metrics: Iterable[str | Metric],
    *,
    quality: str | None = None,
    judges: Judges | None = None,
    pipeline_concurrency: int = DEFAULT_PIPELINE_CONCURRENCY,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    out_dir: str | Path | None = None,
    alpha: float = 0.05,
    executor: RemoteExecutor | None = None,
) -> Sweep:
    """Run ``pipeline`` with each configuration over ``testset``, score all, and find the
    Pareto front and the configurations significantly worse than the best (module docstring).

    Args:
        pipeline: ``pipeline(config, sample) -> (contexts, answer)`` or a dict (as for
            :func:`ragmeter.run.pipelines.run_pipeline`, ``latency_ms`` and ``cost_usd`` included).
        configs: The configurations (see :func:`grid_configs`); at least two.
        testset: Anything :func:`ragmeter.load_dataset` accepts, or a :class:`Dataset`.
        metrics: Metric names or objects, the same for every configuration.
        quality: The metric that measures quality (default: the first of ``metrics``).
        judges: Models for the metrics; an LLM judge is built (and closed) when needed.
        pipeline_concurrency: Questions in flight per configuration.
        concurrency: (sample, metric) pairs scored at once.
        timeout: Seconds a pipeline may take per question.
        out_dir: With it, each configuration's run directory goes to ``out_dir/<name>`` (unsafe
            characters replaced; see :attr:`SweepPoint.folder`) and
            the sweep to ``out_dir/sweep.json`` and ``out_dir/sweep.md``.
        alpha: Family-wise significance level (Holm across the comparisons with the best).
        executor: Where each configuration's pairs are scored, e.g. a
            :class:`~ragmeter.run.ray_executor.RayExecutor` (inside its ``hold()`` the cluster
            starts once for the whole sweep); ``None``: in this process. The pipeline itself
            always runs in this process.

    Raises:
        InputError: The test set has no usable sample.
        ValueError: Fewer than two configurations, a bad option, or ``quality`` not among the metrics.
    """
    chosen = resolve_metrics(metrics)
    quality_metric = _checked_options(chosen, quality, configs, alpha)
    pipelines = [ConfiguredPipeline(lambda c: functools.partial(pipeline, c), config) for config in configs]
    _check_names([configured.name for configured in pipelines])
    dataset = _as_dataset(testset)
    judges = judges or Judges()
    owns_llm = judges.llm is None and any(m.needs == Needs.LLM for m in chosen)
    if owns_llm:
        judges.llm = default_llm_judge()
    root = Path(out_dir) if out_dir is not None else None
    folders = distinct_folders([configured.name for configured in pipelines])
    points = []
    try:
        for configured, folder_name in zip(pipelines, folders, strict=True):
            run = await run_pipeline(
                configured, dataset, name=configured.name, concurrency=pipeline_concurrency, timeout=timeout, with_sample=True
            )
            answered = [s for s in run.dataset if s.key not in run.errors]
            folder = root / folder_name if root is not None else None
            arm = await _score_arm(
                configured, run, answered, folder, chosen, judges, [s.key for s in dataset], concurrency, False, executor
            )
            points.append(_point(configured, arm.result, quality_metric, len(run.errors), folder_name if folder else None))
    finally:
        if owns_llm and judges.llm is not None:
            await judges.llm.aclose()
            judges.llm = None
    return _finish(points, quality_metric, alpha, root, len(dataset))


def _checked_options(chosen: list[Metric], quality: str | None, configs: Sequence[Mapping[str, Any]], alpha: float) -> str:
    """The quality metric's id, once the options are checked (see :func:`arun_sweep`)."""
    quality_metric = quality or (chosen[0].id if chosen else "")
    if quality_metric not in [m.id for m in chosen]:
        raise ValueError(f"quality metric {quality_metric!r} is not among the metrics ({', '.join(m.id for m in chosen) or 'none'})")
    if len(configs) < 2:
        raise ValueError("a sweep needs at least two configurations")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    return quality_metric


def _finish(points: list[SweepPoint], quality_metric: str, alpha: float, root: Path | None, n_samples: int) -> Sweep:
    front = pareto_front(points)
    for point in points:
        point.pareto = point.name in front
    scored = [p for p in points if p.quality is not None]
    best = max(scored, key=lambda p: p.quality or 0.0) if scored else None
    if best is not None:
        _versus_best(points, best, quality_metric, alpha)
    sweep = Sweep(quality_metric, points, best.name if best else None, alpha, {"n_samples": n_samples, "correction": "holm"})
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        document = sweep.to_dict()
        write_json(root / SWEEP_FILE, document)
        write_sweep_report(document, root)
    return sweep


def run_sweep(
    pipeline: Callable[..., Any], configs: Sequence[Mapping[str, Any]], testset: Any, metrics: Iterable[str | Metric], **options: Any
) -> Sweep:
    """Blocking :func:`arun_sweep`."""
    return run_sync(arun_sweep(pipeline, configs, testset, metrics, **options))
