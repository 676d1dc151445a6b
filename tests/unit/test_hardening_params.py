"""Hostile parameters refused at startup, never a silent 0 or 1 nor a Python error per sample:
metric parameters from --config and -m (defect 11), prices from --prices (12), and the
efficiency numbers in a sample's metadata (13)."""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from dataclasses import dataclass

import pytest
from cli_helpers import one_line_error, run_eval, runner, write_jsonl

from ragmeter.cli import app
from ragmeter.judges.metering import PriceTable
from ragmeter.metrics import Metric, Score, create_metric, metric_classes

CONTEXTS = [
    {"id": "a", "user_input": "q", "retrieved_contexts": ["the cat sat"], "reference_contexts": ["the cat sat on"]},
    {"id": "b", "user_input": "q2", "retrieved_contexts": ["the cat sat on"], "reference_contexts": ["the cat sat on"]},
]


# ---- defect 11: metric parameters ------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            '{name: nonllm_context_recall, threshold: "<b>x</b>"}',
            "nonllm_context_recall: threshold must be a number in [0, 1], got '<b>x</b>'",
        ),
        ("{name: nonllm_context_recall, threshold: 5}", "nonllm_context_recall: threshold must be a number in [0, 1], got 5"),
        ("{name: nonllm_context_recall, threshold: -3}", "nonllm_context_recall: threshold must be a number in [0, 1], got -3"),
        ("{name: nonllm_context_recall, threshold: .nan}", "nonllm_context_recall: threshold must be a number in [0, 1], got nan"),
        ("{name: nonllm_context_precision, threshold: true}", "nonllm_context_precision: threshold must be a number in [0, 1], got True"),
        ("{name: tool_call_accuracy, strict_order: 'no'}", "tool_call_accuracy: strict_order must be true or false, got 'no'"),
        ("{name: faithfulness, combine_evidence: 1}", "faithfulness: combine_evidence must be true or false, got 1"),
        (f"{{name: faithfulness, threshold: {10**400}}}", "faithfulness: threshold must be a number in (0, 1], got 1000"),
        (f"{{name: answer_correctness, beta: {10**400}}}", "answer_correctness: beta must be a positive number, got 1000"),
        (f"{{name: answer_correctness, weights: [{10**400}, 0]}}", "answer_correctness: weights must be two non-negative numbers"),
        ("{name: rubric_score, rubric: {'²': a}}", "rubric_score: rubric grades must be 1 to 5, got '²'"),
        ("{name: nonllm_context_recall, thresh: 0.5}", "metric 'nonllm_context_recall' has no parameter 'thresh'; did you mean threshold?"),
        ("{name: token_f1, zzz: 1}", "metric 'token_f1' has no parameter 'zzz'; its parameters: none"),
        ("{name: hit_rate@5, k: 3}", "metric 'hit_rate': the cut-off is given twice, as @5 and as k: give one"),
    ],
)
def test_a_bad_metric_parameter_in_the_config_is_refused_at_startup(tmp_path, entry, expected):
    """Each was a run: a string threshold failed every sample with a TypeError as its reason,
    5 / -3 / NaN / true scored every sample 0 or 1, strict_order 'no' counted as true, and an
    integer past the largest float was an OverflowError. Now: one line naming the file, the entry
    and the parameter, and no run."""
    config = tmp_path / "c.yaml"
    config.write_text(f"metrics:\n  - {entry}\n", encoding="utf-8")
    data = write_jsonl(tmp_path / "rc.jsonl", CONTEXTS)
    line = one_line_error(run_eval(data, "--config", config, "-o", tmp_path / "run"), f"{config}, metrics[0]: {expected}")
    assert len(line) < 300, line
    assert not (tmp_path / "run").exists()


def test_a_similarity_threshold_is_a_number_in_0_1_both_ends_included():
    """[0, 1] is the range of the similarity (0: every context matches)."""
    assert create_metric("nonllm_context_recall", threshold=0).config() == {"threshold": 0}
    assert create_metric("nonllm_context_precision", threshold=1).config() == {"threshold": 1}
    with pytest.raises(ValueError, match=r"^nonllm_context_precision: threshold must be a number in \[0, 1\], got 1.01$"):
        create_metric("nonllm_context_precision", threshold=1.01)


def _parameters(kind: type) -> list[tuple[str, str]]:
    """(metric, parameter) for every registered metric's parameter declared ``kind``."""
    found = []
    for name, cls in metric_classes().items():
        hints = typing.get_type_hints(cls)
        found += [(name, f.name) for f in dataclasses.fields(cls) if hints[f.name] is kind]
    return found


@pytest.mark.parametrize(("metric", "parameter"), _parameters(float))
@pytest.mark.parametrize("bad", ["0.5", True, float("nan"), float("inf"), -float("inf"), 10**400, None, [0.5]])
def test_every_number_parameter_of_every_metric_refuses_what_is_no_finite_number(metric, parameter, bad):
    with pytest.raises(ValueError, match=f"^{metric}: {parameter} must be "):
        create_metric(metric, **{parameter: bad})


