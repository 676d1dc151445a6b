"""What the engine does with each finished (sample, metric) pair, so that memory stays flat
and nothing computed is lost.

Each pair is journalled as it finishes and kept in the run's :class:`ScoreTable`; when the
last pair of a sample is done, the sample's result (its text, scores, explanations and
details) is put together and, for a run with an output directory, written to a spool file
at once: only samples still in progress are held in memory. When the run ends,
``results.jsonl`` is written in dataset order from the spool, then ``run.json`` and
``input_issues.jsonl``; the journal, whose every record ``results.jsonl`` now holds, is
removed. Without an output directory the results stay in memory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from ragmeter.data import Dataset, InputIssue
from ragmeter.data.files import atomic_writer, json_line, write_json, write_json_lines
from ragmeter.data.schema import Sample
from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import MISSING, Metric, Score
from ragmeter.results import Result, SampleResult
from ragmeter.results.rundir import ISSUES_FILE, RESULTS_FILE, RUN_FILE, StoredSamples
from ragmeter.results.table import ScoreTable
from ragmeter.run.journal import JOURNAL_FILE, Journal, make_record
from ragmeter.run.resume import Reusable
from ragmeter.run.survey import Survey

SPOOL_FILE = ".results.partial"


class Recorder:
    """Receives every finished pair of a run (see the module docstring).

    Args:
        dataset: The samples of the run.
        metrics: The run's metrics, in order.
        survey: What the run knows of each sample (keys, fingerprints, missing fields...).
        configs: Each metric's settings hash (the reuse key of its pairs).
        reuse: Scores an earlier run already computed (see :mod:`ragmeter.run.resume`).
        out_dir: The output directory, or ``None`` to keep the results in memory.
    """

    def __init__(
        self, dataset: Dataset, metrics: Sequence[Metric], survey: Survey, configs: Sequence[str], reuse: Reusable, out_dir: Path | None
    ):
        self.dataset, self.metrics, self.survey = dataset, list(metrics), survey
        self.metric_ids = [m.id for m in self.metrics]
        self.configs, self.reuse, self.out_dir = list(configs), reuse, out_dir
        self._columns = {metric_id: j for j, metric_id in enumerate(self.metric_ids)}
        n = len(survey.keys)
        self.table = ScoreTable(survey.keys, self.metric_ids, survey.questions, survey.answerable)
        self.remaining = np.zeros(n, dtype=np.int32)
        self._fresh: dict[int, dict[str, tuple[Score, float, Usage]]] = {}
        self._kept: list[SampleResult | None] = [None] * n if out_dir is None else []
        self._offsets = np.full(n, -1, dtype=np.int64)
        if out_dir is not None:
            for name in (JOURNAL_FILE, SPOOL_FILE):
                if (out_dir / name).is_symlink():  # planted: removed, never followed
                    (out_dir / name).unlink()
        self._journal = Journal(out_dir) if out_dir is not None else None
        self._spool: IO[str] | None = _open_spool(out_dir / SPOOL_FILE) if out_dir is not None else None
        self._spooled = 0

    def expect(self, row: int, pairs: int) -> None:
        """The sample at ``row`` has ``pairs`` pairs to compute; with none it is complete now."""
        self.remaining[row] = pairs
        if pairs == 0:
            self._complete(row)

    def done(self, row: int, metric_id: str, score: Score, seconds: float, usage: Usage, journalled: bool = False) -> None:
        """A computed pair: journalled at once (unless the worker that computed it already
        did, ``journalled``), and the sample completed when it was its last."""
        if self._journal is not None and not journalled:
            col = self._columns[metric_id]
            self._journal.append(
                make_record(self.survey.keys[row], self.survey.fingerprints[row], metric_id, self.configs[col], score, seconds, usage)
            )
        self._fresh.setdefault(row, {})[metric_id] = (score, seconds, usage)
        self.remaining[row] -= 1
        if self.remaining[row] == 0:
            self._complete(row)

    def _complete(self, row: int) -> None:
        loaded = self.dataset.samples[row]
        pairs = {**self._not_applicable(row, loaded.sample), **self.reuse.load(row), **self._fresh.pop(row, {})}
        ordered = [m for m in self.metric_ids if m in pairs]
        result = SampleResult(
            loaded.key,
            loaded.sample,
            loaded.source,
            loaded.location,
            scores={m: pairs[m][0] for m in ordered},
            seconds={m: pairs[m][1] for m in ordered},
            usage={m: pairs[m][2] for m in ordered},
            fingerprint=self.survey.fingerprints[row],
            configs={m: self.configs[self._columns[m]] for m in ordered},
        )
        self.table.add_scores(row, result)
        if self._spool is None:
            self._kept[row] = result
            return
        self._offsets[row] = self._spooled
        line = json_line(result.to_dict())
        self._spool.write(line)
        self._spooled += len(line.encode("utf-8"))

    def _not_applicable(self, row: int, sample: Sample) -> dict[str, tuple[Score, float, Usage]]:
        """The pairs decided without scoring: the sample lacks a field the metric requires, or
        gives one it cannot use (ids that do not pair with the contexts)."""
        pairs = {}
        for col in np.nonzero(self.survey.missing[row])[0]:
            metric = self.metrics[col]
            unusable = metric.unusable_fields(sample)
            missing = [name for name, why in unusable.items() if why == MISSING]
            reasons = [f"missing required field(s): {', '.join(missing)}"] if missing else []
            reasons += [f"{name}: {why}" for name, why in unusable.items() if why != MISSING]
            pairs[metric.id] = (Score.unscored("; ".join(reasons)), 0.0, Usage())
        return pairs

    def close(self) -> None:
        """Stop recording (the journal and spool are closed; nothing is lost)."""
        if self._journal is not None:
            self._journal.close()
        if self._spool is not None:
            self._spool.close()
            self._spool = None
        self.reuse.close()

    def finish(self, metrics: list[dict[str, Any]], issues: list[InputIssue], run: dict[str, Any]) -> Result:
        """The run's result; with an output directory, its data files written (see the module docstring)."""
        self.close()
        if self.out_dir is None:
            samples = [s for s in self._kept if s is not None]
            return Result(samples=samples, metrics=metrics, issues=issues, run=run, table=self.table)
        stored = self._write_results()
        write_json(self.out_dir / RUN_FILE, {"run": run, "metrics": metrics})
        write_json_lines(self.out_dir / ISSUES_FILE, (i.to_dict() for i in issues))
        if self._journal is not None and self._journal.path.exists():
            os.unlink(self._journal.path)  # results.jsonl now holds every record
        return Result(samples=stored, metrics=metrics, issues=issues, run=run, table=self.table)

    def _write_results(self) -> StoredSamples:
        """``results.jsonl`` in dataset order, copied line by line from the spool."""
        assert self.out_dir is not None
        spool, target = self.out_dir / SPOOL_FILE, self.out_dir / RESULTS_FILE
        offsets, written = [], 0
        with spool.open("rb") as source, atomic_writer(target) as out:
            for offset in self._offsets:
                source.seek(int(offset))
                line = source.readline().decode("utf-8")
                offsets.append(written)
                out.write(line)
                written += len(line.encode("utf-8"))
        os.unlink(spool)
        return StoredSamples(target, offsets)


def _open_spool(path: Path) -> IO[str]:
    """The spool, new and empty, never through a link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(path, flags, 0o644), "w", encoding="utf-8", newline="\n")
