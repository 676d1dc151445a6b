"""Samples: the data model, loading files and frames, input issues, and text utilities."""

from ragmeter.data.issues import InputError, InputIssue
from ragmeter.data.loading import Dataset, LoadedSample, as_dataset, load_dataset
from ragmeter.data.schema import Sample

__all__ = ["Dataset", "InputError", "InputIssue", "LoadedSample", "Sample", "as_dataset", "load_dataset"]
