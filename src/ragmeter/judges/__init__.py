"""The models behind the metrics: an embedder and an LLM judge."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragmeter.judges.base import ContextTooLong, JudgeError, LLMJudge, Verdict
from ragmeter.judges.embeddings import BatchingEmbedder


@dataclass
class Judges:
    """The models a run's metrics may use.

    Attributes:
        embedder: Sentence embedder for the embedding metrics; the packaged multilingual
            USE model by default, loaded only when a metric first asks for it.
        llm: The LLM judge for LLM metrics; ``None`` until the engine sets the default
            (the embedded local model) or one is configured.
    """

    embedder: BatchingEmbedder = field(default_factory=BatchingEmbedder)
    llm: LLMJudge | None = None

    def require_llm(self) -> LLMJudge:
        """The LLM judge.

        Raises:
            JudgeError: None is configured.
        """
        if self.llm is None:
            raise JudgeError("no LLM judge is configured")
        return self.llm


__all__ = ["BatchingEmbedder", "ContextTooLong", "JudgeError", "Judges", "LLMJudge", "Verdict"]
