"""Hardening of the command line (issue 13): data is never markup or control codes (defect 3),
the output lock (5), a bad --out (9), config types (12), empty metric lists (13), the pointer
to input_issues.jsonl (18), and every error path: exit 2, one line, a traceback only under
--debug."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
from cli_helpers import one_line_error, run_eval, write_jsonl
from typer.testing import CliRunner

from ragmeter import evaluate
from ragmeter.cli import app

# The modules (ragmeter.cli.app is also the name of the Typer application).
report_command_module = importlib.import_module("ragmeter.cli.report")

runner = CliRunner()

GOOD = [
    {"id": "a", "user_input": "How long?", "response": "Sixty minutes.", "reference": "Sixty minutes."},
    {"id": "b", "user_input": "Who approves?", "response": "The DBA.", "reference": "The DBA approves."},
]


# ---- defect 3: data is never console markup or control codes --------------------------

ANSI_ID = "\x1b[31mred-id\x1b[0m"
MARKUP_ID = "[/bold] [link=https://x]click[/link]"
BIDI_ID = "abc\u202edcba"


def test_markup_and_escape_sequences_in_data_are_printed_as_text(tmp_path):
    """Defect 3: ids with ANSI escape sequences, a bidi override and console markup, an input
    file and an --out path with ``[/]`` and ``[link=...]``: the run does not crash, the
    markup is printed as it is (not rendered, not swallowed), and no escape byte from the
    data reaches the output (each is shown as ``\\x1b``)."""
    folder = tmp_path / "in [bold]"
    folder.mkdir()
    rows = [
        {"id": ANSI_ID, "user_input": "[/]", "response": "wrong", "reference": "right answer"},
        {"id": ANSI_ID, "response": "duplicate", "reference": "x"},  # an issue that quotes the id
        {"id": MARKUP_ID, "response": "x", "reference": "x"},
        {"id": MARKUP_ID, "response": "duplicate", "reference": "x"},
        {"id": BIDI_ID, "response": "y", "reference": "y"},
        {"id": BIDI_ID, "response": "duplicate", "reference": "y"},
    ]
    data = write_jsonl(folder / "data [bold] [link=x].jsonl", rows)  # a file name cannot hold "/"
    out = tmp_path / "out [/] [link=https://x]"
    result = run_eval(data, "-m", "token_f1,exact_match", "-o", out)
    assert result.exit_code == 0, result.output
    text = result.output
    assert "\x1b" not in text and "\u202e" not in text
    assert "duplicate id '\\x1b[31mred-id\\x1b[0m'" in text
    assert f"duplicate id '{MARKUP_ID}'" in text
    assert "duplicate id 'abc\\u202edcba'" in text
    assert str(out) in text and str(data) in text
    records = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["key"] for r in records] == [ANSI_ID, MARKUP_ID, BIDI_ID]  # the files keep the data as it is


def test_compare_and_gate_print_hostile_keys_and_paths_as_text(tmp_path):
    """Defect 3 in compare and gate: unmatched keys with escape sequences and markup, run
    directories named with markup."""
    run_a, run_b = tmp_path / "a [/]", tmp_path / "b [bold]"
    a_rows = [*GOOD, {"id": ANSI_ID, "response": "x", "reference": "x"}]
    b_rows = [*GOOD, {"id": MARKUP_ID, "response": "x", "reference": "x"}]
    assert run_eval(write_jsonl(tmp_path / "a.jsonl", a_rows), "-m", "token_f1", "-o", run_a).exit_code == 0
    assert run_eval(write_jsonl(tmp_path / "b.jsonl", b_rows), "-m", "token_f1", "-o", run_b).exit_code == 0
    compare = runner.invoke(app, ["compare", str(run_a), str(run_b), "-o", str(tmp_path / "cmp [/]")])
    assert compare.exit_code == 0, compare.output
    assert "\x1b" not in compare.output
    assert "unmatched in A: \\x1b[31mred-id\\x1b[0m" in compare.output
    assert f"unmatched in B: {MARKUP_ID}" in compare.output
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("token_f1: 0.99\n")
    gate = runner.invoke(app, ["gate", str(run_b), "--thresholds", str(thresholds)])
    assert gate.exit_code == 1, gate.output  # a real failure, reported as such
    assert "[bold]" in gate.output and "\x1b" not in gate.output


def test_the_console_never_interprets_markup_given_to_it():
    """Defect 3 at the console: printing a closing tag with nothing to close (an error for
    rich markup) or a link tag prints them as they are."""
    from ragmeter.cli import console as console_module

    result_text = console_module.styled("[/] [/bold] [link=https://x]y[/link] ", ("\x1b]0;title\x07", "bold")).plain
    assert result_text == "[/] [/bold] [link=https://x]y[/link] \\x1b]0;title\\x07"


# ---- defect 5: the output lock ---------------------------------------------------------

HOLD_LOCK = """
import sys, time
from ragmeter.run.outdir import locked
with locked(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_second_run_on_a_locked_out_is_refused_naming_the_holder(tmp_path):
    """Defect 5: while another process holds --out, eval exits 2 at once with one line that
    names that process's pid; once it is gone, the same command runs."""
    out = tmp_path / "run"
    data = write_jsonl(tmp_path / "data.jsonl", GOOD)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = run_eval(data, "-m", "token_f1", "-o", out)
        one_line_error(result, f"pid {holder.pid}", "in use by another ragmeter run")
        assert not (out / "results.jsonl").exists()
    finally:
        holder.kill()
        holder.wait(10)
    result = run_eval(data, "-m", "token_f1", "-o", out)
    assert result.exit_code == 0, result.output


# ---- defect 9: a bad --out -------------------------------------------------------------


def test_out_that_is_a_file_is_a_one_line_error(tmp_path):
    """Defect 9: --out naming an existing file."""
    data = write_jsonl(tmp_path / "data.jsonl", GOOD)
    existing = tmp_path / "a-file"
    existing.write_text("keep me")
    one_line_error(run_eval(data, "-m", "token_f1", "-o", existing), str(existing), "is a file")
    assert existing.read_text() == "keep me"


def test_out_under_a_file_is_a_one_line_error(tmp_path):
    """Defect 9: --out inside a path whose parent is a file."""
    data = write_jsonl(tmp_path / "data.jsonl", GOOD)
    existing = tmp_path / "a-file"
    existing.write_text("keep me")
    one_line_error(run_eval(data, "-m", "token_f1", "-o", existing / "run"), "cannot be created")


def test_out_that_is_not_writable_is_a_one_line_error(tmp_path, monkeypatch):
    """Defect 9: --out in a directory without write permission. Root may write anywhere (CI
    runs as root), so the permission check is told that this folder is not writable."""
    data = write_jsonl(tmp_path / "data.jsonl", GOOD)
    locked_dir = tmp_path / "read-only"
    locked_dir.mkdir()
    access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode, **kw: access(path, mode, **kw) and not (mode & os.W_OK and str(path) == str(locked_dir))
    )
    one_line_error(run_eval(data, "-m", "token_f1", "-o", locked_dir), "not writable")
    one_line_error(run_eval(data, "-m", "token_f1", "-o", locked_dir / "run"), "cannot be created")