@pytest.mark.parametrize(("metric", "parameter"), _parameters(bool))
@pytest.mark.parametrize("bad", ["yes", "false", 1, 0, None])
def test_every_switch_of_every_metric_takes_only_true_or_false(metric, parameter, bad):
    with pytest.raises(ValueError, match=f"^{metric}: {parameter} must be true or false, got "):
        create_metric(metric, **{parameter: bad})


@dataclass(frozen=True)
class _Custom(Metric):
    """A metric of the user's own: its parameters are checked by their annotations too."""

    name = "custom"
    family = "criteria"
    weight: float = 1.0
    label: str = "x"
    limit: int | None = None
    strict: bool = False

    async def score(self, sample, judges):
        return Score(self.weight)


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        ({"weight": 10**400}, "custom: weight must be a finite number, got 1000"),
        ({"weight": "1"}, "custom: weight must be a finite number, got '1'"),
        ({"label": 5}, "custom: label must be text, got 5"),
        ({"limit": 2.0}, "custom: limit must be an integer, got 2.0"),
        ({"limit": True}, "custom: limit must be an integer, got True"),
        ({"strict": "no"}, "custom: strict must be true or false, got 'no'"),
    ],
)
def test_a_metric_of_ones_own_has_its_parameters_checked_by_their_types(parameters, expected):
    assert _Custom(weight=2, limit=None).config() == {"weight": 2, "label": "x", "limit": None, "strict": False}
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}"):
        _Custom(**parameters)


@pytest.mark.parametrize("cutoff", ["²", "٣", "9" * 5000, "1" * 10, "0", "-1", "5x"])
def test_a_cutoff_that_is_no_small_positive_integer_is_a_usage_error_naming_metrics(tmp_path, cutoff):
    """'hit_rate@²' passed str.isdigit and was int()'s "invalid literal"; 5000 digits were
    Python's digit-limit message; neither named -m or the metric."""
    data = write_jsonl(tmp_path / "rc.jsonl", CONTEXTS)
    line = one_line_error(
        run_eval(data, "-m", f"hit_rate@{cutoff}", "-o", tmp_path / "run"),
        "--metrics: metric 'hit_rate': the cut-off after @ must be a positive integer of at most 9 digits, got '",
    )
    assert "int()" not in line and "limit" not in line and len(line) < 200, line
    assert not (tmp_path / "run").exists()


def test_a_cutoff_has_at_most_nine_digits():
    assert create_metric("hit_rate@000000005").id == "hit_rate@5"
    assert create_metric("ndcg@999999999").id == "ndcg@999999999"
    with pytest.raises(ValueError, match="at most 9 digits, got '1000000000'"):
        create_metric("ndcg@1000000000")


# ---- defect 12: prices -------------------------------------------------------------------

DRY_RUN = ("--judge", "openai", "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "gpt-4o-mini", "--dry-run")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "nan.json",
            '{"gpt-4o-mini": {"input_per_million": NaN, "output_per_million": 0.6}}',
            "input_per_million must be a finite number >= 0",
        ),
        (
            "inf.json",
            '{"gpt-4o-mini": {"input_per_million": 0.15, "output_per_million": 1e400}}',
            "output_per_million must be a finite number >= 0",
        ),
        (
            "negative.json",
            '{"gpt-4o-mini": {"input_per_million": -5, "output_per_million": 0.6}}',
            "input_per_million must be a finite number >= 0",
        ),
        ("text.json", '{"gpt-4o-mini": {"input_per_million": "inf", "output_per_million": 0.6}}', "got 'inf'"),
        (
            "bool.yaml",
            "gpt-4o-mini: {input_per_million: true, output_per_million: 0.6}\n",
            "input_per_million must be a finite number >= 0",
        ),
        ("huge.yaml", f"gpt-4o-mini: {{input_per_million: {10**400}, output_per_million: 0.6}}\n", "got 1000"),
        ("intkey.yaml", "123: {input_per_million: 1, output_per_million: 1}\n", "the model name 123 must be text"),
        ("entry.yaml", "gpt-4o-mini: 5\n", "model 'gpt-4o-mini' needs a mapping with input_per_million and output_per_million"),
        ("broken.yaml", "gpt-4o-mini: [\n", "cannot read the price table"),
    ],
)
def test_a_price_that_is_no_finite_number_at_least_0_is_refused_naming_file_model_and_field(tmp_path, name, text, expected):
    """NaN, inf and negative prices gave $nan, $inf and $-0.0094 in the estimate; an integer model
    name in YAML was "unexpected error: AttributeError", a broken YAML file a ParserError."""
    prices = tmp_path / name
    prices.write_text(text, encoding="utf-8")
    data = write_jsonl(tmp_path / "rc.jsonl", CONTEXTS)
    line = one_line_error(
        run_eval(data, "-m", "faithfulness", *DRY_RUN, "--prices", prices, "-o", tmp_path / "run"), f"{prices}: ", expected
    )
    assert "unexpected" not in line and len(line) < 300, line
    if name not in ("intkey.yaml", "entry.yaml", "broken.yaml"):
        assert "model 'gpt-4o-mini'" in line


