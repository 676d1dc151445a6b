"""The command line: outputs, exit codes and error messages."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import run_eval, write_jsonl
from typer.testing import CliRunner

import ragmeter
from ragmeter.cli import app

runner = CliRunner()

ROWS = [
    {"id": "a", "response": "Jobs time out after 60 minutes.", "reference": "The timeout is 60 minutes."},
    {"id": "b", "response": "数据库变更需要DBA审批。", "reference": "数据库变更必须经过DBA审批。"},
]


def _data(tmp_path, rows=ROWS, name="data.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_writes_every_output_and_exits_0(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", str(_data(tmp_path)), "--metrics", "token_f1,rougeL,exact_match", "--out", str(out)])
    assert result.exit_code == 0, result.output
    for name in ("results.jsonl", "run.json", "summary.json", "report.md", "report.html", "input_issues.jsonl"):
        assert (out / name).exists(), name
    # A finished run's results.jsonl holds every journalled score: the journal is gone.
    assert not (out / "journal.jsonl").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert [m["id"] for m in summary["metrics"]] == ["token_f1", "rougeL", "exact_match"]
    assert summary["metrics"][0]["aggregate"]["n_scored"] == 2
    assert "token_f1" in (out / "report.md").read_text()


def test_bad_rows_are_reported_by_line_and_field_and_skipped(tmp_path):
    rows = [*ROWS, {"id": "c", "response": ["not", "text"], "reference": "x"}]
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", str(_data(tmp_path, rows)), "-m", "token_f1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "line 3" in result.output and "field 'response'" in result.output and "row skipped" in result.output
    issues = [json.loads(line) for line in (out / "input_issues.jsonl").read_text().splitlines()]
    assert issues[0]["location"] == "line 3" and issues[0]["field"] == "response"


def test_missing_fields_for_the_chosen_metrics_are_reported(tmp_path):
    rows = [*ROWS, {"id": "c", "response": "no reference here"}]
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", str(_data(tmp_path, rows)), "-m", "token_f1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "field 'reference'" in result.output and "required by token_f1" in result.output
    record = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()][2]
    assert record["scores"]["token_f1"]["reason"] == "missing required field(s): reference"


def test_ids_that_do_not_pair_with_the_contexts_leave_the_id_metrics_unscored_and_are_reported(tmp_path):
    """3 ids for 2 retrieved contexts were accepted silently: rank metrics credited ids to the
    wrong contexts. Now the sample is reported on its line and field, under a heading that does
    not call the field missing; the metrics that need the ids leave it unscored, the others score it."""
    contexts = {"retrieved_contexts": ["c1", "c2"], "reference_context_ids": ["d3"]}
    rows = [
        {**ROWS[0], **contexts, "retrieved_context_ids": ["d1", "d2", "d3"]},
        {**ROWS[1], **contexts, "retrieved_context_ids": ["d3", "d1"]},
    ]
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", str(_data(tmp_path, rows)), "-m", "token_f1,mrr", "-o", str(out)])
    assert result.exit_code == 0, result.output
    unpaired = "3 id(s) for 2 context(s) in retrieved_contexts: which id names which context is unknown"
    said = " ".join(result.output.split())
    assert f"line 1, field 'retrieved_context_ids': {unpaired}; required by mrr" in said
    assert "1 required field(s) missing or unusable" in said and "missing field(s)" not in said
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert records[0]["scores"]["mrr"] == {**records[0]["scores"]["mrr"], "value": None, "reason": f"retrieved_context_ids: {unpaired}"}
    assert records[0]["scores"]["token_f1"]["value"] is not None and records[1]["scores"]["mrr"]["value"] == 1.0
    strict = runner.invoke(app, ["eval", str(_data(tmp_path, rows)), "-m", "mrr", "-o", str(tmp_path / "s"), "--strict"])
    assert strict.exit_code == 2 and unpaired in strict.output


def test_a_folder_named_as_a_samples_file_is_a_one_line_error(tmp_path):
    """It was "unexpected error: IsADirectoryError: [Errno 21] Is a directory: ..."."""
    folder = tmp_path / "data.jsonl"
    folder.mkdir()
    result = runner.invoke(app, ["eval", str(folder), "-m", "token_f1", "-o", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert f"{folder}, file: cannot read the file: Is a directory" in result.output and "unexpected" not in result.output


def test_issues_that_stop_the_run_are_not_said_skipped_or_kept(tmp_path):
    """A file refused as a whole, or a bad row under --strict, stops the run: each was printed
    "(row skipped)" (or "(sample kept)"), as if the run had gone on without it."""
    broken = tmp_path / "broken.json"
    broken.write_text('[{"id": "a", "response": "x"}', encoding="utf-8")
    rows = [*ROWS, {"id": "c", "response": 3}]
    for args, said in (
        ([str(broken)], "line 1: invalid JSON: expected ','"),
        ([str(_data(tmp_path, rows)), "--strict"], "line 3, field 'response'"),
    ):
        result = runner.invoke(app, ["eval", *args, "-m", "token_f1", "-o", str(tmp_path / "run")])
        assert result.exit_code == 2 and said in result.output and "nothing was evaluated" in result.output, result.output
        assert "skipped)" not in result.output and "kept)" not in result.output, result.output


def test_strict_mode_exits_2(tmp_path):
    rows = [*ROWS, {"id": "c", "response": 3}]
    result = runner.invoke(app, ["eval", str(_data(tmp_path, rows)), "-m", "token_f1", "-o", str(tmp_path / "o"), "--strict"])
    assert result.exit_code == 2
    assert "line 3" in result.output


def test_input_errors_exit_2_with_a_clear_message(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    cases = {
        "missing file": ([str(tmp_path / "nope.jsonl")], "file not found"),
        "empty file": ([str(empty)], "file is empty"),
        "unknown metric": ([str(_data(tmp_path)), "-m", "tokenf1"], "unknown metric 'tokenf1'"),
        "bad cut-off": ([str(_data(tmp_path)), "-m", "ndcg@0"], "positive integer"),
    }
    for name, (args, message) in cases.items():
        result = runner.invoke(app, ["eval", *args, "-o", str(tmp_path / "o")])
        assert result.exit_code == 2, name
        assert message in result.output, (name, result.output)


def test_every_row_bad_exits_2(tmp_path):
    result = runner.invoke(app, ["eval", str(_data(tmp_path, [{"response": 1}])), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no valid samples" in result.output


def test_usage_error_exits_2():
    assert runner.invoke(app, ["eval"]).exit_code == 2
    assert runner.invoke(app, ["eval", "x.jsonl", "--concurrency", "0"]).exit_code == 2


def test_metrics_lists_every_metric_with_requirements():
    result = runner.invoke(app, ["metrics", "--json"])
    assert result.exit_code == 0
    infos = {m["name"]: m for m in json.loads(result.output)}
    assert infos["ndcg"]["required"] == ["retrieved_context_ids", "reference_context_ids"]
    assert infos["semantic_similarity"]["needs"] == "embeddings"
    assert infos["latency_ms"]["unit"] == "ms"
    plain = runner.invoke(app, ["metrics"])
    assert plain.exit_code == 0 and "rougeL" in plain.output and "[doc#2]" in plain.output


def test_report_rerenders_an_earlier_run(tmp_path):
    out = tmp_path / "run"
    assert runner.invoke(app, ["eval", str(_data(tmp_path)), "-m", "token_f1", "-o", str(out)]).exit_code == 0
    (out / "report.html").unlink()
    (out / "report.md").unlink()
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "report.html").exists() and (out / "report.md").exists()
    assert runner.invoke(app, ["report", str(tmp_path / "nothing")]).exit_code == 2


def test_help_explains_the_commands():
    result = runner.invoke(app, ["eval", "--help"])
    assert result.exit_code == 0
    for option in ("--metrics", "--out", "--strict", "--fresh", "--concurrency"):
        assert option in result.output


def test_metric_groups_and_names_mix_in_one_list(tmp_path):
    def chosen(spec, name):
        out = tmp_path / name
        result = runner.invoke(app, ["eval", str(_data(tmp_path)), "-m", spec, "-o", str(out), "--no-progress"])
        assert result.exit_code == 0, result.output
        return [m["id"] for m in json.loads((out / "summary.json").read_text())["metrics"]]

    group = chosen("model-free", "group")
    assert "rougeL" in group and "token_f1" in group
    # A name already in the group runs once, after the group's metrics; a group named twice counts once.
    mixed = chosen("rougeL, model-free", "mixed")
    assert mixed == [m for m in group if m != "rougeL"] + ["rougeL"]
    assert chosen("model-free,model-free", "twice") == group
    # A name asked for twice is still an error, naming it.
    result = runner.invoke(app, ["eval", str(_data(tmp_path)), "-m", "token_f1,model-free,token_f1", "-o", str(tmp_path / "bad")])
    assert result.exit_code == 2 and "token_f1" in result.output and "twice" in result.output


@pytest.mark.parametrize("args", [["metrics"], ["metrics", "--json"]], ids=["table", "json"])
def test_a_reader_that_went_away_ends_the_command_quietly_with_141(args):
    """``ragmeter metrics | head -1`` exited 1 (Rich's broken-pipe handling), which reads as a
    failed quality gate; with --json (printed by Click) it said "unexpected error", exit 2."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        env = {**os.environ, "PYTHONPATH": str(Path(ragmeter.__file__).resolve().parents[1])}
        done = subprocess.run([sys.executable, "-m", "ragmeter", *args], stdout=write_end, stderr=subprocess.PIPE, env=env, timeout=120)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, b"")  # 128 + SIGPIPE, as a shell reports it


