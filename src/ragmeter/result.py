"""The outcome of a run: every sample's scores, and aggregates per metric.

A run directory holds ``results.jsonl`` (one line per sample: the sample, its scores with
reasons and details, and the time each metric took) and ``summary.json`` (run settings,
metric descriptions and aggregates); :meth:`Result.load` reads them back.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ragmeter.io import InputIssue
from ragmeter.metering import Usage
from ragmeter.metrics.base import Score
from ragmeter.schema import Sample
from ragmeter.stats import describe

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
ISSUES_FILE = "input_issues.jsonl"
#: Distinct unscored reasons kept per metric in the aggregates.
MAX_REASONS = 10


@dataclass
class SampleResult:
    """One sample's scores.

    Attributes:
        key: The sample's key in the dataset (its id, or source and line).
        sample: The sample itself.
        source: File (or ``<DataFrame>``) it came from.
        location: Line or row in that source.
        scores: Score per metric id.
        seconds: Wall time per metric id spent scoring it (as first measured, for
            scores resumed from the journal).
        usage: Model calls, tokens and cost per metric id.
    """

    key: str
    sample: Sample
    source: str
    location: str
    scores: dict[str, Score] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    usage: dict[str, Usage] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "source": self.source,
            "location": self.location,
            "sample": self.sample.model_dump(exclude_none=True),
            "scores": {m: s.to_dict() for m, s in self.scores.items()},
            "seconds": self.seconds,
            "usage": {m: u.to_dict() for m, u in self.usage.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SampleResult":
        return cls(
            key=data["key"],
            sample=Sample.model_validate(data["sample"]),
            source=data.get("source", ""),
            location=data.get("location", ""),
            scores={m: Score.from_dict(s) for m, s in data.get("scores", {}).items()},
            seconds=data.get("seconds", {}),
            usage={m: Usage.from_dict(u) for m, u in data.get("usage", {}).items()},
        )


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
        return [s.scores[metric_id].value for s in self.samples if metric_id in s.scores and s.scores[metric_id].value is not None]

    @cached_property
    def aggregates(self) -> dict[str, dict[str, Any]]:
        """Per metric: descriptive statistics with a 95% bootstrap interval of the mean,
        the numbers scored, unscored and failed, and the most common unscored reasons
        (``{"reason", "count", "failed"}``, most frequent first)."""
        table: dict[str, dict[str, Any]] = {}
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
                    {"reason": reason, "count": count, "failed": failed}
                    for (reason, failed), count in reasons.most_common(MAX_REASONS)
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
        """Write one JSON line per sample (sample, scores, reasons, details, seconds)."""
        _write_atomically(path, "".join(json.dumps(s.to_dict(), ensure_ascii=False) + "\n" for s in self.samples))

    def to_json(self, path: str | Path) -> None:
        """Write the whole result as one JSON document: run, metrics, aggregates, samples."""
        document = {
            "run": self.run,
            "metrics": [{**m, "aggregate": self.aggregates[m["id"]]} for m in self.metrics],
            "input_issues": [i.to_dict() for i in self.issues],
            "samples": [s.to_dict() for s in self.samples],
        }
        _write_atomically(path, json.dumps(document, ensure_ascii=False, indent=1))

    def save(self, directory: str | Path) -> None:
        """Write ``results.jsonl`` and the input issues into ``directory``; reports
        (``summary.json``, ``report.md``, ``report.html``) are written by :mod:`ragmeter.report`."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.to_jsonl(directory / RESULTS_FILE)
        _write_atomically(
            directory / ISSUES_FILE, "".join(json.dumps(i.to_dict(), ensure_ascii=False) + "\n" for i in self.issues)
        )

    @classmethod
    def load(cls, directory: str | Path) -> "Result":
        """Read a run directory written by ``ragmeter eval``."""
        directory = Path(directory)
        summary_path, results_path = directory / SUMMARY_FILE, directory / RESULTS_FILE
        for path in (summary_path, results_path):
            if not path.exists():
                raise FileNotFoundError(f"{path} not found: is {directory} a ragmeter run directory?")
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        samples = [
            SampleResult.from_dict(json.loads(line))
            for line in results_path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        issues_path = directory / ISSUES_FILE
        issues = []
        if issues_path.exists():
            issues = [
                InputIssue(**json.loads(line))
                for line in issues_path.read_text(encoding="utf-8").splitlines()
                if line.strip()
            ]
        metrics = [{k: v for k, v in m.items() if k != "aggregate"} for m in summary["metrics"]]
        return cls(samples=samples, metrics=metrics, issues=issues, run=summary.get("run", {}))


def _write_atomically(path: str | Path, text: str) -> None:
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
