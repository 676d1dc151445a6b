"""The evaluation engine: runs metrics over a dataset, concurrently, safely, resumably.

Each (sample, metric) pair is scored in isolation: an exception becomes an unscored
entry that names the error, never a crash and never a silent NaN. With an output
directory, each finished pair is journalled at once, and a re-run of the same command
after a kill recomputes only the pairs that are missing (or that failed).
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter import __version__
from ragmeter.data import Dataset, InputError, InputIssue, as_dataset
from ragmeter.judges import Judges, LLMJudge
from ragmeter.judges.config import JudgeConfig
from ragmeter.metrics.base import FAMILIES, Metric, Needs
from ragmeter.metrics.registry import create_metric, metric_classes
from ragmeter.results import Result
from ragmeter.results.rundir import RESULTS_FILE
from ragmeter.run.executor import LocalExecutor, PairWork, RemoteExecutor
from ragmeter.run.journal import JOURNAL_FILE, fold_shards, shard_paths
from ragmeter.run.outdir import locked
from ragmeter.run.recorder import Recorder
from ragmeter.run.resume import Reusable, find_reusable
from ragmeter.run.scoring import score_pair
from ragmeter.run.survey import Survey, survey
from ragmeter.run.sync import run_sync

DEFAULT_CONCURRENCY = 32
#: LLM metrics that automatic selection adds when a judge is available; the others
#: (context_relevance, noise_sensitivity, rubric_score...) are run by name.
CORE_LLM_METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall", "answer_correctness")


def resolve_metrics(metrics: Iterable[str | Metric]) -> list[Metric]:
    """Metric objects from names (``"ndcg@5"``) or objects; each id may appear once."""
    resolved = [m if isinstance(m, Metric) else create_metric(m) for m in metrics]
    seen: set[str] = set()
    for metric in resolved:
        if metric.id in seen:
            raise ValueError(f"metric '{metric.id}' is asked for twice")
        seen.add(metric.id)
    return resolved


def applicable_metrics(dataset: Dataset, llm: bool = False) -> list[Metric]:
    """Every model-free metric, and with ``llm`` the core LLM metrics
    (:data:`CORE_LLM_METRICS`), whose required fields at least one sample of ``dataset``
    has; default settings, in family order."""
    chosen = []
    for cls in metric_classes().values():
        wanted = cls.name in CORE_LLM_METRICS if cls.needs == Needs.LLM else True
        if not wanted or (cls.needs == Needs.LLM and not llm):
            continue
        metric = cls()
        if any(not metric.missing_fields(s.sample) for s in dataset):
            chosen.append(metric)
    family_order = list(FAMILIES)
    return sorted(chosen, key=lambda m: family_order.index(m.family))


def default_llm_judge() -> LLMJudge:
    """The judge LLM metrics use when none is given: the one the ``RAGMETER_JUDGE_*``
    environment describes (the embedded local model unless an endpoint is configured),
    behind the disk cache. The caller closes it (``aclose``).

    Raises:
        JudgeError: That judge cannot be built (not installed, no model name...).
    """
    return JudgeConfig.from_env().build()


class Evaluator:
    """Scores datasets with a fixed set of metrics and judges.

    Args:
        metrics: Metric objects or names (``"token_f1"``, ``"ndcg@5"``).
        judges: The models metrics may use. Default: the packaged embedder, and for LLM
            metrics the judge that :class:`JudgeConfig` builds from the environment (the
            embedded local model unless an endpoint is configured).
        concurrency: Most (sample, metric) pairs scored at the same time.
        out_dir: Directory for the journal (and, through the CLI, the reports). Without
            it nothing is journalled and a run cannot resume.
        resume: Reuse valid journalled scores from ``out_dir``; False recomputes all.
        progress: Show a progress bar; ``None`` shows it when stderr is a terminal.
        strict: Raise :class:`InputError` when a sample lacks a field a metric requires,
            instead of leaving that pair unscored.
        executor: Where the pairs are scored: ``None`` in this process (at most
            ``concurrency`` at once); or a remote executor such as
            :class:`~ragmeter.run.ray_executor.RayExecutor`, whose workers build their own judges.
    """

    def __init__(
        self,
        metrics: Iterable[str | Metric],
        *,
        judges: Judges | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        out_dir: str | Path | None = None,
        resume: bool = True,
        progress: bool | None = None,
        strict: bool = False,
        executor: RemoteExecutor | None = None,
    ):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.metrics = resolve_metrics(metrics)
        if not self.metrics:
            raise ValueError("no metrics to run")
        self.judges = judges or Judges()
        self.concurrency = concurrency
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.resume = resume
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.strict = strict
        self.executor = executor

    def run(self, dataset: Dataset) -> Result:
        """Score ``dataset`` and return the result (blocking)."""
        return run_sync(self.arun(dataset))

    def _ensure_llm_judge(self) -> bool:
        """Build the default LLM judge if a metric needs one and none was given; return
        True when the engine built it (and so must close it)."""
        if self.judges.llm is not None or not any(m.needs == Needs.LLM for m in self.metrics):
            return False
        self.judges.llm = default_llm_judge()
        return True

    async def arun(self, dataset: Dataset) -> Result:
        """Score ``dataset`` and return the result.

        Raises:
            OutputDirError: ``out_dir`` cannot be used, or another run holds it.
        """
        if self.out_dir is None:
            return await self._arun(dataset)
        with locked(self.out_dir):
            return await self._arun(dataset)

    async def _arun(self, dataset: Dataset) -> Result:
        started = datetime.now(timezone.utc)
        clock = time.perf_counter()
        known = survey(dataset, self.metrics)
        if self.strict and known.issues:
            raise InputError(known.issues)
        owns_llm = self._ensure_llm_judge()
        judge_settings = None
        recorder = self._recorder(dataset, known)
        rows, cols = self._plan(recorder)
        execution: dict[str, Any] = {"executor": "local"}
        try:
            pairs = zip(rows.tolist(), cols.tolist(), strict=True)
            if self.executor is None:
                await LocalExecutor(self.concurrency, self.progress).run(
                    pairs, len(rows), lambda pair: self._score_pair(dataset, recorder, *pair)
                )
            else:
                work = PairWork(
                    self.metrics, recorder.configs, known.keys, known.fingerprints, list(pairs),
                    {row: dataset.samples[row].sample for row in set(rows.tolist())}, self.out_dir,
                )  # fmt: skip
                execution = await self.executor.score(work, recorder.done)
        finally:
            recorder.close()
            # Described after the run: what the judge found out (the verdict mode it chose, warnings) belongs in run.json.
            # Only a judge that judged something is the run's judge: a model-free run names none.
            judged = any(m.needs == Needs.LLM for m in self.metrics)
            judge_settings = self.judges.llm.describe() if judged and self.judges.llm is not None else None
            if owns_llm and self.judges.llm is not None:
                await self.judges.llm.aclose()
                self.judges.llm = None
        embedder = self.judges.embedder
        run = {
            "ragmeter_version": __version__,
            "python": platform.python_version(),
            "started_at": started.isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - clock, 3),
            "sources": sorted({s.source for s in dataset}),
            "n_samples": len(dataset),
            "concurrency": self.concurrency,
            "pairs_computed": len(rows),
            "pairs_resumed": recorder.reuse.count,
            "embedder": {
                "model": embedder.model_name,
                "texts_encoded": embedder.texts_encoded,
                "batches": embedder.batches,
                "seconds": round(embedder.seconds, 3),
            },
            "judge": judge_settings,
            "execution": execution,
        }
        return recorder.finish([m.info() for m in self.metrics], [*dataset.issues, *known.issues], run)

    def _pair_configs(self) -> list[str]:
        """Each metric's reuse key: its settings and, for judged metrics, the judge's
        identity (another model or endpoint never reuses this one's verdicts)."""
        judge = json.dumps(self.judges.llm.identity(), sort_keys=True, default=str) if self.judges.llm is not None else ""
        configs = []
        for metric in self.metrics:
            extra = judge if metric.needs == Needs.LLM else self.judges.embedder.model_name if metric.needs == Needs.EMBEDDINGS else ""
            configs.append(hashlib.sha256(f"{metric.config_hash()}|{extra}".encode()).hexdigest()[:12] if extra else metric.config_hash())
        return configs

    def _recorder(self, dataset: Dataset, known: Survey) -> Recorder:
        configs = self._pair_configs()
        ids = [m.id for m in self.metrics]
        if self.out_dir is not None and not self.resume:
            _start_afresh(self.out_dir)
        if self.out_dir is not None and self.resume:
            fold_shards(self.out_dir)  # a distributed run's shards, left by a kill
            bounded = [m.unit is None for m in self.metrics]
            reuse = find_reusable(self.out_dir, known.keys, known.fingerprints, configs, ids, bounded)
        else:
            reuse = Reusable.nothing(len(known.keys), ids)
        return Recorder(dataset, self.metrics, known, configs, reuse, self.out_dir)

    def _plan(self, recorder: Recorder) -> tuple[np.ndarray, np.ndarray]:
        """The (row, column) of each pair to compute, sample by sample; the others are
        decided now (a missing field) or reused (see :mod:`ragmeter.run.resume`)."""
        reuse = recorder.reuse
        todo = ~recorder.survey.missing & ~reuse.from_results & (reuse.journal_offsets < 0)
        for row, pairs in enumerate(todo.sum(axis=1).tolist()):
            recorder.expect(row, pairs)
        rows, cols = np.nonzero(todo)
        return rows, cols

    async def _score_pair(self, dataset: Dataset, recorder: Recorder, row: int, col: int) -> None:
        metric = self.metrics[col]
        score, seconds, usage = await score_pair(metric, dataset.samples[row].sample, self.judges)
        recorder.done(row, metric.id, score, seconds, usage)


def _start_afresh(directory: Path) -> None:
    """``--fresh``: nothing an earlier run left in ``directory`` is reused, even after a kill."""
    journal = directory / JOURNAL_FILE
    if journal.exists() or journal.is_symlink():
        journal.unlink()
    results = directory / RESULTS_FILE
    if results.exists() or results.is_symlink():
        results.unlink()
    for shard in shard_paths(directory):
        shard.unlink()


def evaluate(
    data: Any,
    metrics: Iterable[str | Metric] | None = None,
    *,
    judges: Judges | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    out_dir: str | Path | None = None,
    resume: bool = True,
    progress: bool | None = None,
    strict: bool = False,
) -> Result:
    """Evaluate a RAG system's samples.

    Args:
        data: A :class:`Dataset`, a path or list of paths, a DataFrame, or a list of dicts
            or Samples.
        metrics: Metric names (``"token_f1"``, ``"ndcg@5"``) or objects. ``None`` runs
            every model-free metric whose required fields the data has.
        judges: The models metrics may use; default: the packaged embedder.
        concurrency: Most (sample, metric) pairs scored at the same time.
        out_dir: Directory for the resumable journal; see :class:`Evaluator`.
        resume: Reuse valid journalled scores from ``out_dir``.
        progress: Show a progress bar; ``None`` shows it on a terminal.
        strict: Raise :class:`InputError` on any bad row or missing required field.

    Raises:
        InputError: No usable sample, or (strict) any input issue.

    Returns:
        The :class:`Result`: per-sample scores with reasons, aggregates with intervals.
    """
    dataset = as_dataset(data, strict=strict)
    if strict and dataset.issues:
        raise InputError(dataset.issues)
    if not dataset.samples:
        raise InputError(dataset.issues or [InputIssue("<data>", "all", None, "no samples to evaluate")])
    chosen: list[str | Metric]
    if metrics is not None:
        chosen = list(metrics)
        if not chosen:
            raise ValueError(
                "metrics is empty: name the metrics to run, or pass metrics=None for every model-free metric the data has fields for"
            )
    else:
        chosen = list(applicable_metrics(dataset))
        if not chosen:
            raise ValueError("no metric applies: no sample has the fields any model-free metric requires")
    evaluator = Evaluator(chosen, judges=judges, concurrency=concurrency, out_dir=out_dir, resume=resume, progress=progress, strict=strict)
    return evaluator.run(dataset)
