"""Metrics, one module per family. ``metric_classes()`` lists them; ``create_metric`` builds one."""

from ragmeter.metrics.base import FAMILIES, Metric, Needs, Score, create_metric, metric_classes, register

__all__ = ["FAMILIES", "Metric", "Needs", "Score", "create_metric", "metric_classes", "register"]
