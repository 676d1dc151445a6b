"""What a run would spend on its LLM judge, without calling a model (``eval --dry-run``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragmeter.data import Dataset
from ragmeter.judges import Judges
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.dry_run import estimated_local_seconds, stand_in
from ragmeter.judges.metering import PriceTable, Usage
from ragmeter.metrics import Metric
from ragmeter.run.engine import Evaluator


@dataclass(frozen=True)
class Estimate:
    """Estimated judge usage of a run.

    Attributes:
        per_metric: Usage per LLM metric id.
        total: The sum.
        local: The judge is the embedded local model (no money, but time).
        local_seconds: Rough seconds the local judge needs on 2 CPU cores.
        model: The judge's model name.
    """

    per_metric: dict[str, Usage]
    total: Usage
    local: bool
    local_seconds: float
    model: str


def estimate_usage(dataset: Dataset, metrics: Sequence[Metric], judges: Judges, settings: JudgeConfig, concurrency: int) -> Estimate:
    """Run ``metrics`` on ``dataset`` against a stand-in for ``judges.llm`` that counts the
    tokens of every prompt and prices them (see :mod:`ragmeter.judges.dry_run`)."""
    if judges.llm is None:
        raise ValueError("no LLM judge to estimate")
    dry = stand_in(judges.llm, settings.verdict_mode, PriceTable(settings.prices))
    evaluator = Evaluator(metrics, judges=Judges(embedder=judges.embedder, llm=dry), concurrency=concurrency, progress=False)
    result = evaluator.run(dataset)
    per_metric = {m.id: Usage.from_dict(result.aggregates[m.id]["usage"]["total"]) for m in metrics}
    total = Usage()
    for usage in per_metric.values():
        total.add(usage)
    local = judges.llm.backend == "local"
    return Estimate(per_metric, total, local, estimated_local_seconds(total), judges.llm.model)
