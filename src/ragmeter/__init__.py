"""ragmeter: evaluate retrieval-augmented generation systems.

The public API is what this module exports; everything else may change between releases.
"""

__version__ = "0.1.0"

from ragmeter.data import Dataset, InputError, InputIssue, load_dataset
from ragmeter.data.schema import Sample
from ragmeter.decide.experiment import run_experiment
from ragmeter.judges import Judges
from ragmeter.metrics import Metric, Needs, Score, create_metric, metric_classes
from ragmeter.observe import span, trace
from ragmeter.results import Result, SampleResult
from ragmeter.run.engine import Evaluator, evaluate
from ragmeter.run.pipelines import pipeline_from_config

__all__ = [
    "Dataset",
    "Evaluator",
    "InputError",
    "InputIssue",
    "Judges",
    "Metric",
    "Needs",
    "Result",
    "Sample",
    "SampleResult",
    "Score",
    "create_metric",
    "evaluate",
    "load_dataset",
    "metric_classes",
    "pipeline_from_config",
    "run_experiment",
    "span",
    "trace",
]