# ---- defect 12: config types -----------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ("judge: 5\n", "judge"),
        ("prices: 5\n", "prices"),
        ("judge:\n  concurrency: lots\n", "judge.concurrency"),
        ("judge:\n  timeout: -5\n", "judge.timeout"),
        ("judge:\n  requests_per_minute: 1.5\n", "judge.requests_per_minute"),
        ("metrics: 5\n", "metrics"),
    ],
)
def test_config_values_of_the_wrong_type_are_one_line_errors_naming_the_key(tmp_path, config, key):
    """Defect 12: a config value of the wrong type or range: exit 2, one line naming the file
    and the key."""
    path = tmp_path / "config.yaml"
    path.write_text(config)
    result = run_eval(write_jsonl(tmp_path / "data.jsonl", GOOD), "-m", "token_f1", "-o", tmp_path / "run", "--config", path)
    line = one_line_error(result, str(path), key)
    assert f"{key}:" in line
    assert not (tmp_path / "run").exists()


# ---- defect 13: no metric named ---------------------------------------------------------


@pytest.mark.parametrize("spec", [",,,", " , ", ""])
def test_metrics_option_naming_no_metric_is_a_usage_error(tmp_path, spec):
    """Defect 13: -m ',,,' (or only commas and spaces, or nothing) names no metric: exit 2 with a message
    that says so (never the automatic choice, which could start the local judge)."""
    result = run_eval(write_jsonl(tmp_path / "data.jsonl", GOOD), "-m", spec, "-o", tmp_path / "run")
    one_line_error(result, "names no metric")


