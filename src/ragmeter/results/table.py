"""Every (sample, metric) outcome of a run in compact arrays: what aggregates, the diagnosis,
charts and report selections need, without holding any sample's text or details.

A run of 100,000 samples and 30 metrics keeps here about 60 MB; its full results (texts,
explanations, details) stay on disk in ``results.jsonl`` and are read back one sample at
a time when a report shows them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ragmeter.judges.metering import Usage
from ragmeter.metrics.base import Score

PENDING, SCORED, UNSCORED, FAILED = 0, 1, 2, 3
#: Length at which questions are kept (for the lists of samples in reports).
QUESTION_CHARS = 200


class ScoreTable:
    """The outcomes of a run, one row per sample and one column per metric.

    Args:
        keys: Each sample's key, in dataset order.
        metric_ids: The metrics, in the run's order.
        questions: Each sample's question (kept shortened), for lists in reports.
        answerable: Each sample's ``metadata.answerable`` (``None`` when absent).
    """

    def __init__(
        self,
        keys: Sequence[str],
        metric_ids: Sequence[str],
        questions: Sequence[str | None] | None = None,
        answerable: Sequence[bool | None] | None = None,
    ):
        n, m = len(keys), len(metric_ids)
        self.keys = list(keys)
        self.metric_ids = list(metric_ids)
        self.columns = {metric_id: j for j, metric_id in enumerate(self.metric_ids)}
        self.questions = [(q or "")[:QUESTION_CHARS] for q in questions] if questions is not None else [""] * n
        self.answerable: list[bool | None] = list(answerable) if answerable is not None else [None] * n
        self.values = np.full((n, m), np.nan)
        self.status = np.zeros((n, m), dtype=np.int8)
        self.reason = np.full((n, m), -1, dtype=np.int32)
        self.seconds = np.zeros((n, m), dtype=np.float32)
        self.usage: dict[str, Usage] = {metric_id: Usage() for metric_id in self.metric_ids}
        self._reasons: list[str] = []
        self._reason_ids: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def record(self, row: int, metric_id: str, score: Score, seconds: float, usage: Usage) -> None:
        """Keep the outcome of ``metric_id`` on the sample at ``row``."""
        col = self.columns[metric_id]
        if score.value is not None:
            self.values[row, col] = score.value
            self.status[row, col] = SCORED
        else:
            self.values[row, col] = np.nan
            self.status[row, col] = FAILED if score.failed else UNSCORED
            self.reason[row, col] = self._reason_id(score.reason or "")
        self.seconds[row, col] = seconds
        self.usage[metric_id].add(usage)

    def _reason_id(self, reason: str) -> int:
        found = self._reason_ids.get(reason)
        if found is None:
            found = self._reason_ids[reason] = len(self._reasons)
            self._reasons.append(reason)
        return found

    def column(self, metric_id: str) -> np.ndarray:
        """The values of one metric (NaN where unscored), in sample order."""
        return self.values[:, self.columns[metric_id]]

    def scored_values(self, metric_id: str) -> list[float]:
        """The scored values of one metric, in sample order."""
        col = self.columns[metric_id]
        return [float(v) for v in self.values[self.status[:, col] == SCORED, col]]

    def counts(self, metric_id: str) -> dict[str, int]:
        """How many samples the metric scored, left unscored, and failed on."""
        status = self.status[:, self.columns[metric_id]]
        failed = int((status == FAILED).sum())
        return {"n_scored": int((status == SCORED).sum()), "n_unscored": int((status == UNSCORED).sum()) + failed, "n_failed": failed}

    def unscored_reasons(self, metric_id: str, most: int) -> list[tuple[str, bool, int]]:
        """The commonest reasons the metric left samples unscored: (reason, failed, count)."""
        col = self.columns[metric_id]
        found = np.nonzero((self.status[:, col] == UNSCORED) | (self.status[:, col] == FAILED))[0]
        tally = Counter((int(self.reason[i, col]), bool(self.status[i, col] == FAILED)) for i in found)
        return [(self._reasons[r] if r >= 0 else "", failed, count) for (r, failed), count in tally.most_common(most)]

    def evaluated(self, metric_id: str) -> int:
        """Samples the metric was run on (scored or not)."""
        return int((self.status[:, self.columns[metric_id]] != PENDING).sum())

    def total_seconds(self, metric_id: str) -> float:
        return float(self.seconds[:, self.columns[metric_id]].sum(dtype=np.float64))

    @classmethod
    def from_samples(cls, samples: Iterable[Any], metric_ids: Sequence[str]) -> ScoreTable:
        """The table of sample results (objects with ``key``, ``sample``, ``scores``,
        ``seconds`` and ``usage``), read in one pass (a sequence read from disk is streamed)."""
        rows = samples if isinstance(samples, Sequence) else list(samples)
        table = cls([""] * len(rows), metric_ids)
        for i, sample_result in enumerate(rows):
            table.keys[i] = sample_result.key
            table.questions[i] = (sample_result.sample.user_input or "")[:QUESTION_CHARS]
            table.answerable[i] = answerable_of(sample_result.sample.metadata)
            table.add_scores(i, sample_result)
        return table

    def add_scores(self, row: int, sample_result: Any) -> None:
        """Record every score of one sample result at ``row`` (metrics not in the table are ignored)."""
        for metric_id, score in sample_result.scores.items():
            if metric_id in self.columns:
                self.record(row, metric_id, score, sample_result.seconds.get(metric_id, 0.0), sample_result.usage.get(metric_id, Usage()))


def answerable_of(metadata: dict[str, Any]) -> bool | None:
    """A sample's ``metadata.answerable`` when it is a boolean, else ``None``."""
    value = metadata.get("answerable")
    return value if isinstance(value, bool) else None
