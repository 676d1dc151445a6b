"""pytest plugin: assert RAG quality in ordinary tests.

Installed with ragmeter (entry point ``pytest11``), it registers the ``ragmeter`` marker and
the ``ragmeter_assert`` fixture; the helpers are imported from this module::

    import pytest
    from ragmeter.pytest_plugin import assert_scores, ragmeter_samples

    @pytest.mark.parametrize("sample", ragmeter_samples("tests/rag_cases.jsonl"))
    def test_answers(sample):
        assert_scores(sample, ["token_f1", "rougeL"], {"token_f1": 0.5, "rougeL": 0.4})

    @pytest.mark.ragmeter(thresholds={"token_f1": 0.5})
    @pytest.mark.parametrize("sample", ragmeter_samples("tests/rag_cases.jsonl"))
    def test_with_the_marker(sample, ragmeter_assert):
        ragmeter_assert(sample)

A metric that cannot score the sample fails the assertion with the reason: a missing value
never passes. Importing this module is cheap (pytest loads it in every session); ragmeter
itself is imported when a helper is first used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

MARKER = "ragmeter(metrics=None, thresholds=None, judges=None): settings for the ragmeter_assert fixture"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


def _as_sample(sample: Any):
    from ragmeter.data.schema import Sample

    if isinstance(sample, Sample):
        return sample
    if isinstance(sample, Mapping):
        return Sample.from_record(dict(sample))
    raise TypeError(f"sample must be a ragmeter.Sample or a dict of sample fields, got {type(sample).__name__}")


def assert_scores(
    sample: Any,
    metrics: Iterable[Any] | str | None,
    thresholds: Mapping[str, Any] | None = None,
    judges: Any = None,
) -> dict[str, Any]:
    """Score one sample and fail with a readable message unless every metric meets its
    threshold.

    Args:
        sample: A :class:`ragmeter.Sample` or a dict of sample fields.
        metrics: Metric names (``"token_f1"``, ``"ndcg@5"``) or metric objects, or one
            comma-separated string; ``None``: the metrics named in ``thresholds``.
        thresholds: Per metric id: a number (the minimum, for metrics where higher is
            better) or ``{"min": x}`` / ``{"max": x}`` (``max`` for metrics where lower is
            better, such as ``latency_ms``). Metrics without a threshold must still be
            scored.
        judges: The models LLM and embedding metrics use (:class:`ragmeter.Judges`);
            default: ragmeter's defaults.

    Returns:
        The :class:`ragmeter.Score` of each metric id, when every check passes.

    Raises:
        AssertionError: A metric is below (above) its threshold or could not score the
            sample; the message lists each failing metric with its value, the threshold and
            the metric's explanation, or the reason it is unscored.
        ValueError: Unknown metric names, an invalid threshold, or a threshold for a
            metric not asked for.
    """
    __tracebackhide__ = True
    from ragmeter.run.engine import evaluate

    resolved, rules = _metrics_and_rules(metrics, thresholds)
    loaded = _as_sample(sample)
    result = evaluate([loaded], metrics=resolved, judges=judges, progress=False)
    scores = result.samples[0].scores
    failures, passes = _checks(scores, {m.id: m.info() for m in resolved}, rules)
    if failures:
        raise AssertionError(_failure_message(loaded, len(resolved), failures, passes))
    return scores


def _metrics_and_rules(metrics: Iterable[Any] | str | None, thresholds: Mapping[str, Any] | None) -> tuple[list[Any], dict[str, Any]]:
    """The metrics to run and their threshold rules, checked (see :func:`assert_scores`)."""
    from ragmeter.decide.thresholds import parse_threshold
    from ragmeter.run.engine import resolve_metrics

    given = dict(thresholds or {})
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    resolved = resolve_metrics(list(metrics) if metrics is not None else list(given))
    if not resolved:
        raise ValueError("assert_scores needs at least one metric")
    infos = {m.id: m.info() for m in resolved}
    stray = [k for k in given if k not in infos]
    if stray:
        raise ValueError(f"threshold(s) for {', '.join(stray)}, which are not among the metrics {', '.join(infos)}")
    rules = {}
    for metric_id, spec in given.items():
        try:
            rules[metric_id] = parse_threshold(spec, infos[metric_id], allow_on=False)
        except ValueError as exc:
            raise ValueError(f"threshold for {metric_id}: {exc}") from None
    return resolved, rules


def _checks(scores: Mapping[str, Any], infos: Mapping[str, Any], rules: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """A line per failing metric (below its rule, or unscored) and a note per passing one."""
    from ragmeter.report.formatting import format_number

    failures, passes = [], []
    for metric_id, info in infos.items():
        score, unit, rule = scores.get(metric_id), info["unit"], rules.get(metric_id)
        wanted = f"{rule.bound} {format_number(rule.value, unit)}" if rule else "a score"
        if score is None or score.value is None:
            reason = score.reason if score is not None else "not evaluated"
            kind = "failed" if score is not None and score.failed else "unscored"
            failures.append(f"  {metric_id}: {kind} ({reason}); wanted {wanted}")
        elif rule is not None and not rule.holds(score.value):
            failures.append(f"  {metric_id} = {rule.versus(score.value, unit)}" + (f": {score.explanation}" if score.explanation else ""))
        else:
            passes.append(f"{metric_id} = {rule.versus(score.value, unit) if rule else format_number(score.value, unit)}")
    return failures, passes


def _failure_message(sample: Any, n_metrics: int, failures: list[str], passes: list[str]) -> str:
    """What a failed :func:`assert_scores` says: the sample (id, question), then a line per failing
    metric and one for the passing ones. Control characters and line breaks of the data (an id,
    a question, an explanation) are shown as escapes: pytest prints the message as it is."""
    from ragmeter.data.text import visible_controls

    question = " ".join((sample.user_input or "").split())
    if len(question) > 100:
        question = question[:99] + "…"
    label = f"sample '{sample.id}'" if sample.id is not None else "sample"
    header = f"ragmeter: {len(failures)} of {n_metrics} metric(s) failed for {label}" + (f' ("{question}")' if question else "")
    lines = [header + ":", *failures]
    if passes:
        lines.append("  passed: " + ", ".join(passes))
    return "\n".join(map(visible_controls, lines))


def ragmeter_samples(*paths: str | Path) -> list[Any]:
    """The samples of one or more dataset files as ``pytest.param``\\ s, for
    ``@pytest.mark.parametrize("sample", ragmeter_samples("data.jsonl"))``.

    Args:
        paths: Dataset files (``.jsonl``, ``.json``, ``.csv``, ``.parquet``).

    Returns:
        One ``pytest.param`` per sample; its test id is the sample's id, else the file's
        name and the line (``cases.jsonl:3``).

    Raises:
        ragmeter.InputError: A file is unreadable, has a bad row (the message names the
            file, line and field) or holds no sample: a test set never loses a case silently.
        ValueError: No path given.
    """
    from ragmeter.data import InputError, InputIssue, load_dataset

    if not paths:
        raise ValueError("ragmeter_samples needs at least one dataset file")
    dataset = load_dataset(*paths, strict=True)
    if not dataset.samples:
        raise InputError([InputIssue(", ".join(str(p) for p in paths), "file", None, "no sample to test")])
    return [pytest.param(loaded.sample, id=_test_id(loaded)) for loaded in dataset]


def _test_id(loaded: Any) -> str:
    if loaded.sample.id is not None:
        return loaded.sample.id
    return f"{Path(loaded.source).name}:{loaded.location.split()[-1]}"


#: The settings the ``ragmeter`` marker and the ``ragmeter_assert`` fixture take.
_SETTINGS = ("metrics", "thresholds", "judges")


@pytest.fixture
def ragmeter_assert(request: pytest.FixtureRequest):
    """:func:`assert_scores` with the settings of the test's ``@pytest.mark.ragmeter(...)``
    marker (keywords ``metrics``, ``thresholds``, ``judges``); the same keywords given to
    the call override them. An unknown keyword is an error, so a typo cannot switch a
    check off."""
    marker = request.node.get_closest_marker("ragmeter")
    settings: dict[str, Any] = {}
    if marker is not None:
        if marker.args:
            raise TypeError(f"@pytest.mark.ragmeter takes keywords only ({', '.join(_SETTINGS)}), got {marker.args!r}")
        settings = _settings(marker.kwargs, "@pytest.mark.ragmeter")

    def check(sample: Any, **overrides: Any) -> dict[str, Any]:
        __tracebackhide__ = True
        options = {**settings, **_settings(overrides, "ragmeter_assert")}
        return assert_scores(sample, options.get("metrics"), options.get("thresholds"), options.get("judges"))

    return check


def _settings(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(k for k in options if k not in _SETTINGS)
    if unknown:
        raise TypeError(f"{where}: unknown keyword(s) {', '.join(unknown)}; use {', '.join(_SETTINGS)}")
    return dict(options)