def test_a_misspelt_metric_is_the_one_line_said_even_when_the_data_has_issues(tmp_path):
    """The data's issues were listed first, and the misspelt metric only after them."""
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "response": "x", "reference": "x"}\nnot json\n', encoding="utf-8")
    one_line_error(run_eval(data, "-m", "tokenf1", "-o", tmp_path / "run"), "unknown metric 'tokenf1'")


def test_evaluate_with_an_empty_metric_list_says_so():
    """Defect 13, Python API: metrics=[] is an error that says the list is empty (not a run
    of every metric, not an obscure failure)."""
    with pytest.raises(ValueError, match="metrics is empty"):
        evaluate(GOOD, metrics=[])
    with pytest.raises(ValueError, match="metrics is empty"):
        evaluate(GOOD, metrics=iter(()))


# ---- defect 18: the pointer to input_issues.jsonl --------------------------------------

KINDS = 14  # more kinds of issue than the console lists (12)


def test_no_pointer_to_input_issues_when_the_run_wrote_none(tmp_path):
    """Defect 18: when every row is bad the run stops (exit 2) before writing anything: the
    console does not send the user to an input_issues.jsonl that does not exist."""
    sources = []
    for n in range(KINDS):
        path = tmp_path / f"bad{n}.jsonl"
        path.write_text("{not json\n")
        sources.append(path)
    out = tmp_path / "run"
    result = run_eval(*sources, "-m", "token_f1", "-o", out)
    assert result.exit_code == 2
    assert f"and {KINDS - 12} more kinds of issue" in result.output
    assert "input_issues.jsonl" not in result.output
    assert not (out / "input_issues.jsonl").exists()


def test_pointer_to_input_issues_when_the_run_wrote_it(tmp_path):
    """Defect 18: a run that writes input_issues.jsonl and lists only some kinds of issue
    points to the file, which holds every issue."""
    sources = []
    for n in range(KINDS):
        rows = [{"id": f"ok{n}", "response": "x", "reference": "x"}, {"id": f"missing{n}", "response": "x"}]
        sources.append(write_jsonl(tmp_path / f"part{n}.jsonl", rows))
    out = tmp_path / "run"
    result = run_eval(*sources, "-m", "token_f1", "-o", out)
    assert result.exit_code == 0, result.output
    assert "(see input_issues.jsonl)" in result.output
    issues = [json.loads(line) for line in (out / "input_issues.jsonl").read_text().splitlines()]
    assert len(issues) == KINDS and {i["field"] for i in issues} == {"reference"}


# ---- every error path: exit 2, one line; a traceback only under --debug -----------------


