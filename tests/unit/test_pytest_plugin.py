"""The pytest plugin, in real inner pytest sessions: assert helpers, dataset parametrization,
the ``ragmeter`` marker and the ``ragmeter_assert`` fixture."""

from __future__ import annotations

import json
from importlib.metadata import entry_points

import pytest

from ragmeter import evaluate
from ragmeter.pytest_plugin import assert_scores, ragmeter_samples

pytest_plugins = ["pytester"]

SAMPLE = {
    "id": "timeout",
    "user_input": "How long may a CI job run?",
    "response": "Jobs time out after 60 minutes.",
    "reference": "The default timeout is 60 minutes.",
}

PREAMBLE = f"""
import pytest
from ragmeter.pytest_plugin import assert_scores, ragmeter_samples

SAMPLE = {SAMPLE!r}
"""


def score_of(sample: dict, metric: str) -> float:
    """What ragmeter itself scores, to compare the plugin's messages with."""
    return evaluate([sample], [metric], progress=False).samples[0].scores[metric].value


def test_the_plugin_is_registered_by_its_entry_point_and_adds_the_marker(pytester):
    (entry,) = [e for e in entry_points(group="pytest11") if e.name == "ragmeter"]
    assert entry.value == "ragmeter.pytest_plugin"
    listed = pytester.runpytest("--markers")
    listed.stdout.fnmatch_lines(["@pytest.mark.ragmeter(metrics=None, thresholds=None, judges=None):*"])
    # Without the plugin named by the entry point, the marker is gone.
    without = pytester.runpytest("--markers", "-p", "no:ragmeter")
    assert "@pytest.mark.ragmeter" not in without.stdout.str()


def test_assert_scores_passes_and_fails_with_a_message_naming_metric_score_and_threshold(pytester):
    pytester.makepyfile(
        test_answers=PREAMBLE
        + """
def test_good_enough():
    scores = assert_scores(SAMPLE, ["token_f1", "exact_match"], {"token_f1": 0.3})
    assert scores["exact_match"].value == 0.0

def test_too_strict():
    assert_scores(SAMPLE, "token_f1, exact_match", {"token_f1": 0.9, "exact_match": 1})

def test_one_of_two_fails():
    assert_scores(SAMPLE, None, {"token_f1": 0.3, "exact_match": 1})
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=2)
    f1 = score_of(SAMPLE, "token_f1")
    assert 0.3 < f1 < 0.9
    result.stdout.fnmatch_lines(
        [
            "*test_too_strict*",
            "E*AssertionError: ragmeter: 2 of 2 metric(s) failed for sample 'timeout' (\"How long may a CI job run?\"):",
            f"E*token_f1 = {f1:.3f} < min 0.900: *",
            "E*exact_match = 0.000 < min 1.000: *",
            "*test_one_of_two_fails*",
            "E*AssertionError: ragmeter: 1 of 2 metric(s) failed for sample 'timeout'*",
            "E*exact_match = 0.000 < min 1.000: *",
            f"E*passed: token_f1 = {f1:.3f} ≥ min 0.300",
        ]
    )
    # The traceback stops at the test: ragmeter's own frames are hidden.
    assert "def assert_scores" not in result.stdout.str()


def test_an_unscored_metric_fails_with_its_reason_never_passes(pytester):
    pytester.makepyfile(
        test_unscored="""
from ragmeter.pytest_plugin import assert_scores

NO_REFERENCE = {"user_input": "Who approves database changes?", "response": "The DBA team."}

def test_with_a_threshold_of_zero():
    assert_scores(NO_REFERENCE, ["token_f1"], {"token_f1": 0})

def test_without_a_threshold():
    assert_scores(NO_REFERENCE, ["token_f1", "citation_present"])
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            'E*AssertionError: ragmeter: 1 of 1 metric(s) failed for sample ("Who approves database changes?"):',
            "E*token_f1: unscored (missing required field(s): reference); wanted min 0.000",
            "E*AssertionError: ragmeter: 1 of 2 metric(s) failed for sample*",
            "E*token_f1: unscored (missing required field(s): reference); wanted a score",
            "E*passed: citation_present = 0.000",
        ]
    )


def test_parametrizing_over_a_dataset_file_gives_one_test_per_sample_with_readable_ids(pytester):
    rows = [
        SAMPLE,
        {**SAMPLE, "id": "wrong", "response": "Jobs never time out."},
        {key: value for key, value in SAMPLE.items() if key != "id"},
    ]
    pytester.makefile(".jsonl", cases="\n".join(json.dumps(r) for r in rows) + "\n")
    pytester.makepyfile(
        test_cases="""
from pathlib import Path

import pytest
from ragmeter.pytest_plugin import assert_scores, ragmeter_samples

@pytest.mark.parametrize("sample", ragmeter_samples(Path(__file__).parent / "cases.jsonl"))
def test_case(sample):
    assert_scores(sample, ["token_f1"], {"token_f1": 0.3})
"""
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_case[[]timeout[]] PASSED*",
            "*test_case[[]wrong[]] FAILED*",
            "*test_case[[]cases.jsonl:3[]] PASSED*",
        ]
    )
    wrong = score_of(rows[1], "token_f1")
    result.stdout.fnmatch_lines([f"E*token_f1 = {wrong:.3f} < min 0.300*"])


