"""ragmeter: evaluate retrieval-augmented generation systems.

The public API is what this module exports; everything else may change between releases.
"""

__version__ = "0.1.0"

from ragmeter.run.engine import Evaluator, evaluate  # noqa: E402
from ragmeter.decide.experiment import run_experiment  # noqa: E402
from ragmeter.run.pipelines import pipeline_from_config  # noqa: E402
from ragmeter.data import Dataset, InputError, InputIssue, load_dataset  # noqa: E402
from ragmeter.judges import Judges  # noqa: E402
from ragmeter.metrics import Metric, Needs, Score, create_metric, metric_classes  # noqa: E402
from ragmeter.results import Result, SampleResult  # noqa: E402
from ragmeter.data.schema import Sample  # noqa: E402

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
]
