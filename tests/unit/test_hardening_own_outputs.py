"""``ragmeter eval`` given one of its own output files in --out as samples: refused in one line
before anything is read or written. It read results.jsonl as samples (the old results became
metadata, every sample unscored), replaced the file it had read with that run, and exited 0."""

from __future__ import annotations

import os

import pytest
from cli_helpers import TWO_SAMPLES, one_line_error, run_eval, token_f1_run, write_jsonl


@pytest.fixture
def run_dir(tmp_path):
    return token_f1_run(tmp_path)


@pytest.mark.parametrize("name", ["results.jsonl", "input_issues.jsonl", "summary.json", "run.json"])
def test_an_output_file_of_the_run_is_refused_as_its_samples(run_dir, name):
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    line = one_line_error(
        run_eval(run_dir / name, "-m", "token_f1", "-o", run_dir, "--no-progress"),
        f"samples file {run_dir / name} is the run's own {name} in --out {run_dir}",
        "copy the samples elsewhere or choose another --out",
    )
    assert "unexpected" not in line
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before


def test_the_same_file_through_a_link_or_another_spelling_is_refused(tmp_path, run_dir):
    link = tmp_path / "link.jsonl"
    link.symlink_to(run_dir / "results.jsonl")
    hard = tmp_path / "hard.jsonl"
    os.link(run_dir / "results.jsonl", hard)
    for samples in (link, hard, run_dir / ".." / "run" / "results.jsonl"):
        one_line_error(run_eval(samples, "-m", "token_f1", "-o", run_dir, "--no-progress"), "the run's own results.jsonl")


def test_a_samples_file_beside_the_outputs_or_a_copy_of_one_is_evaluated(tmp_path, run_dir):
    beside = write_jsonl(run_dir / "data.jsonl", TWO_SAMPLES)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes((run_dir / "results.jsonl").read_bytes())
    assert run_eval(beside, "-m", "token_f1", "-o", run_dir, "--no-progress").exit_code == 0
    assert "the run's own" not in run_eval(copy, "-m", "token_f1", "-o", run_dir, "--no-progress").output
