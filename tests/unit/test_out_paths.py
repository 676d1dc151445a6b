"""An output folder (``--out``, ``--store``'s folder) that is a file, or lies under one: exit 2
with one line naming the path and the file in the way, for every command that writes one.
compare, calibrate, pairwise and the store's folder gave "unexpected error: FileExistsError"
(or NotADirectoryError); eval and sweep already said it in one line."""

from __future__ import annotations

import pytest
from cli_helpers import one_line_error, run_eval, runner, write_jsonl

from ragmeter.cli import app
from ragmeter.judges.base import JudgeError
from ragmeter.run import outdir
from ragmeter.store.database import resolve_url

ROWS = [
    {"id": "s1", "user_input": "q one", "response": "blue sky", "reference": "blue"},
    {"id": "s2", "user_input": "q two", "response": "blue", "reference": "blue"},
]


@pytest.fixture
def afile(tmp_path):
    path = tmp_path / "afile"
    path.write_text("keep me")
    yield path
    assert path.read_text() == "keep me"


@pytest.fixture
def run_dir(tmp_path):
    done = run_eval(write_jsonl(tmp_path / "data.jsonl", ROWS), "-m", "token_f1", "-o", tmp_path / "run", "--no-progress")
    assert done.exit_code == 0, done.output
    return tmp_path / "run"


def test_compare_and_calibrate_name_an_out_that_is_or_lies_under_a_file(tmp_path, afile, run_dir):
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"id": "s1", "label": 1}, {"id": "s2", "label": 0}])
    for command in (["compare", str(run_dir), str(run_dir)], ["calibrate", str(run_dir), "--labels", str(labels), "--metric", "token_f1"]):
        one_line_error(runner.invoke(app, [*command, "-o", str(afile)]), f"--out {afile} is a file, not a directory")
        under = afile / "x" / "y"
        one_line_error(
            runner.invoke(app, [*command, "-o", str(under)]), f"--out {under} cannot be created: {afile} is a file, not a directory"
        )


def test_pairwise_names_an_out_that_is_a_file_before_any_judge_call(tmp_path, afile, monkeypatch):
    def no_judge(*args, **kwargs):
        raise AssertionError("a judge was built although --out cannot be written")

    monkeypatch.setattr("ragmeter.judges.config.JudgeConfig.build", no_judge)
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    one_line_error(runner.invoke(app, ["pairwise", str(data), str(data), "-o", str(afile)]), f"--out {afile} is a file, not a directory")
    under = afile / "x"
    one_line_error(
        runner.invoke(app, ["pairwise", str(data), str(data), "-o", str(under)]), f"--out {under} cannot be created: {afile} is a file"
    )
    access = outdir.os.access  # tmp_path read-only, as for a non-root user (root may write anywhere)
    monkeypatch.setattr(outdir.os, "access", lambda path, mode: access(path, mode) and path != tmp_path)
    new = tmp_path / "new" / "out"
    one_line_error(
        runner.invoke(app, ["pairwise", str(data), str(data), "-o", str(new)]), f"--out {new} cannot be created in {tmp_path}, which is not"
    )
    assert not (tmp_path / "new").exists()


def test_pairwise_leaves_no_empty_out_folder_when_its_judge_cannot_be_built(tmp_path, monkeypatch):
    """--out was created before the judge was built: a judge that could not be built (no model
    name, a missing GGUF file...) left an empty folder."""

    def no_judge(*args, **kwargs):
        raise JudgeError("an OpenAI-compatible judge needs both a base URL and a model name")

    monkeypatch.setattr("ragmeter.judges.config.JudgeConfig.build", no_judge)
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "new" / "pairwise"
    one_line_error(runner.invoke(app, ["pairwise", str(data), str(data), "-o", str(out)]), "pairwise judging needs an LLM judge")
    assert not (tmp_path / "new").exists()


def test_a_store_whose_folder_is_a_file_is_named_before_anything_is_scored(tmp_path, afile, run_dir):
    store = afile / "runs.db"
    named = f"--store {store}: the folder {afile} is a file, not a directory"
    one_line_error(runner.invoke(app, ["runs", "import", str(run_dir), "--store", str(store)]), named)
    scored = run_eval(tmp_path / "data.jsonl", "-m", "token_f1", "-o", tmp_path / "run2", "--no-progress", "--store", store)
    assert scored.exit_code == 2 and f"error: {named}" in scored.output and "unexpected" not in scored.output, scored.output
    assert not (tmp_path / "run2" / "results.jsonl").exists()


def test_bench_names_an_out_that_is_a_file_before_it_measures_anything(tmp_path, afile):
    labelled = write_jsonl(
        tmp_path / "mine.jsonl",
        [{"id": f"s{label}", "response": "a", "reference": "a b"[: 1 + 2 * label], "human": label} for label in (0, 1)],
    )
    command = ["bench", "--labelled", str(labelled), "--metric", "token_f1", "--label-field", "human", "--name", "mine"]
    result = runner.invoke(app, [*command, "--out", str(afile)])
    one_line_error(result, f"--out {afile} is a file, not a directory")
    assert "samples, " not in result.output  # no task was run first


def test_bench_leaves_no_empty_out_folder_when_its_input_is_refused(tmp_path):
    out = tmp_path / "bench"
    result = runner.invoke(app, ["bench", "--labelled", str(tmp_path / "missing.jsonl"), "--metric", "token_f1", "--out", str(out)])
    assert result.exit_code == 2 and "missing.jsonl" in result.output, result.output
    assert not out.exists()


def test_a_store_in_an_existing_folder_that_is_not_writable_can_still_be_read(tmp_path, monkeypatch):
    """``serve`` and ``runs list`` only read: a store in a read-only folder must open (the
    writability check is for a folder the command creates)."""
    monkeypatch.setattr(outdir.os, "access", lambda path, mode: False)  # as for a non-root user on a read-only folder
    assert resolve_url(str(tmp_path / "runs.db")) == f"sqlite:///{(tmp_path / 'runs.db').resolve()}"
