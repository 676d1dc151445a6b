"""The outcome of a run: every sample's scores, and aggregates per metric.

:meth:`Result.save` and :meth:`Result.load` write and read a run directory
(:mod:`ragmeter.results.rundir`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypedDict

from ragmeter.data import InputIssue
from ragmeter.data.files import write_json, write_json_lines
from ragmeter.judges.metering import Usage
from ragmeter.results.records import SampleResult
from ragmeter.results.rundir import read_run, write_run
from ragmeter.results.stats import Description, describe

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


@dataclass(repr=False)
class Result:
    """Scores of a run.

    Attributes:
        samples: Per-sample results, in dataset order.
        metrics: Description of each metric (see ``Metric.info``), in the order asked for.
        issues: Input problems found while loading and checking the data.
        run: Settings and bookkeeping of the run (time, versions, sources, counts).
    """

    samples: list[SampleResult]
    metrics: list[dict[str, Any]]
    issues: list[InputIssue] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)

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

    def values(self, metric_id: str) -> list[float]:
        """Scored values of one metric, in sample order (unscored samples left out)."""
        found = (s.scores.get(metric_id) for s in self.samples)
        return [score.value for score in found if score is not None and score.value is not None]

    @cached_property
    def aggregates(self) -> dict[str, Aggregate]:
        """Per metric: descriptive statistics with a 95% bootstrap interval of the mean,
        the numbers scored, unscored and failed, and the most common unscored reasons
        (``{"reason", "count", "failed"}``, most frequent first)."""
        table: dict[str, Aggregate] = {}
        for metric_id in self.metric_ids:
            scores = [s.scores[metric_id] for s in self.samples if metric_id in s.scores]
            unscored = [s for s in scores if s.value is None]
            reasons = Counter((s.reason or "", s.failed) for s in unscored)
            table[metric_id] = {
                **describe([s.value for s in scores if s.value is not None]),
                "n_scored": len(scores) - len(unscored),
                "n_unscored": len(unscored),
                "n_failed": sum(1 for s in unscored if s.failed),
                "unscored_reasons": [
                    {"reason": reason, "count": count, "failed": failed} for (reason, failed), count in reasons.most_common(MAX_REASONS)
                ],
                "usage": self._usage_of(metric_id),
            }
        return table

    def _usage_of(self, metric_id: str) -> dict[str, Any]:
        """Total model usage of one metric, its mean per sample, and its wall time."""
        total = Usage()
        for sample in self.samples:
            if metric_id in sample.usage:
                total.add(sample.usage[metric_id])
        n = max(1, sum(1 for s in self.samples if metric_id in s.scores))
        per_sample = {
            "calls": total.calls / n,
            "prompt_tokens": total.prompt_tokens / n,
            "completion_tokens": total.completion_tokens / n,
            "seconds": sum(s.seconds.get(metric_id, 0.0) for s in self.samples) / n,
        }
        return {"total": total.to_dict(), "per_sample": per_sample}

    def to_pandas(self):
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
        ``input_issues.jsonl`` (see :mod:`ragmeter.results.rundir`). Reports are written by
        :mod:`ragmeter.report`."""
        write_run(directory, self.samples, self.run, self.metrics, self.issues)

    @classmethod
    def load(cls, directory: str | Path) -> Result:
        """Read a run directory written by ``ragmeter eval``.

        Raises:
            RunDirError: It is not a readable run directory (the message names the file and line).
        """
        samples, metrics, issues, run = read_run(directory)
        return cls(samples=samples, metrics=metrics, issues=issues, run=run)
