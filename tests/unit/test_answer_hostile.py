"""ragmeter answer against a careless or hostile pipeline: whatever one question's call does,
that question is recorded with its reason and the run goes on."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys

import pytest
from cli_helpers import runner, write_jsonl

from ragmeter.cli import app
from ragmeter.data import load_dataset
from ragmeter.run.pipelines import run_pipeline
from ragmeter.run.sync import run_sync

SAMPLES = [{"id": "q1", "user_input": "How many approvals?"}, {"id": "q2", "user_input": "Parking fee?"}]


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    write_jsonl(tmp_path / "testset.jsonl", SAMPLES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _raising(error: BaseException, is_async: bool):
    """A pipeline that raises ``error`` for the parking question and answers the other."""

    def answer(question):
        if "Parking" in question:
            raise error
        return ["c"], "two"

    async def answer_async(question):
        return answer(question)

    return answer_async if is_async else answer


@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize(
    ("error", "recorded"),
    [
        (SystemExit(3), "RuntimeError: the pipeline raised SystemExit: 3"),
        (KeyboardInterrupt(), "RuntimeError: the pipeline raised KeyboardInterrupt"),
        (GeneratorExit(), "RuntimeError: the pipeline raised GeneratorExit"),
        (asyncio.CancelledError(), "RuntimeError: the pipeline raised CancelledError"),
    ],
)
def test_a_base_exception_raised_by_the_pipeline_fails_only_its_question(error, recorded, is_async):
    """sys.exit() or a KeyboardInterrupt in the user's code ended the whole run (exit code 3,
    1 or 130, a traceback, nothing written); it is that question's error like any other."""
    dataset = load_dataset(SAMPLES)
    run = run_sync(run_pipeline(_raising(error, is_async), dataset, timeout=5))
    assert run.errors == {"q2": recorded}
    assert [loaded.sample.response for loaded in run.dataset] == ["two", None]


def test_a_pipeline_that_calls_sys_exit_is_recorded_and_the_file_written(workdir):
    (workdir / "exiting_rag.py").write_text("import sys\ndef answer(question):\n    sys.exit(0)\n", encoding="utf-8")
    sys.modules.pop("exiting_rag", None)
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", "exiting_rag:answer", "-o", "a.jsonl"])
    assert result.exit_code == 0 and "0 of 2 questions answered" in result.output, result.output
    assert [r["metadata"]["pipeline_error"] for r in _rows(workdir / "a.jsonl")] == ["RuntimeError: the pipeline raised SystemExit: 0"] * 2


class _Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message")


class _UnprintableExit(SystemExit):
    def __str__(self):
        raise RuntimeError("no message")


@pytest.mark.parametrize(
    ("error", "recorded"),
    [
        (_Unprintable(), "_Unprintable: <its message cannot be shown: RuntimeError>"),
        (_UnprintableExit(), "RuntimeError: the pipeline raised _UnprintableExit: <its message cannot be shown: RuntimeError>"),
    ],
)
def test_an_exception_whose_message_fails_is_recorded_without_it(error, recorded):
    """Formatting such an exception's message raised inside the run, which ended it ('unexpected
    error', exit 2, nothing written)."""
    run = run_sync(run_pipeline(_raising(error, False), load_dataset(SAMPLES), timeout=5))
    assert run.errors == {"q2": recorded}
    first, second = (loaded.sample for loaded in run.dataset)
    assert first.response == "two" and second.metadata["pipeline_error"] == recorded


@pytest.mark.parametrize(
    ("name", "module", "spec", "message"),
    [
        ("exits_on_import", "import sys\nsys.exit(0)\n", "answer", "cannot import exits_on_import: SystemExit: 0"),
        (
            "exits_in_factory",
            "import sys\ndef build():\n    sys.exit('usage: build.py DIR')\n",
            "build()",
            "build() failed: SystemExit: usage: build.py DIR",
        ),
    ],
)
def test_a_module_or_factory_that_calls_sys_exit_is_a_one_line_error(workdir, name, module, spec, message):
    """A module that exits on import (a script parsing its own argv) or a factory that exits
    ended ragmeter silently with the script's exit code (0: success, nothing written)."""
    (workdir / f"{name}.py").write_text(module, encoding="utf-8")
    sys.modules.pop(name, None)
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", f"{name}:{spec}", "-o", "a.jsonl"])
    assert result.exit_code == 2, result.output
    assert result.output == f"error: pipeline '{name}:{spec}': {message}\n"
    assert not (workdir / "a.jsonl").exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://", "no host given"),
        ("http://[::1/rag", "Invalid IPv6 URL"),
        ("http://127.0.0.1:99999/rag", "Port out of range 0-65535"),
        ("http://127.0.0.1/my rag", "a URL cannot hold spaces or control characters"),
        ("ftp://127.0.0.1/rag", "give an http:// or https:// endpoint"),
    ],
)
def test_an_endpoint_url_no_question_can_reach_is_a_one_line_error(workdir, url, message):
    """Each question failed on its own ('URLError: no host given', 'ValueError: Invalid IPv6
    URL'), or ftp://... was read as the module 'ftp': the URL is checked before any question."""
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", url, "-o", "a.jsonl"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: pipeline '{url}': {message}") and len(result.output.splitlines()) == 1
    assert not (workdir / "a.jsonl").exists()


