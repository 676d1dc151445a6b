"""A run directory: the files ``ragmeter eval`` writes and every later command reads.

Data files (this module):

- ``results.jsonl``: one JSON line per sample: the sample, each metric's score with its
  explanation, unscored reason and details, seconds and model usage.
- ``run.json``: the run's settings and bookkeeping, and the description of each metric.
- ``input_issues.jsonl``: every input problem (file, line or row, field, message).

Reports (``summary.json``, ``report.md``, ``report.html``) are written by
:mod:`ragmeter.report`; the journal by :mod:`ragmeter.run.journal`. A directory written
before ``run.json`` existed is read from its ``summary.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from ragmeter.data import InputIssue
from ragmeter.data.files import read_json_lines, write_json, write_json_lines
from ragmeter.results.records import SampleResult

RESULTS_FILE = "results.jsonl"
RUN_FILE = "run.json"
ISSUES_FILE = "input_issues.jsonl"
#: Written by the report layer; read here only for directories older than run.json.
SUMMARY_FILE = "summary.json"

T = TypeVar("T")


class RunDirError(ValueError):
    """A directory that is not a readable ragmeter run; the message names the file (and line)."""


def write_run(
    directory: str | Path,
    samples: Iterable[SampleResult],
    run: dict[str, Any],
    metrics: list[dict[str, Any]],
    issues: Iterable[InputIssue],
) -> None:
    """Write ``results.jsonl``, ``run.json`` and ``input_issues.jsonl`` into ``directory``
    (created if missing), each atomically."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_json_lines(directory / RESULTS_FILE, (s.to_dict() for s in samples))
    write_json(directory / RUN_FILE, {"run": run, "metrics": metrics})
    write_json_lines(directory / ISSUES_FILE, (i.to_dict() for i in issues))


def read_run(directory: str | Path) -> tuple[list[SampleResult], list[dict[str, Any]], list[InputIssue], dict[str, Any]]:
    """The sample results, metric descriptions, input issues and run settings of a run
    directory.

    Raises:
        RunDirError: A file is missing, is not valid JSON, or holds records of the wrong
            shape; the message names the file and the line.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise RunDirError(f"{directory} is not a directory written by `ragmeter eval`")
    header = _read_header(directory)
    samples = _records(directory / RESULTS_FILE, SampleResult.from_dict, "sample result")
    issues_path = directory / ISSUES_FILE
    issues = _records(issues_path, lambda r: InputIssue(**r), "input issue") if issues_path.exists() else []
    metrics = [{k: v for k, v in m.items() if k != "aggregate"} for m in header["metrics"]]
    return samples, metrics, issues, header.get("run") or {}


def _read_header(directory: Path) -> dict[str, Any]:
    """The run settings and metric descriptions: ``run.json``, else ``summary.json``."""
    for name in (RUN_FILE, SUMMARY_FILE):
        path = directory / name
        if not path.exists():
            continue
        try:
            header = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise RunDirError(f"{path}: cannot read: {exc}") from None
        except json.JSONDecodeError as exc:
            raise RunDirError(f"{path}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
        if not isinstance(header, dict) or not isinstance(header.get("metrics"), list):
            raise RunDirError(f"{path}: expected an object with a 'metrics' list")
        if not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in header["metrics"]):
            raise RunDirError(f"{path}: every entry of 'metrics' needs an 'id'")
        return header
    raise RunDirError(f"{directory / RUN_FILE} not found: is {directory} a directory written by `ragmeter eval`?")


def _records(path: Path, build: Callable[[dict[str, Any]], T], what: str) -> list[T]:
    """``build`` applied to each object of a JSON-lines file; errors name file and line."""
    if not path.exists():
        raise RunDirError(f"{path} not found: is {path.parent} a directory written by `ragmeter eval`?")
    built = []
    try:
        for number, line in read_json_lines(path):
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise TypeError(f"expected a JSON object, got {type(record).__name__}")
                built.append(build(record))
            except json.JSONDecodeError as exc:
                raise RunDirError(f"{path}, line {number}: invalid JSON: {exc.msg} at column {exc.colno}") from None
            except (KeyError, TypeError, ValueError) as exc:
                raise RunDirError(f"{path}, line {number}: not a valid {what}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunDirError(f"{path}: cannot read: {exc}") from None
    return built