def test_sigterm_stops_eval_as_ctrl_c_does_and_the_run_resumes_with_nothing_lost(tmp_path):
    """SIGTERM (a cancelled CI job, a stopped container) ended eval with exit 143 and not a word.
    It now stops as Ctrl-C does: the journal closed, one line saying how to resume, exit 143."""
    n = 30_000
    rows = [{"id": f"s{i}", "user_input": f"q {i}", "response": f"blue sky {i}", "reference": "blue sky"} for i in range(n)]
    data, out = write_jsonl(tmp_path / "data.jsonl", rows), tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(ragmeter.__file__).resolve().parents[1])}
    args = [sys.executable, "-m", "ragmeter", "eval", str(data), "-m", "token_f1", "-o", str(out), "--no-progress"]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    journal, deadline = out / "journal.jsonl", time.monotonic() + 120
    while not (journal.exists() and journal.stat().st_size > 0):  # scoring has begun
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    said = " ".join(process.communicate(timeout=60)[1].split())
    assert process.returncode == 143, said
    assert said.endswith(f"stopped by SIGTERM: finished scores are journalled in {out}; run the same command again to resume."), said
    kept = len(journal.read_text(encoding="utf-8").splitlines())
    assert 0 < kept < n
    resumed = run_eval(data, "-m", "token_f1", "-o", out, "--no-progress")
    assert resumed.exit_code == 0, resumed.output
    assert f"{n - kept} scores computed, {kept} resumed from the journal" in resumed.output
    assert len((out / "results.jsonl").read_text(encoding="utf-8").splitlines()) == n
