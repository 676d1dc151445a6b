"""The outcome of a run: every sample's scores, and aggregates per metric.

:meth:`Result.save` and :meth:`Result.load` write and read a run directory
(:mod:`ragmeter.results.rundir`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, TypedDict

from ragmeter.data import InputIssue
from ragmeter.data.files import write_json, write_json_lines
from ragmeter.results.records import SampleResult
from ragmeter.results.rundir import read_run, write_run
from ragmeter.results.stats import Description, describe
from ragmeter.results.table import ScoreTable

#: Distinct unscored reasons kept per metric in the aggregates.
MAX_REASONS = 10


class UnscoredReason(TypedDict):
    """One reason samples went unscored, how many, and whether it was an error."""

    reason: str
    count: int
    failed: bool


class Aggregate(Description):
    """A metric's aggregate over a run (``Result.aggregates[metric_id]``).

    ``mean`` ... ``p95`` and the 95% bootstrap interval of the mean (``ci_low``,
    ``ci_high``) are ``None`` without scored samples (the interval also with one);
    ``usage`` holds ``total`` (a :class:`Usage` as a dict) and ``per_sample`` means.
    """

    n_scored: int
    n_unscored: int
    n_failed: int
    unscored_reasons: list[UnscoredReason]
    usage: dict[str, Any]


class Result:
    """Scores of a run.

    Args:
        samples: Per-sample results, in dataset order: a list, or the samples of a run
            directory read from disk when asked for (:class:`~ragmeter.results.rundir.StoredSamples`).
        metrics: Description of each metric (see ``Metric.info``), in the order asked for.
        issues: Input problems found while loading and checking the data.
        run: Settings and bookkeeping of the run (time, versions, sources, counts).
        table: The scores in compact form, when the engine already built it (else it is
            built from ``samples`` on first use).
    """

    def __init__(
        self,
        samples: Sequence[SampleResult],
        metrics: list[dict[str, Any]],
        issues: list[InputIssue] | None = None,
        run: dict[str, Any] | None = None,
        *,
        table: ScoreTable | None = None,
    ):
        self.samples = samples
        self.metrics = metrics
        self.issues = list(issues or [])
        self.run = run if run is not None else {}
        self._table = table

    def __repr__(self) -> str:
        # Short on purpose: a Result can hold thousands of samples.
        return f"Result({len(self.samples)} samples, metrics: {', '.join(self.metric_ids)})"

    @property
    def metric_ids(self) -> list[str]:
        return [m["id"] for m in self.metrics]

    def metric(self, metric_id: str) -> dict[str, Any]:
        """The description of one metric."""
        for info in self.metrics:
            if info["id"] == metric_id:
                return info
        raise KeyError(f"no metric '{metric_id}' in this result; it has {', '.join(self.metric_ids)}")

    @property
    def table(self) -> ScoreTable:
        """Every score in compact arrays (see :class:`ScoreTable`); built once, on first use."""
        if self._table is None:
            self._table = ScoreTable.from_samples(self.samples, self.metric_ids)
        return self._table

    def values(self, metric_id: str) -> list[float]:
        """Scored values of one metric, in sample order (unscored samples left out)."""
        return self.table.scored_values(metric_id)

    @cached_property
    def aggregates(self) -> dict[str, Aggregate]:
        """Per metric: descriptive statistics with a 95% bootstrap interval of the mean,
        the numbers scored, unscored and failed, and the most common unscored reasons
        (``{"reason", "count", "failed"}``, most frequent first)."""
        aggregates: dict[str, Aggregate] = {}
        for metric_id in self.metric_ids:
            reasons = self.table.unscored_reasons(metric_id, MAX_REASONS)
            aggregates[metric_id] = {
                **describe(self.table.scored_values(metric_id)),
                **self.table.counts(metric_id),  # type: ignore[typeddict-item]
                "unscored_reasons": [{"reason": reason, "count": count, "failed": failed} for reason, failed, count in reasons],
                "usage": self._usage_of(metric_id),
            }
        return aggregates

    def _usage_of(self, metric_id: str) -> dict[str, Any]:
        """Total model usage of one metric, its mean per sample, and its wall time."""
        total = self.table.usage[metric_id]
        n = max(1, self.table.evaluated(metric_id))
        per_sample = {
            "calls": total.calls / n,
            "prompt_tokens": total.prompt_tokens / n,
            "completion_tokens": total.completion_tokens / n,
            "seconds": self.table.total_seconds(metric_id) / n,
        }
        return {"total": total.to_dict(), "per_sample": per_sample}

    def to_pandas(self) -> Any:
        """One row per sample: key, question, response, then each metric's value and, in
        ``<metric>.reason``, why it is missing when it is."""
        import pandas as pd

        rows = []
        for result in self.samples:
            row: dict[str, Any] = {
                "key": result.key,
                "user_input": result.sample.user_input,
                "response": result.sample.response,
            }
            for metric_id in self.metric_ids:
                score = result.scores.get(metric_id)
                row[metric_id] = score.value if score else None
                row[f"{metric_id}.reason"] = score.reason if score else "not evaluated"
            rows.append(row)
        return pd.DataFrame(rows)

    def to_jsonl(self, path: str | Path) -> None:
        """Write one JSON line per sample (sample, scores, reasons, details, seconds), atomically."""
        write_json_lines(path, (s.to_dict() for s in self.samples))

    def to_json(self, path: str | Path) -> None:
        """Write the whole result as one JSON document: run, metrics, aggregates, samples."""
        document = {
            "run": self.run,
            "metrics": [{**m, "aggregate": self.aggregates[m["id"]]} for m in self.metrics],
            "input_issues": [i.to_dict() for i in self.issues],
            "samples": [s.to_dict() for s in self.samples],
        }
        write_json(path, document)

    def save(self, directory: str | Path) -> None:
        """Write the run directory's data files: ``results.jsonl``, ``run.json`` and
        ``input_issues.jsonl`` (see :mod:`ragmeter.results.rundir`); ``results.jsonl`` is
        left as it is when the samples are read from it. Reports are written by
        :mod:`ragmeter.report`."""
        write_run(directory, self.samples, self.run, self.metrics, self.issues)

    @classmethod
    def load(cls, directory: str | Path) -> Result:
        """Read a run directory written by ``ragmeter eval`` (samples are read from disk
        when they are asked for).

        Raises:
            RunDirError: It is not a readable run directory (the message names the file and line).
        """
        samples, metrics, issues, run = read_run(directory)
        return cls(samples=samples, metrics=metrics, issues=issues, run=run)
