"""ragmeter generate with the real embedded judge on a tiny knowledge base, English and Chinese:
the questions are written in each document's language, checked, and a re-run is answered from
the cache."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app

pytestmark = pytest.mark.integration

EN = """# Merge requests

## Approvals

A merge request into a protected branch needs two approvals. The author's own approval does not count.
"""
ZH = """# 数据库变更

## 变更窗口

数据库变更只能在每周二和周四 10:00 至 15:00（UTC）执行。
"""


def test_generate_writes_checked_questions_in_each_documents_language(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(tmp_path / "cache"))
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "mr.md").write_text(EN, encoding="utf-8")
    (kb / "db-zh.md").write_text(ZH, encoding="utf-8")
    out = tmp_path / "out"
    command = [
        "generate",
        str(kb),
        "--out",
        str(out),
        "--size",
        "2",
        "--mix",
        "single_fact=1",
        "--styles",
        "plain=1",
        "--no-progress",
        "--top-up-rounds",
        "0",
    ]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["asked"] == 2 and summary["generated"] == 2, summary["reasons"]
    kept = [json.loads(line) for line in (out / "testset.jsonl").read_text().splitlines()]
    rejected = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    samples = {s["reference_context_ids"][0]: s for s in kept + rejected}
    assert set(samples) == {"mr#1", "db-zh#1"}
    assert re.search(r"[\u4e00-\u9fff]", samples["db-zh#1"]["user_input"])
    assert not re.search(r"[\u4e00-\u9fff]", samples["mr#1"]["user_input"]) and samples["mr#1"]["user_input"].strip()
    for sample in kept:
        checks = sample["metadata"]["checks"]
        assert checks["answerable_from_contexts"] >= 0.5 and "reference_answers_question" in checks
        assert checks["reference_agrees_with_judge_answer"] >= 0.5 and checks["judge_answer"].strip()
    assert {r["reject_reason"] for r in rejected} <= {
        "unanswerable_from_contexts",
        "reference_unsupported",
        "source_leak",
        "question_not_self_contained",
        "reference_does_not_answer",
        "reference_disagrees",
        "copies_prompt_example",
        "reference_answers_elsewhere",
    }
    # The same command again: every judge answer comes from the cache, the test set is the same.
    again = CliRunner().invoke(app, command)
    assert again.exit_code == 0, again.output
    second = json.loads((out / "summary.json").read_text())
    assert second["usage"]["calls"] == 0 and second["usage"]["cached_calls"] == summary["usage"]["calls"]
    assert "every judge answer came from the cache" in again.output and "questions per minute" not in again.output
    assert [json.loads(line) for line in (out / "testset.jsonl").read_text().splitlines()] == kept
