"""Behaviours the README promises that running its commands as written found broken."""

from __future__ import annotations

from cli_helpers import TWO_SAMPLES, run_eval, write_jsonl


def test_auto_metrics_with_an_unusable_endpoint_are_refused_not_run_without_the_judge(tmp_path):
    # The README: "A base URL without http:// or https:// is refused at the start". With the
    # default --metrics auto the run skipped every LLM metric, scored the rest and exited 0.
    data = write_jsonl(tmp_path / "data.jsonl", TWO_SAMPLES)
    judge = ["--judge-base-url", "api.example.com/v1", "--judge-model", "m", "--no-progress"]
    refused = run_eval(data, *judge, "-o", tmp_path / "auto")
    assert refused.exit_code == 2, refused.output
    assert "must begin with http:// or https://" in refused.output and not (tmp_path / "auto").exists()
    model_free = run_eval(data, *judge, "-m", "model-free", "-o", tmp_path / "model-free")  # needs no judge: runs
    assert model_free.exit_code == 0, model_free.output
