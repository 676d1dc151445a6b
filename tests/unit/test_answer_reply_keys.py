"""ragmeter answer: what a pipeline's reply may set. The test set's ground truth is never
replaced by the reply, and no latency, tokens or cost of the test set stays as the pipeline's."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_eval, runner, write_jsonl

from ragmeter.cli import app
from ragmeter.data import load_dataset
from ragmeter.run.pipelines import run_pipeline
from ragmeter.run.sync import run_sync

SAMPLES = [
    {
        "id": "q1",
        "user_input": "What runner size?",
        "reference": "Small.",
        "metadata": {"expected_doc": "ci-resources", "answerable": True, "tokens": {"prompt": 646}, "cost_usd": 0.25, "note": "gold"},
    },
    {"id": "q2", "user_input": "Parking fee?", "reference": "Not known.", "metadata": {"tokens": 900, "cost_usd": 0.5}},
]
MODULE = """
def cheat(question):
    return {"contexts": ["c"], "context_ids": ["nothing-relevant"], "answer": "x",
            "expected_doc": "nothing-relevant", "answerable": False, "note": "mine", "pipeline": "other", "trace_id": "t-1"}

def frugal(question):
    return {"contexts": ["c"], "answer": "x"}

def nan_cost(question):
    return {"contexts": ["c"], "answer": "x", "cost_usd": float("nan"), "tokens": 12}
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "reply_keys_rag.py").write_text(MODULE, encoding="utf-8")
    write_jsonl(tmp_path / "testset.jsonl", SAMPLES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _metadata(path):
    return [json.loads(line)["metadata"] for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_reply_cannot_replace_the_test_sets_ground_truth_and_each_refusal_is_named(workdir):
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", "reply_keys_rag:cheat", "-o", "answered.jsonl"])
    assert result.exit_code == 0, result.output
    first, second = _metadata(workdir / "answered.jsonl")
    assert first["expected_doc"] == "ci-resources" and first["answerable"] is True and first["note"] == "gold"
    assert "expected_doc" not in second and "answerable" not in second  # ground truth the test set does not give
    assert first["pipeline"] == second["pipeline"] == "reply_keys_rag:cheat"
    assert first["trace_id"] == second["trace_id"] == "t-1"  # the pipeline's own extra key is kept
    output = " ".join(result.output.split())
    for fragment in (
        "q1: the pipeline's reply key 'expected_doc' was ignored",
        "q1: the pipeline's reply key 'note' was ignored",
        "q2: the pipeline's reply key 'expected_doc' was ignored: it is ground truth the metrics read",
        "and 2 more reply key(s) ignored",
        "q1: the pipeline's reply key 'pipeline' was ignored",
    ):
        assert fragment in output, output
    scored = run_eval("answered.jsonl", "-m", "expected_doc_retrieved", "-o", "run")
    assert scored.exit_code == 0, scored.output
    summary = json.loads((workdir / "run" / "summary.json").read_text())
    assert summary["metrics"][0]["aggregate"]["mean"] == 0.0  # it never retrieved ci-resources


@pytest.mark.parametrize("pipeline", ["frugal", "nan_cost"])
def test_the_test_sets_tokens_and_cost_are_never_charged_to_the_pipeline(workdir, pipeline):
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", f"reply_keys_rag:{pipeline}", "-o", "answered.jsonl"])
    assert result.exit_code == 0, result.output
    for metadata in _metadata(workdir / "answered.jsonl"):
        assert "cost_usd" not in metadata
        assert metadata.get("tokens") == (12 if pipeline == "nan_cost" else None)


def test_a_failed_question_keeps_no_stale_efficiency_figure(workdir):
    def broken(question):
        raise RuntimeError("down")

    run = run_sync(run_pipeline(broken, load_dataset(workdir / "testset.jsonl")))
    for loaded in run.dataset:
        assert not {"tokens", "cost_usd", "latency_ms"} & set(loaded.sample.metadata)
        assert "down" in loaded.sample.metadata["pipeline_error"]
    assert run.warnings == []


def test_the_library_lists_the_refused_keys_in_test_set_order(workdir):
    def cheat(question):
        return {"contexts": [], "answer": "x", "answerable": False}

    run = run_sync(run_pipeline(cheat, load_dataset(workdir / "testset.jsonl"), concurrency=2))
    assert [line.split(":")[0] for line in run.warnings] == ["q1", "q2"]
    assert run.describe()["warnings"] == run.warnings
