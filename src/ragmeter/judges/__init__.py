"""The models behind the metrics: embedders (and, later, LLM judges)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragmeter.judges.embeddings import BatchingEmbedder


@dataclass
class Judges:
    """The models a run's metrics may use.

    Attributes:
        embedder: Sentence embedder for the embedding metrics; the packaged multilingual
            USE model by default, loaded only when a metric first asks for it.
    """

    embedder: BatchingEmbedder = field(default_factory=BatchingEmbedder)


__all__ = ["BatchingEmbedder", "Judges"]
