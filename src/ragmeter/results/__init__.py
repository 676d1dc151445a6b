"""The outcome of a run: per-sample scores, typed aggregates, statistics, run directories."""

from ragmeter.results.records import SampleResult
from ragmeter.results.result import Aggregate, Result
from ragmeter.results.rundir import RunDirError

__all__ = ["Aggregate", "Result", "RunDirError", "SampleResult"]