def test_a_price_file_that_is_missing_is_named(tmp_path):
    data = write_jsonl(tmp_path / "rc.jsonl", CONTEXTS)
    missing = tmp_path / "nope.json"
    one_line_error(
        run_eval(data, "-m", "faithfulness", *DRY_RUN, "--prices", missing, "-o", tmp_path / "run"),
        f"{missing}: cannot read the price table",
    )


def test_prices_of_zero_and_in_text_are_read(tmp_path):
    """Free models cost 0 (never -0); numeric text still reads as before; a NaN is refused."""
    prices = tmp_path / "p.yaml"
    prices.write_text(
        "local: {input_per_million: -0.0, output_per_million: 0}\nquoted: {input_per_million: '0.15', output_per_million: '0.6'}\n"
    )
    table = PriceTable(prices)
    assert (table.price("local").input_per_million, table.price("quoted").output_per_million) == (0.0, 0.6)
    assert str(table.price("local").cost(1000, 1000)) == "0.0"
    prices.write_text("local: {input_per_million: .nan, output_per_million: 0}\n")
    with pytest.raises(
        ValueError,
        match=r"p.yaml: model 'local': input_per_million must be a finite number >= 0 \(US dollars per million tokens\), got nan$",
    ):
        PriceTable(prices)


# ---- defect 13: latency, tokens and cost in metadata -----------------------------------


def _efficiency(tmp_path, metadata: dict) -> dict:
    """The latency_ms, total_tokens and cost_usd scores ``ragmeter eval`` gives one sample with ``metadata``."""
    data = write_jsonl(tmp_path / "m.jsonl", [{"id": "s", "user_input": "q", "response": "a", "reference": "a", "metadata": metadata}])
    result = run_eval(data, "-m", "latency_ms,total_tokens,cost_usd", "-o", tmp_path / "run")
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    return row["scores"]


def test_an_integer_too_large_for_a_float_in_metadata_is_named_not_a_failure(tmp_path):
    """10**400 written as digits was "error: OverflowError: int too large to convert to float",
    counted as failed; 1e400 (read as inf) already had this reason."""
    huge = 10**400
    scores = _efficiency(tmp_path, {"latency_ms": huge, "tokens": huge, "cost_usd": huge})
    for metric, field in [("latency_ms", "metadata.latency_ms"), ("total_tokens", "metadata.tokens"), ("cost_usd", "metadata.cost_usd")]:
        score = scores[metric]
        assert score["value"] is None and score["failed"] is False, score
        assert score["reason"].startswith(f"{field} must be a non-negative number, got 1000"), score
        assert len(score["reason"]) < 120, score["reason"]


def test_token_parts_whose_sum_is_past_the_largest_float_are_named(tmp_path):
    score = _efficiency(tmp_path, {"latency_ms": 1, "tokens": {"prompt": 1e308, "completion": 1e308}, "cost_usd": 0})["total_tokens"]
    assert score["value"] is None and score["failed"] is False, score
    assert score["reason"] == "metadata.tokens (prompt + completion) must be a non-negative number, got inf"


def test_minus_zero_in_metadata_is_shown_as_zero(tmp_path):
    """-0.0 was "-0 ms", "-0 tokens" and "$-0.000000"."""
    scores = _efficiency(tmp_path, {"latency_ms": -0.0, "tokens": -0.0, "cost_usd": -0.0})
    shown = {metric: (score["value"], score["explanation"]) for metric, score in scores.items()}
    assert shown == {"latency_ms": (0.0, "0 ms"), "total_tokens": (0.0, "0 tokens"), "cost_usd": (0.0, "$0.000000")}
    assert re.search(r"\| \$?-0", (tmp_path / "run" / "report.md").read_text(encoding="utf-8")) is None  # a summary column showed -0


def test_an_integer_too_large_for_a_float_in_gate_thresholds_or_labels_is_named(tmp_path):
    """Both were an OverflowError that named no file or line ("unexpected error")."""

    data = write_jsonl(tmp_path / "d.jsonl", [{"id": i, "response": "x", "reference": r} for i, r in (("a", "x"), ("b", "y"), ("c", "x"))])
    run = tmp_path / "run"
    assert run_eval(data, "-m", "token_f1", "-o", run, "--no-progress").exit_code == 0
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text(f"token_f1: {{min: {10**400}}}\n")
    one_line_error(
        runner.invoke(app, ["gate", str(run), "-t", str(thresholds)]),
        f"{thresholds}",
        "min must be a number, got an integer of about 400 digits",
    )
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": "a", "label": 10**400}, {"id": "b", "label": 0}, {"id": "c", "label": 1}])
    done = runner.invoke(app, ["calibrate", str(run), "--labels", str(labels), "--metric", "token_f1", "-o", str(tmp_path / "cal")])
    assert "Traceback" not in done.output and "unexpected" not in done.output, done.output
    assert done.exit_code == 0 and "1 label line(s) could not be used" in done.output, done.output
    assert (
        "line 1\\: 'label' of 'a' must be a number in \\[0, 1\\], got an integer of about 400 digits"
        in (tmp_path / "cal" / "calibration.md").read_text()
    )
