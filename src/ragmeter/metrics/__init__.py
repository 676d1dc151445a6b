"""Metrics, one module per family. ``metric_classes()`` lists them; ``create_metric`` builds one.

Importing this package registers every built-in metric (each family module applies
``@register`` to its classes).
"""

from ragmeter.metrics import (  # noqa: F401  (register the built-in metrics)
    agent_goal,
    agents,
    checks,
    context,
    correctness,
    embedding,
    faithfulness,
    lexical,
    relevance,
    retrieval,
    robustness,
    rubric,
)
from ragmeter.metrics.base import FAMILIES, Metric, Needs, Score
from ragmeter.metrics.registry import create_metric, metric_classes, register

__all__ = ["FAMILIES", "Metric", "Needs", "Score", "create_metric", "metric_classes", "register"]