def test_every_error_path_is_exit_2_with_one_line(tmp_path):
    """CLI error paths of eval, report, compare and gate: exit 2 and one ``error:`` line."""
    data = write_jsonl(tmp_path / "data.jsonl", GOOD)
    run = tmp_path / "run"
    assert run_eval(data, "-m", "token_f1", "-o", run).exit_code == 0
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "run.json").write_text((run / "run.json").read_text())
    (corrupt / "results.jsonl").write_text('{"key": "a", \n')
    not_a_mapping = tmp_path / "t.yaml"
    not_a_mapping.write_text("- token_f1\n")
    thresholds = tmp_path / "good.yaml"
    thresholds.write_text("token_f1: 0.1\n")
    config = tmp_path / "c.yaml"
    config.write_text("judge:\n  api_key: sk-in-a-file-123456\n")
    gbk_config = tmp_path / "gbk.yaml"
    gbk_config.write_bytes("judge:\n  model: 千问\n".encode("gbk"))
    cases = {
        "unknown metric": (["eval", str(data), "-m", "tokenf1", "-o", str(tmp_path / "o")], "unknown metric"),
        "bad cut-off": (["eval", str(data), "-m", "ndcg@0", "-o", str(tmp_path / "o")], "positive integer"),
        "missing config": (
            ["eval", str(data), "-m", "token_f1", "--config", str(tmp_path / "nope.yaml"), "-o", str(tmp_path / "o")],
            "cannot read the config file",
        ),
        "config not in UTF-8": (
            ["eval", str(data), "-m", "token_f1", "--config", str(gbk_config), "-o", str(tmp_path / "o")],
            f"{gbk_config}: cannot read the config file: invalid UTF-8 (byte 0xce at byte 19); the file may be in GBK/GB18030",
        ),
        "key in config": (
            ["eval", str(data), "-m", "token_f1", "--config", str(config), "-o", str(tmp_path / "o")],
            "judge.api_key is not accepted",
        ),
        "endpoint without model": (
            ["eval", str(data), "-m", "faithfulness", "--judge-base-url", "http://127.0.0.1:9/v1", "-o", str(tmp_path / "o")],
            "needs both a base URL and a model name",
        ),
        "report of nothing": (["report", str(tmp_path / "nothing")], "cannot read run directory"),
        "report of a corrupt run": (["report", str(corrupt)], "line 1"),
        "compare with a missing run": (["compare", str(run), str(tmp_path / "nothing"), "-o", str(tmp_path / "c")], "cannot compare"),
        "compare with a corrupt run": (["compare", str(run), str(corrupt), "-o", str(tmp_path / "c")], "line 1"),
        "gate with nothing to check": (["gate", str(run)], "nothing to check"),
        "gate with bad thresholds": (["gate", str(run), "--thresholds", str(not_a_mapping)], str(not_a_mapping)),
        "gate of a corrupt run": (["gate", str(corrupt), "--thresholds", str(thresholds)], "line 1"),
    }
    for name, (args, fragment) in cases.items():
        result = runner.invoke(app, args)
        try:
            one_line_error(result, fragment)
        except AssertionError as failure:
            raise AssertionError(f"{name}: {failure}") from None
    assert "sk-in-a-file-123456" not in runner.invoke(app, cases["key in config"][0]).output


def test_a_run_damaged_past_its_first_line_is_named_not_an_unexpected_error(tmp_path):
    """A run's samples are read when needed, so a damaged line past the first surfaced from
    report and gate as "unexpected error: RunDirError", and a score of the wrong type as
    "unexpected error: AttributeError: 'str' object has no attribute 'get'"."""
    data = write_jsonl(tmp_path / "data.jsonl", GOOD)
    run = tmp_path / "run"
    assert run_eval(data, "-m", "token_f1", "-o", run).exit_code == 0
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    damaged, wrong_type = tmp_path / "damaged", tmp_path / "wrong_type"
    for folder, results in (
        (damaged, [lines[0], '{"key": "b", "sample": "cut\x01off"}']),
        (wrong_type, [lines[0], json.dumps({**json.loads(lines[1]), "scores": {"token_f1": "NaN"}})]),
    ):
        folder.mkdir()
        (folder / "run.json").write_text((run / "run.json").read_text())
        (folder / "results.jsonl").write_text("\n".join(results) + "\n")
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("token_f1: 0.1\n")
    expected = {
        damaged: f"{damaged / 'results.jsonl'}, line 2: invalid JSON: Invalid control character at column 28",
        wrong_type: f"{wrong_type / 'results.jsonl'}, line 2: not a valid sample result: 'scores.token_f1': a score must be an object, not str",
    }
    for folder, message in expected.items():
        for args in (["report", str(folder)], ["gate", str(folder), "--thresholds", str(thresholds)], ["compare", str(run), str(folder)]):
            line = one_line_error(runner.invoke(app, args), message)
            assert "unexpected" not in line, (args, line)