COUNTING = """
import pathlib
def answer(question):
    with pathlib.Path("calls.txt").open("a") as calls:
        calls.write(question + "\\n")
    return ["c"], "two"
"""


@pytest.fixture
def counting(workdir):
    """A pipeline module ``counting_rag:answer`` that writes each question to calls.txt."""
    (workdir / "counting_rag.py").write_text(COUNTING, encoding="utf-8")
    sys.modules.pop("counting_rag", None)
    return workdir


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("taken.jsonl", "error: --out taken.jsonl is a folder; give the name of a file to write"),
        ("testset.jsonl/a.jsonl", "error: --out testset.jsonl/a.jsonl: its folder testset.jsonl is a file, not a directory"),
    ],
)
def test_an_out_that_cannot_be_written_is_refused_before_any_question(counting, out, message):
    """Every question was asked, then writing failed ('unexpected error: IsADirectoryError'),
    and all the answers were lost."""
    (counting / "taken.jsonl").mkdir()
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", "counting_rag:answer", "-o", out])
    assert result.exit_code == 2 and result.output == message + "\n"
    assert not (counting / "calls.txt").exists()


def test_the_folder_of_out_is_created(counting):
    """A new folder (runs/new/answered.jsonl) failed after every question: FileNotFoundError."""
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", "counting_rag:answer", "-o", "runs/new/answered.jsonl"])
    assert result.exit_code == 0, result.output
    assert [r["response"] for r in _rows(counting / "runs" / "new" / "answered.jsonl")] == ["two", "two"]


KILLING = """
import os, pathlib, signal
def answer(question):
    with pathlib.Path("calls.txt").open("a") as calls:
        calls.write(question + "\\n")
    if question == os.environ.get("KILL_AT"):
        os.kill(os.getpid(), signal.SIGKILL)
    return {"contexts": ["c"], "answer": "answer to " + question, "trace": "t"}
"""


def _answer_process(workdir, *args, kill_at=""):
    command = [sys.executable, "-m", "ragmeter", "answer", "testset.jsonl", "-p", "killing_rag:answer", "-o", "out/a.jsonl", *args]
    env = {**os.environ, "KILL_AT": kill_at, "PYTHONPATH": os.pathsep.join([str(workdir), *sys.path])}
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=120, env=env)


def test_a_killed_run_resumes_asking_only_the_questions_not_answered(workdir):
    """A run killed (or interrupted) after some answers lost them all ('nothing was written;
    run the same command again'): each answer is journalled as it comes, and the same command
    asks only the rest; --fresh asks everything again."""
    questions = [f"question {i}?" for i in range(6)]
    write_jsonl(workdir / "testset.jsonl", [{"id": f"q{i}", "user_input": q} for i, q in enumerate(questions)])
    (workdir / "killing_rag.py").write_text(KILLING, encoding="utf-8")
    killed = _answer_process(workdir, "--concurrency", "1", kill_at=questions[3])
    assert killed.returncode == -signal.SIGKILL and not (workdir / "out" / "a.jsonl").exists()
    assert (workdir / "calls.txt").read_text().splitlines() == questions[:4]
    resumed = _answer_process(workdir)
    assert resumed.returncode == 0, resumed.stderr
    assert "3 answered by an earlier run are kept from out/a.jsonl.journal" in resumed.stderr
    assert "6 of 6 questions answered" in resumed.stderr
    assert sorted((workdir / "calls.txt").read_text().splitlines()) == sorted(questions[:4] + questions[3:])
    rows = _rows(workdir / "out" / "a.jsonl")
    assert [r["response"] for r in rows] == [f"answer to {q}" for q in questions] and rows[0]["metadata"]["trace"] == "t"
    assert not (workdir / "out" / "a.jsonl.journal").exists()
    (workdir / "calls.txt").unlink()
    killed = _answer_process(workdir, "--concurrency", "1", kill_at=questions[1])
    assert _answer_process(workdir, "--fresh").returncode == 0
    assert sorted((workdir / "calls.txt").read_text().splitlines()) == sorted(questions[:2] + questions)


@pytest.mark.parametrize(("ids", "kind"), [([None], "NoneType"), (["a", {"id": 3}], "dict"), ([1.5], "float"), ([True], "bool")])
def test_context_ids_that_are_no_ids_fail_the_question(ids, kind):
    """They were written as the ids "None", "{'id': 3}", "1.5", "True", which retrieval metrics
    then matched against the reference ids."""
    run = run_sync(run_pipeline(lambda q: {"contexts": ["c"], "answer": "a", "context_ids": ids}, load_dataset(SAMPLES[:1]), timeout=5))
    assert run.errors == {"q1": f"PipelineOutputError: context_ids must hold strings or integers, got {kind}"}


def test_integer_context_ids_are_kept_as_text():
    run = run_sync(
        run_pipeline(lambda q: {"contexts": ["c"], "answer": "a", "context_ids": [3, "doc#1"]}, load_dataset(SAMPLES[:1]), timeout=5)
    )
    assert [loaded.sample.retrieved_context_ids for loaded in run.dataset] == [["3", "doc#1"]]
