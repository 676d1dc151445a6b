"""Config files: a metric's cut-off ``k`` has the same 9-digit limit as ``@k`` (``{name: ndcg,
k: 10**23}`` was accepted while ``-m ndcg@<same>`` was refused), and ``judge.concurrency`` is at
most 1024 (a 29-digit value was accepted); a metrics list that is empty or names a metric twice is
refused naming the file and the entry (it said "unexpected error: ValueError: no metrics to run" or
"is asked for twice" without the file, and --dry-run passed it)."""

from __future__ import annotations

import pytest
from cli_helpers import one_line_error, run_eval, write_jsonl

from ragmeter.judges.config import JudgeConfig
from ragmeter.metrics import create_metric


def test_a_cut_off_k_has_the_same_limit_as_at_k(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "response": "x", "reference": "x"}])
    config = tmp_path / "c.yaml"
    config.write_text("metrics:\n  - {name: ndcg, k: 99999999999999999999999}\n", encoding="utf-8")
    one_line_error(
        run_eval(data, "--config", config, "-o", tmp_path / "out", "--dry-run"), f"{config}, metrics[0]", "k must be", "at most 9 digits"
    )
    for k in (10**9, 1e23, 5.0, 0):
        with pytest.raises(ValueError, match="cut-off k must be a positive integer"):
            create_metric("ndcg", k=k)
    assert create_metric("ndcg", k=999_999_999).id == create_metric("ndcg@999999999").id == "ndcg@999999999"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("judge:\n  concurrency: 10000000000000000000000000000\n", "judge.concurrency"),
        ("judge:\n  concurrency: 1025\n", "judge.concurrency"),
        ("judge:\n  base_url: http://x/v1\n  model: m\n  ensemble: [{concurrency: 5000}]\n", "judge.ensemble[0].concurrency"),
    ],
)
def test_an_absurd_judge_concurrency_is_refused_naming_the_file_and_the_limit(tmp_path, text, field):
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "response": "x", "reference": "x"}])
    config = tmp_path / "c.yaml"
    config.write_text(text, encoding="utf-8")
    line = one_line_error(run_eval(data, "--config", config, "-o", tmp_path / "out", "--dry-run"), f"{config}: {field}:", "1024")
    assert len(line) < 200 + len(str(config))


def test_the_judge_concurrency_option_has_the_same_limit(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "response": "x", "reference": "x"}])
    result = run_eval(data, "-m", "token_f1", "--judge-concurrency", "10000000000000000000000000000", "-o", tmp_path / "out", "--dry-run")
    assert result.exit_code == 2 and "--judge-concurrency" in result.output and "1024" in result.output
    assert JudgeConfig().updated(concurrency=1024).concurrency == 1024
    with pytest.raises(ValueError, match="concurrency: Input should be less than or equal to 1024"):
        JudgeConfig().updated(concurrency=1025)


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("metrics: []\n", ":", "metrics: the list is empty"),
        ("metrics:\n", ":", "metrics: the list is empty"),
        ("metrics:\n  - token_f1\n  - rougeL\n  - {name: token_f1}\n", ", metrics[2]:", "metric 'token_f1' is already metrics[0]"),
        ("metrics:\n  - ndcg@5\n  - {name: ndcg, k: 5}\n", ", metrics[1]:", "metric 'ndcg@5' is already metrics[0]"),
    ],
    ids=["empty list", "nothing under the key", "a name twice", "the same cut-off twice"],
)
def test_an_empty_or_repeated_metrics_list_is_refused_naming_the_file(tmp_path, text, where, what):
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "response": "x", "reference": "x"}])
    config = tmp_path / "c.yaml"
    config.write_text(text, encoding="utf-8")
    for extra in (["--dry-run"], ["-o", str(tmp_path / "out")]):
        one_line_error(run_eval(data, "--config", config, *extra), f"{config}{where} {what}")
    assert not (tmp_path / "out").exists()