def test_a_bad_row_in_the_dataset_is_a_collection_error_naming_file_line_and_field(pytester):
    pytester.makefile(".jsonl", cases=json.dumps(SAMPLE) + "\n" + json.dumps({"id": "b", "response": ["not", "text"]}) + "\n")
    pytester.makepyfile(
        test_cases="""
import pytest
from ragmeter.pytest_plugin import ragmeter_samples

@pytest.mark.parametrize("sample", ragmeter_samples("cases.jsonl"))
def test_case(sample):
    pass
"""
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*cases.jsonl, line 2, field 'response': *"])


def test_the_marker_sets_what_ragmeter_assert_checks_and_a_typo_is_an_error(pytester):
    pytester.makepyfile(
        test_marked=PREAMBLE
        + """
@pytest.mark.ragmeter(metrics=["token_f1"], thresholds={"token_f1": 0.3})
def test_marked(ragmeter_assert):
    assert ragmeter_assert(SAMPLE)["token_f1"].value > 0.3

@pytest.mark.ragmeter(metrics=["token_f1"], thresholds={"token_f1": 0.3})
def test_call_overrides_the_marker(ragmeter_assert):
    ragmeter_assert(SAMPLE, thresholds={"token_f1": 0.95})

@pytest.mark.ragmeter(metrics=["token_f1"], threshold={"token_f1": 0.95})
def test_typo_in_the_marker(ragmeter_assert):
    ragmeter_assert(SAMPLE)

@pytest.mark.ragmeter(thresholds={"exact_match": 1})
class TestClassMarker:
    def test_inherits_the_class_marker(self, ragmeter_assert):
        ragmeter_assert(SAMPLE)
"""
    )
    result = pytester.runpytest("-rfE")
    result.assert_outcomes(passed=1, failed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_typo_in_the_marker*",
            "E*TypeError: @pytest.mark.ragmeter: unknown keyword(s) threshold; use metrics, thresholds, judges",
            "*test_call_overrides_the_marker*",
            "E*AssertionError: ragmeter: 1 of 1 metric(s) failed for sample 'timeout'*",
            "E*token_f1 = * < min 0.950: *",
            "*TestClassMarker.test_inherits_the_class_marker*",
            "E*exact_match = 0.000 < min 1.000: *",
            "FAILED test_marked.py::test_call_overrides_the_marker*",
            "FAILED test_marked.py::TestClassMarker::test_inherits_the_class_marker*",
            "ERROR test_marked.py::test_typo_in_the_marker*",
        ]
    )


# Checks of the arguments, in this session ------------------------------------------------


def test_without_metrics_the_metrics_are_those_with_a_threshold():
    sample = {"retrieved_context_ids": ["d1", "d2", "d3"], "reference_context_ids": ["d2"]}
    ndcg = score_of(sample, "ndcg@3")
    assert 0 < ndcg < 0.9
    scores = assert_scores(sample, None, {"ndcg@3": ndcg, "hit_rate@2": 1})
    assert sorted(scores) == ["hit_rate@2", "ndcg@3"] and scores["ndcg@3"].value == ndcg
    with pytest.raises(AssertionError, match=rf"ndcg@3 = {ndcg:.3f} < min 0\.900"):
        assert_scores(sample, None, {"ndcg@3": 0.9, "hit_rate@2": 1})


@pytest.mark.parametrize(
    ("metrics", "thresholds", "message"),
    [
        (["token_f1"], {"rougeL": 0.5}, "threshold(s) for rougeL, which are not among the metrics token_f1"),
        (["token_f1"], {"token_f1": {"min": 0.5, "on": "ci_low"}}, "threshold for token_f1: 'on' does not apply to a single sample"),
        (["token_f1"], {"token_f1": 50}, "threshold for token_f1: token_f1 scores are in [0, 1]; got min 50"),
        (["tokn_f1"], None, "unknown metric 'tokn_f1'; did you mean token_f1"),
        ([], None, "assert_scores needs at least one metric"),
    ],
)
def test_bad_arguments_are_value_errors_not_failed_assertions(metrics, thresholds, message):
    with pytest.raises(ValueError) as caught:
        assert_scores(SAMPLE, metrics, thresholds)
    assert message in str(caught.value)


def test_ragmeter_samples_needs_a_file_with_samples(tmp_path):
    with pytest.raises(ValueError, match="at least one dataset file"):
        ragmeter_samples()
    only_header = tmp_path / "cases.csv"
    only_header.write_text("id,response,reference\n", encoding="utf-8")
    with pytest.raises(Exception, match="no sample to test"):
        ragmeter_samples(only_header)


def test_a_failure_message_shows_control_characters_of_the_sample_as_escapes():
    """pytest prints an assertion's message as it is: a sample id or question with an ANSI
    escape coloured the terminal, a line break in one printed a line that looked like pytest's."""
    hostile = {**SAMPLE, "id": "id-\x1b[31mRED\nE   fake", "user_input": "Q \x1b]8;;http://evil\x07x\u202e?"}
    with pytest.raises(AssertionError) as failed:
        assert_scores(hostile, ["exact_match"], {"exact_match": 1})
    message = str(failed.value)
    assert not any(c in message for c in "\x1b\x07\u202e") and len(message.splitlines()) == 2, message
    assert message.startswith(
        "ragmeter: 1 of 1 metric(s) failed for sample 'id-\\x1b[31mRED\\nE   fake' (\"Q \\x1b]8;;http://evil\\x07x\\u202e?\"):"
    )
