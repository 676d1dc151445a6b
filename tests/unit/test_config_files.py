"""Config files: a metric's cut-off ``k`` has the same 9-digit limit as ``@k`` (``{name: ndcg,
k: 10**23}`` was accepted while ``-m ndcg@<same>`` was refused)."""

from __future__ import annotations

import pytest
from cli_helpers import one_line_error, run_eval, write_jsonl

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
