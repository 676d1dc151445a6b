"""One pass over a dataset before a run: what the engine and the recorder need to know of
each sample, kept compact so that the samples themselves can stay on disk."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragmeter.data import Dataset, InputIssue
from ragmeter.metrics.base import Metric
from ragmeter.results.table import QUESTION_CHARS, answerable_of


@dataclass
class Survey:
    """What a run knows of its samples without holding them.

    Attributes:
        keys: Each sample's key, in dataset order.
        fingerprints: Each sample's content hash (a changed sample is scored again).
        questions: Each sample's question, shortened (for lists in reports).
        answerable: Each sample's ``metadata.answerable`` (``None`` when absent).
        missing: Per (sample, metric): the sample lacks a field the metric requires, or gives
            one it cannot use (:meth:`~ragmeter.metrics.base.Metric.unusable_fields`).
        issues: One input issue per sample and such field, saying why and naming the metrics that need it.
    """

    keys: list[str]
    fingerprints: list[str]
    questions: list[str]
    answerable: list[bool | None]
    missing: np.ndarray
    issues: list[InputIssue]


def survey(dataset: Dataset, metrics: Sequence[Metric]) -> Survey:
    """Read every sample of ``dataset`` once and note what the run needs (see :class:`Survey`)."""
    n = len(dataset)
    found = Survey([], [], [], [], np.zeros((n, len(metrics)), dtype=bool), [])
    for row, loaded in enumerate(dataset):
        sample = loaded.sample
        found.keys.append(loaded.key)
        found.fingerprints.append(sample.fingerprint())
        found.questions.append((sample.user_input or "")[:QUESTION_CHARS])
        found.answerable.append(answerable_of(sample.metadata))
        wanted: dict[tuple[str, str], list[str]] = defaultdict(list)
        for col, metric in enumerate(metrics):
            unusable = metric.unusable_fields(sample)
            found.missing[row, col] = bool(unusable)
            for name, why in unusable.items():
                wanted[(name, why)].append(metric.id)
        for (name, why), metric_ids in wanted.items():
            found.issues.append(
                InputIssue(
                    loaded.source,
                    loaded.location,
                    name,
                    f"{why}; required by {', '.join(metric_ids)} (those metrics leave this sample unscored)",
                    skipped=False,
                )
            )
    return found
