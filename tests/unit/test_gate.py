"""The quality gate: thresholds files, checks against a baseline, exit codes and JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data.schema import Sample
from ragmeter.decide.gate import FAIL, PASS, SKIPPED, run_gate
from ragmeter.decide.thresholds import GateInputError, Threshold, load_thresholds
from ragmeter.metrics.base import Score
from ragmeter.metrics.registry import create_metric
from ragmeter.report import write_reports
from ragmeter.results import Result, SampleResult

runner = CliRunner()


def make_run(columns: dict[str, Sequence[float | None]], prefix: str = "q") -> Result:
    """A run of real metrics: ``columns`` maps a metric name to one value per sample
    (None: unscored because the reference is missing); samples q0, q1, ... (``prefix``)."""
    metrics = [create_metric(name) for name in columns]
    n = len(next(iter(columns.values())))
    samples = []
    for i in range(n):
        scores = {}
        for metric, values in zip(metrics, columns.values(), strict=True):
            value = values[i]
            scores[metric.id] = Score.unscored("missing required field(s): reference") if value is None else Score(float(value))
        sample = Sample(id=f"{prefix}{i}", user_input=f"{prefix} question {i}?", response="an answer")
        samples.append(SampleResult(f"{prefix}{i}", sample, "cases.jsonl", f"line {i + 1}", scores))
    return Result(samples, [m.info() for m in metrics], run={"n_samples": n, "sources": ["cases.jsonl"]})


def save_run(directory: Path, columns: dict[str, Sequence[float | None]]) -> Path:
    """Write a run directory as ``ragmeter eval`` does."""
    result = make_run(columns)
    result.save(directory)
    write_reports(result, directory)
    return directory


def gate(*args: object):
    return runner.invoke(app, ["gate", *(str(a) for a in args)])


def row_of(output: str, metric: str, kind: str, rule: str = "") -> str:
    """The first line of the table row for one check (whose rule starts with ``rule``)."""
    rows = [line for line in output.splitlines() if f" {metric} " in line and f" {kind} " in line and f" {rule}" in line]
    assert rows, f"no {kind} row {rule!r} for {metric} in:\n{output}"
    return rows[0]


def save_result(directory: Path, result: Result) -> Path:
    """Write a run directory of an already built result, as ``ragmeter eval`` does."""
    result.save(directory)
    write_reports(result, directory)
    return directory


def base_scores(seed: int = 0, n: int = 200) -> np.ndarray:
    """Per-sample scores in [0, 1]: Beta difficulty plus noise."""
    rng = np.random.default_rng(seed)
    return np.clip(rng.beta(2, 2, n) + rng.normal(0, 0.05, n), 0, 1)


# Thresholds files ------------------------------------------------------------------------


def test_thresholds_file_gives_a_rule_per_metric(tmp_path):
    path = tmp_path / "thresholds.yaml"
    path.write_text(
        "token_f1: 0.6\n"
        "rougeL: {min: 0.5, on: ci_low}\n"
        "latency_ms:\n  max: 1500\n"
        "cost_usd: {max: 0.002, on: ci_high}\n"
        "exact_match: {min: 0.25, on: mean}\n",
        encoding="utf-8",
    )
    run = make_run({m: [0.5, 0.7] for m in ("token_f1", "rougeL", "exact_match")} | {"latency_ms": [900, 1100], "cost_usd": [0.001, 0.002]})
    assert load_thresholds(path, run) == [
        Threshold("token_f1", "min", 0.6, "mean"),
        Threshold("rougeL", "min", 0.5, "ci_low"),
        Threshold("latency_ms", "max", 1500.0, "mean"),
        Threshold("cost_usd", "max", 0.002, "ci_high"),
        Threshold("exact_match", "min", 0.25, "mean"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('token_f1: "0.6"\n', "key 'token_f1': expected a number or a mapping"),
        ("token_f1: {min: 0.6, on: ci_high}\n", "key 'token_f1': on must be mean or ci_low, got 'ci_high'"),
        ("token_f1: {max: 0.6}\n", "key 'token_f1': higher is better for this metric: use min, not max"),
        ("token_f1: {min: 60}\n", "key 'token_f1': token_f1 scores are in [0, 1]; got min 60"),
        ("token_f1: {min: 0.5, above: 0.1}\n", "key 'token_f1': unknown key(s) 'above'; use min and on"),
        ("token_f1: {min: 0.5, max: 0.9}\n", "key 'token_f1': give exactly one of min or max"),
        ("latency_ms: 1500\n", "key 'latency_ms': lower is better for this metric: write {max: 1500}"),
        (
            "faithfulness: 0.8\n",
            "key 'faithfulness': unknown metric: 'faithfulness' was not evaluated in this run; the run has token_f1, latency_ms",
        ),
        ("tokn_f1: 0.8\n", "key 'tokn_f1': unknown metric: 'tokn_f1' is not a ragmeter metric"),
        (
            "token_f1: 0.6\ntoken_f1: 0.9\n",
            "cannot read the thresholds file: line 2, column 1: key 'token_f1' is repeated (first on line 1)",
        ),
        ("token_f1: [0.6\n", "cannot read the thresholds file: line 2, column 1: expected ',' or ']'"),
        ("# nothing yet\n", "expected a mapping of metric id to threshold"),
    ],
)
def test_a_bad_thresholds_file_is_an_error_naming_file_and_key_and_exit_2(tmp_path, monkeypatch, text, expected):
    monkeypatch.chdir(tmp_path)
    Path("thresholds.yaml").write_text(text, encoding="utf-8")
    run = save_run(tmp_path / "run", {"token_f1": [0.5, 0.7, 0.6], "latency_ms": [900, 1000, 1100]})
    with pytest.raises(GateInputError) as caught:
        load_thresholds("thresholds.yaml", Result.load(run))
    assert str(caught.value).startswith("thresholds.yaml")
    assert expected in str(caught.value)
    outcome = gate("run", "--thresholds", "thresholds.yaml")
    assert outcome.exit_code == 2, outcome.output
    assert f"error: {caught.value}" in outcome.output
    assert "Quality gate" not in outcome.output  # no table for a gate that could not run


HUGE = "x" * 100_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"? {HUGE}\n: 0.5\n", "key 'xxxxxxxxxxxx...xxxxxxxxxxxxx': unknown metric:"),
        ('? "tok\\x1b]0;owned\\x07en_f1"\n: 0.5\n', "key 'tok\\x1b]0;owned\\x07en_f1': unknown metric:"),
        (f"token_f1:\n  min: 0.5\n  ? {HUGE}\n  : 1\n", "key 'token_f1': unknown key(s) 'xxxxxxxxxxxx...xxxxxxxxxxxxx'; use min"),
        (f"? {HUGE}\n: 0.5\n? {HUGE}\n: 0.6\n", "key 'xxxxxxxxxxxx...xxxxxxxxxxxxx' is repeated (first on line 1)"),
    ],
    ids=["huge key", "control characters", "huge key in a rule", "huge key twice"],
)
def test_a_thresholds_key_is_quoted_briefly_and_never_as_control_characters(tmp_path, monkeypatch, text, expected):
    """The key was quoted whole, twice: a 100,000-character key printed 200,000 characters (and
    a rule's unknown key, or a repeated one, in full)."""
    monkeypatch.chdir(tmp_path)
    Path("thresholds.yaml").write_text(text, encoding="utf-8")
    save_run(tmp_path / "run", {"token_f1": [0.5, 0.7, 0.6]})
    with pytest.raises(GateInputError) as caught:
        load_thresholds("thresholds.yaml", Result.load(tmp_path / "run"))
    message = str(caught.value)
    assert expected in message and len(message) < 250, message
    assert not any(ord(c) < 32 for c in message)
    outcome = gate("run", "--thresholds", "thresholds.yaml")
    assert outcome.exit_code == 2 and outcome.output == f"error: {message}\n"


def test_a_missing_thresholds_file_a_missing_run_or_nothing_to_check_exit_2(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_run(tmp_path / "run", {"token_f1": [0.5, 0.7]})
    missing_file = gate("run", "--thresholds", "nope.yaml")
    assert missing_file.exit_code == 2 and "nope.yaml: file not found" in missing_file.output
    missing_run = gate("gone", "--baseline", "run")
    assert missing_run.exit_code == 2 and "cannot read run directory gone" in missing_run.output
    nothing = gate("run")
    assert nothing.exit_code == 2 and "nothing to check" in nothing.output


# Thresholds on a run ---------------------------------------------------------------------


def test_a_threshold_on_ci_low_fails_when_the_mean_passes_but_the_lower_bound_does_not(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_run(tmp_path / "run", {"token_f1": [0.25, 1.0] * 15})  # mean 0.625, widely spread
    aggregate = Result.load("run").aggregates["token_f1"]
    assert aggregate["ci_low"] < 0.6 <= aggregate["mean"], aggregate  # the premise of the test
    Path("mean.yaml").write_text("token_f1: 0.6\n", encoding="utf-8")
    Path("low.yaml").write_text("token_f1: {min: 0.6, on: ci_low}\n", encoding="utf-8")
    on_mean = gate("run", "-t", "mean.yaml")
    assert on_mean.exit_code == 0, on_mean.output
    assert "pass" in row_of(on_mean.output, "token_f1", "threshold")
    on_low = gate("run", "-t", "low.yaml")
    assert on_low.exit_code == 1, on_low.output
    assert "FAIL" in row_of(on_low.output, "token_f1", "threshold")
    assert f"FAIL token_f1 (threshold): token_f1 ci_low {aggregate['ci_low']:.3f} < min 0.600" in on_low.output


def test_max_thresholds_hold_for_lower_is_better_measurements(tmp_path):
    run = make_run({"latency_ms": [900, 1000, 1400, 1300]})
    report_ok = run_gate_on(tmp_path, run, "latency_ms: {max: 1200}\n")
    assert [c.verdict for c in report_ok.checks] == [PASS]
    report_bad = run_gate_on(tmp_path, run, "latency_ms: {max: 1100}\n")
    assert [c.verdict for c in report_bad.checks] == [FAIL]
    assert report_bad.checks[0].message == "latency_ms mean 1,150 > max 1,100"


def test_a_metric_with_no_scored_sample_fails_its_threshold(tmp_path):
    run = make_run({"token_f1": [None, None, None], "rougeL": [0.9, 0.8, None]})
    report = run_gate_on(tmp_path, run, "token_f1: 0\nrougeL: 0.5\n")
    token_f1, rouge = report.checks
    assert token_f1.verdict == FAIL and "no scored sample" in token_f1.message
    assert rouge.verdict == PASS and "(1 sample(s) unscored)" in rouge.message
    assert report.exit_code == 1


def test_values_that_print_alike_are_shown_with_more_digits(tmp_path):
    run = make_run({"token_f1": [0.5995, 0.5995]})
    (check,) = run_gate_on(tmp_path, run, "token_f1: 0.6\n").checks
    assert check.verdict == FAIL
    assert check.message == "token_f1 mean 0.5995 < min 0.6"


def run_gate_on(tmp_path: Path, result: Result, thresholds: str):
    """``run_gate`` with a thresholds file on a run saved under ``tmp_path``."""
    result.save(tmp_path / "run")
    write_reports(result, tmp_path / "run")
    path = tmp_path / "thresholds.yaml"
    path.write_text(thresholds, encoding="utf-8")
    return run_gate(tmp_path / "run", thresholds=path)


# Against a baseline ----------------------------------------------------------------------


def test_a_planted_regression_exits_1_and_the_table_names_the_failing_metric(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(7)
    token_f1, rouge = base_scores(seed=1), base_scores(seed=2)
    save_run(tmp_path / "base", {"token_f1": token_f1, "rougeL": rouge})
    lowered = np.clip(token_f1 - 0.1 + rng.normal(0, 0.05, 200), 0, 1)
    rouge_again = np.clip(rouge + rng.normal(0, 0.05, 200), 0, 1)
    save_run(tmp_path / "candidate", {"token_f1": lowered, "rougeL": rouge_again})

    outcome = gate("candidate", "--baseline", "base", "--max-drop", "0.02")
    assert outcome.exit_code == 1, outcome.output
    assert "FAIL" in row_of(outcome.output, "token_f1", "baseline")
    assert "pass" in row_of(outcome.output, "rougeL", "baseline")
    drop = float(token_f1.mean() - lowered.mean())
    assert 0.08 < drop < 0.11
    assert f"FAIL token_f1 (baseline): token_f1 dropped by {drop:.3f} (> 0.02) versus the baseline" in outcome.output
    assert "FAIL rougeL" not in outcome.output
    # Every sample is scored in both runs: both coverage checks pass.
    assert "pass" in row_of(outcome.output, "token_f1", "baseline", "coverage")
    assert "pass" in row_of(outcome.output, "rougeL", "baseline", "coverage")
    assert "Baseline: 200 samples matched by id" in outcome.output
    assert "Gate FAILED: 4 check(s), 1 failed, 0 skipped." in outcome.output


def test_the_run_against_itself_or_an_unchanged_rerun_exits_0(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    token_f1 = base_scores(seed=3)
    save_run(tmp_path / "base", {"token_f1": token_f1, "rougeL": base_scores(seed=4)})
    itself = gate("base", "--baseline", "base")
    assert itself.exit_code == 0, itself.output
    assert "Gate passed: 4 check(s), 0 failed, 0 skipped." in itself.output  # mean and coverage per metric
    # Same difficulty per sample, new run noise: the mean does not move beyond chance.
    rerun = np.clip(token_f1 + np.random.default_rng(5).normal(0, 0.05, 200), 0, 1)
    save_run(tmp_path / "rerun", {"token_f1": rerun, "rougeL": base_scores(seed=4)})
    unchanged = gate("rerun", "--baseline", "base")
    assert unchanged.exit_code == 0, unchanged.output
    assert "pass" in row_of(unchanged.output, "token_f1", "baseline")


def test_only_a_drop_both_larger_than_max_drop_and_significant_fails(tmp_path):
    baseline = [0.6] * 10
    noisy = [0.6 + d for d in (-0.5, 0.4, -0.45, 0.35, -0.3, 0.3, -0.4, 0.2, 0.1, -0.2)]  # mean drop 0.05
    steady = [0.55] * 10  # the same mean drop on every sample
    save_run(tmp_path / "base", {"token_f1": baseline})
    save_run(tmp_path / "noisy", {"token_f1": noisy})
    save_run(tmp_path / "steady", {"token_f1": steady})

    noisy_check, noisy_coverage = run_gate(tmp_path / "noisy", baseline=tmp_path / "base", max_drop=0.02).checks
    assert noisy_coverage.details["check"] == "coverage" and noisy_coverage.verdict == PASS
    assert noisy_check.verdict == PASS
    assert noisy_check.message.startswith("token_f1 dropped by 0.050 (> 0.02) but not significantly (Holm-adjusted p = ")
    assert noisy_check.details["p_holm"] > 0.05
    assert gate(tmp_path / "noisy", "--baseline", tmp_path / "base").exit_code == 0

    steady_check, _ = run_gate(tmp_path / "steady", baseline=tmp_path / "base", max_drop=0.02).checks
    assert steady_check.verdict == FAIL and steady_check.details["p_holm"] < 0.05
    assert gate(tmp_path / "steady", "--baseline", tmp_path / "base").exit_code == 1
    # A significant drop within --max-drop passes.
    assert gate(tmp_path / "steady", "--baseline", tmp_path / "base", "--max-drop", "0.06").exit_code == 0


def test_a_baseline_scored_with_other_metric_settings_is_named_beside_the_verdict(tmp_path):
    baseline = make_run({"token_f1": [0.8] * 10})
    baseline.metrics[0]["config"] = {"threshold": 0.5}  # as a release with another default wrote it
    save_result(tmp_path / "base", baseline)
    save_run(tmp_path / "run", {"token_f1": [0.6] * 10})
    check, _ = run_gate(tmp_path / "run", baseline=tmp_path / "base", max_drop=0.02).checks
    assert check.verdict == FAIL  # the numbers still decide
    assert "settings differ between the runs (A: {'threshold': 0.5}, B: {})" in check.message
    assert "compare runs made with the same settings" in check.message
    same, _ = run_gate(tmp_path / "run", baseline=tmp_path / "run", max_drop=0.02).checks
    assert "settings differ" not in same.message


def test_a_metric_the_run_no_longer_scores_fails_against_the_baseline(tmp_path):
    save_run(tmp_path / "base", {"token_f1": [0.5, 0.6, 0.7, 0.8], "latency_ms": [900, 950, 1000, 1050]})
    save_run(tmp_path / "run", {"token_f1": [None, None, None, 0.8], "latency_ms": [900, 950, 1000, 1050]})
    report = run_gate(tmp_path / "run", baseline=tmp_path / "base")
    by_metric = {c.metric: c for c in report.checks if c.details.get("check") != "coverage"}
    assert by_metric["token_f1"].verdict == FAIL
    assert "no longer scores 3 matched sample(s)" in by_metric["token_f1"].message
    (coverage,) = [c for c in report.checks if c.details.get("check") == "coverage"]
    assert coverage.verdict == FAIL and "token_f1 scored 1 of 4 matched samples (25.0%) vs 4 of 4 (100.0%)" in coverage.message
    # Measurements with a unit are not held to --max-drop: skipped, with the reason.
    assert by_metric["latency_ms"].verdict == SKIPPED and "set a threshold instead" in by_metric["latency_ms"].message
    assert report.exit_code == 1


def with_unscored(result: Result, metric: str, reasons: dict[int, tuple[str, bool]]) -> Result:
    """``result`` with ``metric`` unscored on the samples at the given indexes, for the
    given (reason, failed)."""
    for index, (reason, failed) in reasons.items():
        result.samples[index].scores[metric] = Score.unscored(reason, failed=failed)
    return result


TIMEOUT = ("judge call failed: ReadTimeout", True)
NO_REFERENCE = ("missing required field(s): reference", False)


def test_a_run_that_stops_scoring_30_percent_of_the_samples_fails_on_coverage(tmp_path, monkeypatch):
    """Same scores where scored, so the mean does not move; but 60 of 200 samples unscored."""
    monkeypatch.chdir(tmp_path)
    token_f1, rouge = base_scores(seed=11), base_scores(seed=12)
    save_run(tmp_path / "base", {"token_f1": token_f1, "rougeL": rouge})
    lost = [i for i in range(200) if i % 10 < 3]
    candidate = with_unscored(
        make_run({"token_f1": token_f1, "rougeL": rouge}), "token_f1", {i: TIMEOUT if n < 42 else NO_REFERENCE for n, i in enumerate(lost)}
    )
    save_result(tmp_path / "candidate", candidate)

    outcome = gate("candidate", "--baseline", "base", "--max-drop", "0.02", "--junit", "gate.xml")
    assert outcome.exit_code == 1, outcome.output
    # The mean over the 140 pairs scored in both runs is unchanged: that check passes ...
    assert "pass" in row_of(outcome.output, "token_f1", "baseline", "drop")
    # ... and the coverage check, a row of its own, fails.
    assert "FAIL" in row_of(outcome.output, "token_f1", "baseline", "coverage")
    assert "pass" in row_of(outcome.output, "rougeL", "baseline", "coverage")
    message = (
        "token_f1 scored 140 of 200 matched samples (70.0%) vs 200 of 200 (100.0%) in the baseline: "
        "coverage dropped by 0.300 (> 0.02); commonest reason(s) unscored in the run: "
        '"judge call failed: ReadTimeout" (42), "missing required field(s): reference" (18)'
    )
    assert f"FAIL token_f1 (baseline): {message}" in outcome.output
    assert "Gate FAILED: 4 check(s), 1 failed, 0 skipped." in outcome.output

    cases = ET.parse("gate.xml").getroot().findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == [
        "token_f1: drop ≤ 0.02, or not significant (Holm, α=0.05)",
        "token_f1: coverage ≥ baseline's − 0.02",
        "rougeL: drop ≤ 0.02, or not significant (Holm, α=0.05)",
        "rougeL: coverage ≥ baseline's − 0.02",
    ]
    assert all(c.get("classname") == "ragmeter.gate.baseline" for c in cases)
    (failing,) = [c for c in cases if c.find("failure") is not None]
    assert failing.get("name") == "token_f1: coverage ≥ baseline's − 0.02"
    assert failing.find("failure").get("message") == message
    assert "observed: 70.0% (140/200); baseline 100.0% (200/200)" in failing.find("failure").text

    report = run_gate("candidate", baseline="base", max_drop=0.02)
    coverage = report.checks[1]
    assert coverage.details["check"] == "coverage"
    assert {k: coverage.details[k] for k in ("n_matched", "n_scored_baseline", "n_scored_run", "coverage_baseline", "coverage_run")} == {
        "n_matched": 200,
        "n_scored_baseline": 200,
        "n_scored_run": 140,
        "coverage_baseline": 1.0,
        "coverage_run": 0.7,
    }
    assert coverage.details["unscored_reasons_run"] == [
        {"reason": TIMEOUT[0], "count": 42, "failed": True},
        {"reason": NO_REFERENCE[0], "count": 18, "failed": False},
    ]
    # A looser --max-drop lets the same coverage drop through.
    assert gate("candidate", "--baseline", "base", "--max-drop", "0.3").exit_code == 0


def test_one_more_unscored_sample_out_of_200_is_within_max_drop(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    token_f1 = base_scores(seed=13)
    save_result(tmp_path / "base", with_unscored(make_run({"token_f1": token_f1}), "token_f1", {5: NO_REFERENCE}))
    save_result(tmp_path / "candidate", with_unscored(make_run({"token_f1": token_f1}), "token_f1", {5: NO_REFERENCE, 17: TIMEOUT}))

    outcome = gate("candidate", "--baseline", "base", "--max-drop", "0.02")
    assert outcome.exit_code == 0, outcome.output
    assert "pass" in row_of(outcome.output, "token_f1", "baseline", "coverage")
    assert "Gate passed: 2 check(s), 0 failed, 0 skipped." in outcome.output
    _, coverage = run_gate("candidate", baseline="base", max_drop=0.02).checks
    assert coverage.verdict == PASS
    assert coverage.message == (
        "token_f1 scored 198 of 200 matched samples (99.0%) vs 199 of 200 (99.5%) in the baseline: coverage dropped by 0.005, within 0.02"
    )


def test_a_coverage_drop_of_exactly_max_drop_passes_and_one_sample_more_fails(tmp_path):
    token_f1 = base_scores(seed=14)
    save_run(tmp_path / "base", {"token_f1": token_f1})
    for n_lost, verdict in ((4, PASS), (5, FAIL)):  # 4 of 200 = 0.02 exactly; 5 of 200 = 0.025
        run = with_unscored(make_run({"token_f1": token_f1}), "token_f1", dict.fromkeys(range(n_lost), TIMEOUT))
        save_result(tmp_path / f"lost{n_lost}", run)
        _, coverage = run_gate(tmp_path / f"lost{n_lost}", baseline=tmp_path / "base", max_drop=0.02).checks
        assert coverage.verdict == verdict, coverage.message


def test_a_run_that_scores_more_samples_than_the_baseline_passes_coverage(tmp_path):
    token_f1 = base_scores(seed=15, n=20)
    save_result(tmp_path / "base", with_unscored(make_run({"token_f1": token_f1}), "token_f1", dict.fromkeys(range(10), NO_REFERENCE)))
    save_run(tmp_path / "run", {"token_f1": token_f1})
    _, coverage = run_gate(tmp_path / "run", baseline=tmp_path / "base", max_drop=0).checks
    assert coverage.verdict == PASS
    assert coverage.message == "token_f1 scored 20 of 20 matched samples (100.0%) vs 10 of 20 (50.0%) in the baseline: no coverage drop"


def test_a_baseline_of_other_samples_is_an_input_error(tmp_path):
    save_run(tmp_path / "base", {"token_f1": [0.5, 0.6]})
    other = make_run({"token_f1": [0.5, 0.6]}, prefix="other")
    other.save(tmp_path / "other")
    write_reports(other, tmp_path / "other")
    outcome = gate(tmp_path / "other", "--baseline", tmp_path / "base")
    assert outcome.exit_code == 2
    assert "is it the same dataset?" in outcome.output


def test_an_evaluated_dataset_with_a_planted_regression_fails_the_gate_end_to_end(tmp_path, monkeypatch):
    """Through `ragmeter eval` with a real metric: the candidate answers a third of the
    questions with half of the reference, the rest as the baseline."""
    monkeypatch.chdir(tmp_path)
    words = [
        "the",
        "deploy",
        "job",
        "runs",
        "on",
        "the",
        "small",
        "runner",
        "with",
        "two",
        "cpus",
        "and",
        "four",
        "gigabytes",
        "of",
        "memory",
    ]
    base_rows, candidate_rows = [], []
    for i in range(60):
        reference = " ".join([*words[i % 5 :], f"item{i}"])
        response = " ".join(reference.split()[:-1])
        base_rows.append({"id": f"q{i}", "user_input": f"Question {i}?", "reference": reference, "response": response})
        degraded = " ".join(response.split()[: len(response.split()) // 2]) if i % 3 == 0 else response
        candidate_rows.append({**base_rows[-1], "response": degraded})
    for name, rows in (("base.jsonl", base_rows), ("candidate.jsonl", candidate_rows)):
        Path(name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        evaluated = runner.invoke(app, ["eval", name, "-m", "token_f1,exact_match", "-o", name.split(".")[0], "--no-progress"])
        assert evaluated.exit_code == 0, evaluated.output

    assert gate("base", "--baseline", "base", "--junit", "same.xml").exit_code == 0
    failed = gate("candidate", "--baseline", "base", "--junit", "regression.xml")
    assert failed.exit_code == 1, failed.output
    assert "FAIL" in row_of(failed.output, "token_f1", "baseline")
    # exact_match is 0 on every sample of both runs: no change, no failure.
    assert "pass" in row_of(failed.output, "exact_match", "baseline")
    failures = [case.get("name") for case in ET.parse("regression.xml").iter("testcase") if case.find("failure") is not None]
    assert len(failures) == 1 and failures[0].startswith("token_f1: ")
    assert not [case for case in ET.parse("same.xml").iter("testcase") if case.find("failure") is not None]


# JUnit XML -------------------------------------------------------------------------------


def test_junit_xml_has_one_test_case_per_check_and_a_failure_for_each_failing_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    token_f1, rouge = base_scores(seed=8), base_scores(seed=9)
    latency = np.random.default_rng(10).normal(1000, 100, 200)
    save_run(tmp_path / "base", {"token_f1": token_f1, "rougeL": rouge, "latency_ms": latency})
    save_run(tmp_path / "run", {"token_f1": np.clip(token_f1 - 0.1, 0, 1), "rougeL": rouge, "latency_ms": latency + 50})
    Path("thresholds.yaml").write_text("token_f1: 0.9\nrougeL: 0.2\nlatency_ms: {max: 2000}\n", encoding="utf-8")

    outcome = gate("run", "-t", "thresholds.yaml", "--baseline", "base", "--junit", "reports/gate.xml")
    assert outcome.exit_code == 1, outcome.output
    assert "Wrote reports/gate.xml" in outcome.output
    root = ET.parse("reports/gate.xml").getroot()
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    # 3 thresholds; baseline: mean and coverage of token_f1 and rougeL, and latency_ms skipped (it has a unit).
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("ragmeter.gate.threshold", "token_f1: mean ≥ 0.9"),
        ("ragmeter.gate.threshold", "rougeL: mean ≥ 0.2"),
        ("ragmeter.gate.threshold", "latency_ms: mean ≤ 2,000"),
        ("ragmeter.gate.baseline", "token_f1: drop ≤ 0.02, or not significant (Holm, α=0.05)"),
        ("ragmeter.gate.baseline", "token_f1: coverage ≥ baseline's − 0.02"),
        ("ragmeter.gate.baseline", "rougeL: drop ≤ 0.02, or not significant (Holm, α=0.05)"),
        ("ragmeter.gate.baseline", "rougeL: coverage ≥ baseline's − 0.02"),
        ("ragmeter.gate.baseline", "latency_ms: drop vs baseline"),
    ]
    failing = [(c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None]
    assert failing == [("ragmeter.gate.threshold", "token_f1: mean ≥ 0.9"), ("ragmeter.gate.baseline", cases[3].get("name"))]
    assert [c.get("name") for c in cases if c.find("skipped") is not None] == [cases[7].get("name")]
    for element in (root, suite):
        assert (element.get("tests"), element.get("failures"), element.get("skipped"), element.get("errors")) == ("8", "2", "1", "0")
    failure = cases[0].find("failure")
    assert failure.get("message").startswith("token_f1 mean ") and "< min 0.900" in failure.get("message")
    assert "observed: " in failure.text


# Boundaries of the baseline checks, on runs built in memory ---------------------------------


def checks_of(run: Result, baseline: Result, max_drop: float = 0.02, alpha: float = 0.05) -> tuple:
    from ragmeter.decide.gate import baseline_checks

    checks, _ = baseline_checks(run, baseline, max_drop, alpha=alpha)
    return tuple(checks)


@pytest.mark.parametrize("max_drop", [float("inf"), float("nan"), -0.01])
def test_max_drop_must_be_a_finite_number_of_at_least_0(max_drop):
    run = make_run({"token_f1": [0.5, 0.6]})
    with pytest.raises(GateInputError, match="--max-drop must be a number >= 0"):
        checks_of(run, run, max_drop=max_drop)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5, -0.1])
def test_alpha_must_lie_strictly_between_0_and_1(tmp_path, alpha):
    save_run(tmp_path / "run", {"token_f1": [0.5, 0.6]})
    with pytest.raises(GateInputError, match="--alpha must be between 0 and 1"):
        run_gate(tmp_path / "run", baseline=tmp_path / "run", alpha=alpha)


def test_an_unchanged_run_has_no_drop_in_mean_or_coverage():
    from ragmeter.report.formatting import format_signed

    run = make_run({"token_f1": [0.5, 0.6, 0.7]})
    mean, coverage = checks_of(run, run)
    assert mean.verdict == PASS and mean.message == f"token_f1 changed by {format_signed(0.0, None)} (no drop)"
    assert "top_regressions" not in mean.details, "the regressions belong to the comparison, not to a check"
    assert coverage.verdict == PASS and coverage.message.endswith(": no coverage drop")


def test_two_scored_pairs_are_compared_and_one_is_skipped():
    two = make_run({"token_f1": [0.5, 0.6]})
    mean, _ = checks_of(two, two)
    assert mean.verdict == PASS and mean.details["n_pairs"] == 2
    # The baseline scored one sample only: one pair, nothing lost by the run: skipped.
    baseline, run = make_run({"token_f1": [None, 0.6]}), make_run({"token_f1": [0.5, 0.6]})
    mean, coverage = checks_of(run, baseline)
    assert mean.verdict == SKIPPED and mean.message == "token_f1: fewer than 2 samples scored in both runs"
    assert coverage.verdict == PASS


def test_a_drop_of_exactly_max_drop_passes_whether_significant_or_not():
    # 0.75 -> 0.5 on every sample: a drop of 0.25 exactly (both are exact in binary), and the
    # exact permutation p of 8 equal differences is 2 / 256: significant.
    baseline, run = make_run({"token_f1": [0.75] * 8}), make_run({"token_f1": [0.5] * 8})
    mean, _ = checks_of(run, baseline, max_drop=0.25)
    assert mean.verdict == PASS and mean.message == "token_f1 dropped by 0.250, within 0.25"
    assert mean.details["p_holm"] == pytest.approx(2 / 256)
    failing, _ = checks_of(run, baseline, max_drop=0.24)
    assert failing.verdict == FAIL
    # A small drop within max_drop is named as a drop.
    smaller, _ = checks_of(run, baseline, max_drop=0.5)
    assert smaller.message == "token_f1 dropped by 0.250, within 0.5"


def test_a_drop_whose_holm_p_equals_alpha_is_not_significant():
    # Five equal drops: the exact permutation p is 2 / 32 = 0.0625 (exact in binary), Holm
    # over one metric leaves it unchanged. "Significant" is p < alpha, strictly.
    baseline, run = make_run({"token_f1": [0.75] * 5}), make_run({"token_f1": [0.5] * 5})
    mean, _ = checks_of(run, baseline, max_drop=0.1, alpha=0.0625)
    assert mean.details["p_holm"] == 0.0625
    assert mean.verdict == PASS and "but not significantly" in mean.message
    assert checks_of(run, baseline, max_drop=0.1, alpha=0.07)[0].verdict == FAIL


def test_samples_a_run_did_not_evaluate_count_against_its_coverage():
    token_f1 = list(base_scores(seed=16, n=20))
    baseline, run = make_run({"token_f1": token_f1}), make_run({"token_f1": token_f1})
    for i in range(5):
        del run.samples[i].scores["token_f1"]
    _, coverage = checks_of(run, baseline, max_drop=0.1)
    assert coverage.verdict == FAIL
    assert coverage.message.endswith('coverage dropped by 0.250 (> 0.1); commonest reason(s) unscored in the run: "not evaluated" (5)')
    assert coverage.details["unscored_reasons_run"] == [{"reason": "not evaluated", "count": 5, "failed": False}]