def test_input_errors_end_with_one_error_line_after_the_issues(tmp_path):
    """Input problems list their issues, then end in one ``error:`` line, exit 2."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for args in ([str(tmp_path / "nope.jsonl")], [str(empty)], [str(write_jsonl(tmp_path / "bad.jsonl", [{"response": 1}]))]):
        result = run_eval(*args, "-m", "token_f1", "-o", tmp_path / "o")
        assert result.exit_code == 2 and "Traceback" not in result.output
        last = result.output.strip().splitlines()[-1]
        assert last.startswith("error: "), result.output


@pytest.fixture
def failing_report(monkeypatch):
    """`ragmeter report` hits an unexpected error (RAGMETER_DEBUG unset)."""
    monkeypatch.delenv("RAGMETER_DEBUG", raising=False)

    def boom(result, directory):
        raise RuntimeError("unexpected failure inside the renderer")

    monkeypatch.setattr(report_command_module, "write_reports", boom)


def test_an_unexpected_error_is_one_line_without_debug(tmp_path, failing_report):
    """An unexpected error: exit 2, one line that names it and --debug, no traceback."""
    run = tmp_path / "run"
    assert run_eval(write_jsonl(tmp_path / "data.jsonl", GOOD), "-m", "token_f1", "-o", run).exit_code == 0
    result = runner.invoke(app, ["report", str(run)])
    one_line_error(result, "unexpected error: RuntimeError: unexpected failure inside the renderer", "--debug")


def test_debug_shows_the_traceback(tmp_path, failing_report):
    """--debug: the same error shows its traceback, and still exits 2."""
    run = tmp_path / "run"
    assert run_eval(write_jsonl(tmp_path / "data.jsonl", GOOD), "-m", "token_f1", "-o", run).exit_code == 0
    result = runner.invoke(app, ["--debug", "report", str(run)])
    assert result.exit_code == 2
    assert "Traceback (most recent call last)" in result.output
    assert "in boom" in result.output and "RuntimeError: unexpected failure inside the renderer" in result.output


def test_debug_does_not_outlive_its_invocation(tmp_path, failing_report):
    """One in-process call with --debug, then one without: the second shows no traceback."""
    run = tmp_path / "run"
    assert run_eval(write_jsonl(tmp_path / "data.jsonl", GOOD), "-m", "token_f1", "-o", run).exit_code == 0
    assert "Traceback" in runner.invoke(app, ["--debug", "report", str(run)]).output
    one_line_error(runner.invoke(app, ["report", str(run)]), "unexpected error: RuntimeError", "--debug")


def test_ragmeter_debug_in_the_environment_shows_the_traceback(tmp_path, failing_report, monkeypatch):
    """RAGMETER_DEBUG=1 does what --debug does, for every invocation while it is set."""
    run = tmp_path / "run"
    assert run_eval(write_jsonl(tmp_path / "data.jsonl", GOOD), "-m", "token_f1", "-o", run).exit_code == 0
    monkeypatch.setenv("RAGMETER_DEBUG", "1")
    assert "Traceback (most recent call last)" in runner.invoke(app, ["report", str(run)]).output


def test_the_console_says_why_samples_failed_not_only_how_many(tmp_path, monkeypatch):
    # With the judge's endpoint down the scores table read "3 (3 failed)" and the diagnosis "no
    # problem pattern found": why was in report.md alone.
    import socket

    from ragmeter.judges import requests

    async def no_wait(seconds):
        return None

    monkeypatch.setattr(requests, "sleep", no_wait)
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    rows = [{"id": f"s{i}", "user_input": "q?", "response": "A.", "retrieved_contexts": ["A."], "reference": "A."} for i in range(3)]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    url = f"http://127.0.0.1:{port}/v1"
    done = run_eval(
        data, "-m", "faithfulness,token_f1", "--judge-base-url", url, "--judge-model", "m", "-o", tmp_path / "out", "--no-cache"
    )
    assert done.exit_code == 0, done.output
    failed = [line for line in done.output.splitlines() if line.startswith("failed: ")]
    assert len(failed) == 1, done.output
    assert failed[0].startswith("failed: faithfulness: 3 sample(s): ") and f"the judge endpoint at {url} is unreachable since" in failed[0]
