"""A run folder whose files were damaged by hand or by a tool: report, compare and gate end in
one line naming the file and the field, exit 2; so do report, eval and compare when a report
cannot be written. A header (run.json) of the wrong shape gave
"unexpected error: AttributeError: 'list' object has no attribute 'get'" (or KeyError,
TypeError, ValueError) from report, and compare and gate read it as if it were whole."""

from __future__ import annotations

import errno
import json
import os
import re
import tempfile
import xml.etree.ElementTree as ET

import pytest
from cli_helpers import TWO_SAMPLES, one_line_error, run_eval, runner, token_f1_run, write_jsonl

from ragmeter.cli import app


@pytest.fixture
def run_dir(tmp_path):
    return token_f1_run(tmp_path)


def _commands(run_dir, damaged, tmp_path):
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("token_f1: 0.1\n")
    return (
        ["report", str(damaged)],
        ["compare", str(run_dir), str(damaged), "-o", str(tmp_path / "cmp")],
        ["gate", str(damaged), "--thresholds", str(thresholds)],
    )


def _set(path, value):
    def change(header):
        *parents, last = path
        for step in parents:
            header = header[step]
        header[last] = value

    return change


def _drop(path):
    def change(header):
        *parents, last = path
        for step in parents:
            header = header[step]
        del header[last]

    return change


HEADER_DAMAGE = {
    "run is a list": (_set(["run"], [1]), "field 'run' must be an object, not list"),
    "seconds is text": (_set(["run", "seconds"], "fast"), "field 'run.seconds' must be a number, not str"),
    "n_samples is true": (_set(["run", "n_samples"], True), "field 'run.n_samples' must be a whole number, not bool"),
    "sources is a number": (_set(["run", "sources"], 5), "field 'run.sources' must be a list, not int"),
    "a source is a number": (_set(["run", "sources"], [5]), "field 'run.sources' must be a list of text"),
    "judge is text": (_set(["run", "judge"], "local"), "field 'run.judge' must be an object or null, not str"),
    "started_at is a number": (_set(["run", "started_at"], 5), "field 'run.started_at' must be text, not int"),
    "a metric is text": (_set(["metrics", 0], "token_f1"), "field 'metrics[0]' must be an object, not str"),
    "family missing": (_drop(["metrics", 0, "family"]), "field 'metrics[0].family' is missing"),
    "unit is a number": (_set(["metrics", 0, "unit"], 3), "field 'metrics[0].unit' must be text or null, not int"),
    "higher_is_better is text": (
        _set(["metrics", 0, "higher_is_better"], "no"),
        "field 'metrics[0].higher_is_better' must be true or false, not str",
    ),
    "higher_is_better missing": (_drop(["metrics", 0, "higher_is_better"]), "field 'metrics[0].higher_is_better' is missing"),
    "config is a list": (_set(["metrics", 0, "config"], []), "field 'metrics[0].config' must be an object, not list"),
    "a metric twice": (lambda h: h["metrics"].append(dict(h["metrics"][0])), "field 'metrics[1].id': metric 'token_f1' is listed twice"),
}


@pytest.mark.parametrize("damage", HEADER_DAMAGE, ids=list(HEADER_DAMAGE))
def test_a_damaged_header_is_named_by_file_and_field(tmp_path, run_dir, damage):
    change, message = HEADER_DAMAGE[damage]
    _each_command_names_the_damage(tmp_path, run_dir, change, message)


def _each_command_names_the_damage(tmp_path, run_dir, change, message):
    """A copy of ``run_dir`` whose run.json header ``change`` damages: report, compare and gate
    each stop on one line naming the file and ``message``."""
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    header = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    change(header)
    (damaged / "run.json").write_text(json.dumps(header), encoding="utf-8")
    (damaged / "results.jsonl").write_bytes((run_dir / "results.jsonl").read_bytes())
    for args in _commands(run_dir, damaged, tmp_path):
        line = one_line_error(runner.invoke(app, args), f"{damaged / 'run.json'}: {message}")
        assert "unexpected" not in line, (args, line)


RESULT_DAMAGE = {
    "seconds is text": (
        lambda r: r.update(seconds={"token_f1": "fast"}),
        "'seconds.token_f1': must be a number of seconds (0 or more), got 'fast'",
    ),
    "seconds is negative": (lambda r: r.update(seconds={"token_f1": -1}), "'seconds.token_f1': must be a number of seconds"),
    "seconds is null": (lambda r: r.update(seconds={"token_f1": None}), "'seconds.token_f1': must be a number of seconds"),
    "sample is a number": (lambda r: r.update(sample=5), "'sample' must be an object, not int"),
    "sample is a list": (lambda r: r.update(sample=["q"]), "'sample' must be an object, not list"),
    "sample is missing": (lambda r: r.pop("sample"), "'sample' is missing"),
    "a sample field of the wrong type": (
        lambda r: r["sample"].update(user_input=5),
        "sample.user_input: Input should be a valid string (got 5)",
    ),
    "key is a list": (lambda r: r.update(key=["s1"]), "'key' must be text, not list"),
    "key is missing": (lambda r: r.pop("key"), "'key' is missing"),
    "a score above 1": (lambda r: r["scores"]["token_f1"].update(value=1.5), "'scores.token_f1': token_f1 is a score in [0, 1], got 1.5"),
    "a score below 0": (
        lambda r: r["scores"]["token_f1"].update(value=-0.25),
        "'scores.token_f1': token_f1 is a score in [0, 1], got -0.25",
    ),
}


@pytest.mark.parametrize("damage", RESULT_DAMAGE, ids=list(RESULT_DAMAGE))
def test_a_damaged_result_line_is_named_by_file_line_and_field(tmp_path, run_dir, damage):
    """A bad ``seconds`` gave "unexpected error: ValueError: could not convert string to float"
    (and passed compare), a sample that is not an object a pydantic message of several lines,
    a list as key "unexpected error: TypeError: unhashable type"; a score of 1.5 or -0.25 of a
    [0, 1] metric was averaged as it was (a mean above 1, a gate passed on it)."""
    change, message = RESULT_DAMAGE[damage]
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "run.json").write_bytes((run_dir / "run.json").read_bytes())
    first, second = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(second)
    change(record)
    (damaged / "results.jsonl").write_text(f"{first}\n{json.dumps(record)}\n", encoding="utf-8")
    for args in _commands(run_dir, damaged, tmp_path):
        line = one_line_error(runner.invoke(app, args), f"{damaged / 'results.jsonl'}, line 2: not a valid sample result: {message}")
        assert "unexpected" not in line, (args, line)


def test_a_measurement_outside_0_1_is_read(tmp_path):
    """Only [0, 1] scores are bounded: a latency of 250 ms is a valid result."""
    rows = [dict(row, metadata={"latency_ms": 250 + n}) for n, row in enumerate(TWO_SAMPLES)]
    done = run_eval(write_jsonl(tmp_path / "data.jsonl", rows), "-m", "token_f1,latency_ms", "-o", tmp_path / "run", "--no-progress")
    assert done.exit_code == 0, done.output
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("latency_ms: {max: 300}\n")
    assert runner.invoke(app, ["report", str(tmp_path / "run")]).exit_code == 0
    gated = runner.invoke(app, ["gate", str(tmp_path / "run"), "--thresholds", str(thresholds)])
    assert gated.exit_code == 0, gated.output


def test_report_into_a_folder_it_cannot_write_is_one_line(run_dir, monkeypatch):
    """It said "unexpected error: IsADirectoryError: [Errno 21] Is a directory:
    '.../.report.html.x1y2.tmp' -> '.../report.html'" (or PermissionError)."""
    (run_dir / "report.html").unlink()
    (run_dir / "report.html").mkdir()
    one_line_error(
        runner.invoke(app, ["report", str(run_dir)]), f"cannot write the reports into {run_dir}: {run_dir / 'report.html'}: Is a directory"
    )
    (run_dir / "report.html").rmdir()

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(run_dir / ".summary.json.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refused)  # what a folder without write permission does, also for root
    one_line_error(runner.invoke(app, ["report", str(run_dir)]), f"cannot write the reports into {run_dir}: Permission denied")


def test_a_metric_id_and_unit_from_the_run_files_are_text_in_report_md_and_compare_md(tmp_path, run_dir):
    """report.md wrote the metric id raw between single backticks and the unit raw: an id with
    a backtick closed the code span, so the rest of it (HTML, a '|' that splits the table row)
    became markup; so did a unit, and the run's start time and version, in report.md and compare.md."""
    evil_id, evil_unit = "tok`en <img src=x onerror=alert(1)>|x", "ms <b>u</b>|"
    header = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    header["metrics"][0].update(id=evil_id, unit=evil_unit, higher_is_better=False)
    header["run"]["started_at"] = "<script>alert(1)</script>"
    (run_dir / "run.json").write_text(json.dumps(header), encoding="utf-8")
    lines = [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    for record in lines:
        for part in ("scores", "seconds", "usage", "configs"):
            record[part] = {evil_id: record[part]["token_f1"]}
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    for name in ("run.json", "results.jsonl"):
        (other / name).write_bytes((run_dir / name).read_bytes())
    assert runner.invoke(app, ["report", str(run_dir)]).exit_code == 0
    done = runner.invoke(app, ["compare", str(run_dir), str(other), "-o", str(tmp_path / "cmp")])
    assert done.exit_code == 0, done.output
    for markdown in (run_dir / "report.md", tmp_path / "cmp" / "compare.md"):
        text = markdown.read_text(encoding="utf-8")
        assert "``tok`en <img src=x onerror=alert(1)>\\|x``" in text, markdown
        assert "<b>" not in text and "ms &lt;b&gt;u&lt;/b&gt;\\|" in text, markdown
        assert "<script>" not in text.replace("started `<script>alert(1)</script>`", ""), markdown  # a code span: shown literally
        rows = text.splitlines()
        at = next(n for n, line in enumerate(rows) if line.startswith("| ``tok`en"))
        header = next(line for line in reversed(rows[:at]) if line.startswith("| metric |"))
        assert len(re.findall(r"(?<!\\)\|", rows[at])) == header.count("|"), rows[at]  # the data's '|' split no cell


def test_a_results_file_that_lost_samples_is_flagged_by_report(run_dir):
    """results.jsonl cut to fewer samples than run.json's n_samples was re-rendered without a
    word: "2 samples" above means and counts of one."""
    first = (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()[0]
    (run_dir / "results.jsonl").write_text(first + "\n", encoding="utf-8")
    done = runner.invoke(app, ["report", str(run_dir)])
    assert done.exit_code == 0, done.output
    warning = "the results hold 1 sample(s) but the run had 2: results.jsonl was cut short or edited"
    assert f"warning: {warning}" in done.output
    assert json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["warnings"][0].startswith(warning)
    assert "> **Warning**: the results hold 1 sample\\(s\\) but the run had 2" in (run_dir / "report.md").read_text(encoding="utf-8")
    assert f"<b>Warning:</b> {warning}" in (run_dir / "report.html").read_text(encoding="utf-8")


def test_a_whole_results_file_has_no_warning(run_dir):
    done = runner.invoke(app, ["report", str(run_dir)])
    assert done.exit_code == 0 and "warning" not in done.output.lower()
    assert json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["warnings"] == []
    assert "Warning" not in (run_dir / "report.md").read_text(encoding="utf-8")


def test_eval_and_compare_with_a_folder_in_a_reports_place_are_one_line(tmp_path, run_dir):
    """Both said "unexpected error: IsADirectoryError: [Errno 21] Is a directory:
    '.../.report.html.x1y2.tmp' -> '.../report.html'"."""
    out, compared = tmp_path / "again", tmp_path / "cmp"
    (out / "report.html").mkdir(parents=True)
    (compared / "compare.md").mkdir(parents=True)
    data = write_jsonl(tmp_path / "more.jsonl", TWO_SAMPLES)
    done = run_eval(data, "-m", "token_f1", "-o", out, "--no-progress")
    assert done.exit_code == 2 and "Traceback" not in done.output, done.output
    last = f"error: cannot write the results and reports into {out}: {out / 'report.html'}: Is a directory"
    assert done.output.strip().splitlines()[-1] == last  # after "Evaluating 2 samples ..."
    one_line_error(
        runner.invoke(app, ["compare", str(run_dir), str(run_dir), "-o", str(compared)]),
        f"cannot write the comparison into {compared}: {compared / 'compare.md'}: Is a directory",
    )


def _member(model):
    tried = [
        {"mode": "batch", "method": "text", "roc_auc": None, "balanced_accuracy": None, "error": "timed out"},
        {"mode": "single", "method": "logprobs", "roc_auc": 0.91, "balanced_accuracy": 0.84, "error": None},
    ]
    return {
        "backend": "openai",
        "model": model,
        "base_url": "http://127.0.0.1:8000/v1",
        "verdict_mode": "auto",
        "verdict_mode_used": "single",
        "verdict_methods": {"logprobs": 12},
        "prompt_files": {"en": "prompts/en.yaml"},
        "probe": {"chosen": "single", "tried": tried},
        "warnings": ["all 3 verdicts were yes"],
    }


#: A whole ensemble judge's description, as `ragmeter eval` writes it into run.json.
JUDGE = {
    "backend": "ensemble",
    "model": "m1 + m2",
    "combine": "mean",
    "members": [_member("m1"), {**_member("m2"), "probe": "not run yet (no verdicts asked)"}],
    "p_yes_spread": {"faithfulness": {"n": 3, "mean": 0.1, "max": 0.2, "share_split": 0.5}},
    "warnings": ["member 1 (m1): all 3 verdicts were yes"],
}

JUDGE_DAMAGE = {
    "members is text": (_set(["members"], "m1"), "field 'run.judge.members' must be a list, not str"),
    "a member is a number": (_set(["members", 1], 5), "field 'run.judge.members[1]' must be an object, not int"),
    "a member's model is a list": (_set(["members", 0, "model"], ["m"]), "field 'run.judge.members[0].model' must be text, not list"),
    "probe is a number": (_set(["members", 0, "probe"], 3), "field 'run.judge.members[0].probe' must be an object or text, not int"),
    "probe.tried is text": (
        _set(["members", 0, "probe", "tried"], "batch"),
        "field 'run.judge.members[0].probe.tried' must be a list, not str",
    ),
    "a tried mode is a list": (
        _set(["members", 0, "probe", "tried", 1], []),
        "field 'run.judge.members[0].probe.tried[1]' must be an object, not list",
    ),
    "roc_auc is text": (
        _set(["members", 0, "probe", "tried", 1, "roc_auc"], "high"),
        "field 'run.judge.members[0].probe.tried[1].roc_auc' must be a number or null, not str",
    ),
    "p_yes_spread is a list": (_set(["p_yes_spread"], []), "field 'run.judge.p_yes_spread' must be an object, not list"),
    "a task's spread is a number": (
        _set(["p_yes_spread", "faithfulness"], 0.1),
        "field 'run.judge.p_yes_spread['faithfulness']' must be an object, not float",
    ),
    "a spread's mean is text": (
        _set(["p_yes_spread", "faithfulness", "mean"], "low"),
        "field 'run.judge.p_yes_spread['faithfulness'].mean' must be a number, not str",
    ),
    "verdict_methods counts are text": (
        _set(["members", 0, "verdict_methods", "logprobs"], "12"),
        "field 'run.judge.members[0].verdict_methods['logprobs']' must be a whole number, not str",
    ),
    "prompt_files is a list": (_set(["members", 0, "prompt_files"], ["a"]), "field 'run.judge.members[0].prompt_files' must be an object"),
    "warnings is text": (_set(["warnings"], "beware"), "field 'run.judge.warnings' must be a list, not str"),
    "a warning is an object": (_set(["warnings", 0], {}), "field 'run.judge.warnings[0]' must be text, not dict"),
    "combine is a number": (_set(["combine"], 1), "field 'run.judge.combine' must be text, not int"),
}


@pytest.mark.parametrize("damage", JUDGE_DAMAGE, ids=list(JUDGE_DAMAGE))
def test_a_damaged_judge_description_is_named_by_file_and_field(tmp_path, run_dir, damage):
    """run.json's judge was only checked to be an object: a bad field inside it (members,
    probe, p_yes_spread...) made report say "unexpected error: TypeError ..." (from judge_line)
    while compare and gate took it as it was."""
    change, message = JUDGE_DAMAGE[damage]

    def with_damaged_judge(header):
        header["run"]["judge"] = judge = json.loads(json.dumps(JUDGE))
        change(judge)

    _each_command_names_the_damage(tmp_path, run_dir, with_damaged_judge, message)


def test_a_whole_judge_description_is_rendered(run_dir):
    """A probe mode that failed has no ROC-AUC (null): it is said to have failed. One without
    a measure and without an error (null, or left out) made report say "unexpected error:
    TypeError: unsupported format string passed to NoneType.__format__"; it shows '?'."""
    header = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    header["run"]["judge"] = judge = json.loads(json.dumps(JUDGE))
    judge["members"][0]["probe"]["tried"].append({"mode": "both", "method": "text", "roc_auc": None})
    (run_dir / "run.json").write_text(json.dumps(header), encoding="utf-8")
    done = runner.invoke(app, ["report", str(run_dir)])
    assert done.exit_code == 0, done.output
    text = " ".join((run_dir / "report.html").read_text(encoding="utf-8").split())
    assert "Judge: ensemble (mean of 2 members): openai m1 at http://127.0.0.1:8000/v1" in text
    assert (
        "verdict probe chose single: batch failed (timed out); single (logprobs) ROC-AUC 0.91, balanced accuracy 0.84; "
        "both (text) ROC-AUC ?, balanced accuracy ?;"
    ) in text
    assert "faithfulness 0.100 (max 0.200, members split on 50%)" in text


def test_a_results_file_that_lost_samples_is_flagged_by_gate_and_compare(tmp_path, run_dir):
    """report warned of results.jsonl holding fewer samples than run.json's n_samples, but gate
    passed its thresholds on the one sample left and compare compared it, without a word."""
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "run.json").write_bytes((run_dir / "run.json").read_bytes())
    (cut / "results.jsonl").write_text((run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()[1] + "\n", encoding="utf-8")
    warning = "the results hold 1 sample(s) but the run had 2: results.jsonl was cut short or edited"
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("token_f1: 0.1\n")
    gated = runner.invoke(app, ["gate", str(cut), "--thresholds", str(thresholds), "--baseline", str(cut)])
    assert gated.exit_code == 0, gated.output
    out = " ".join(gated.output.split())
    assert f"warning: {warning}" in out and f"warning: baseline {cut}: {warning}" in out
    compared = runner.invoke(app, ["compare", str(run_dir), str(cut), "-o", str(tmp_path / "cmp")])
    assert compared.exit_code == 0, compared.output
    assert f"warning: B ({cut}): {warning}" in " ".join(compared.output.split()) and "warning: A" not in compared.output
    document = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert [w.startswith(f"B ({cut}): {warning}") for w in document["warnings"]] == [True]
    assert "> **Warning**: B \\(" in (tmp_path / "cmp" / "compare.md").read_text(encoding="utf-8")
    assert f"<b>Warning:</b> B ({cut}): {warning}" in (tmp_path / "cmp" / "compare.html").read_text(encoding="utf-8")


def test_gates_warnings_are_in_its_junit_file_escaped(tmp_path, run_dir):
    """The warnings were said on the console only: CI showing the JUnit file passed a cut run silently."""
    cut = tmp_path / "cut <&>"
    cut.mkdir()
    (cut / "run.json").write_bytes((run_dir / "run.json").read_bytes())
    (cut / "results.jsonl").write_text((run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()[1] + "\n", encoding="utf-8")
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("token_f1: 0.1\n")
    gated = runner.invoke(app, ["gate", str(run_dir), "-t", str(thresholds), "--baseline", str(cut), "--junit", str(tmp_path / "g.xml")])
    assert gated.exit_code == 0, gated.output
    (suite,) = ET.parse(tmp_path / "g.xml").getroot().findall("testsuite")
    warning = f"warning: baseline {cut}: the results hold 1 sample(s) but the run had 2: results.jsonl was cut short or edited"
    assert suite.find("system-err").text.startswith(warning)
    clean = runner.invoke(app, ["gate", str(run_dir), "-t", str(thresholds), "--junit", str(tmp_path / "clean.xml")])
    assert clean.exit_code == 0 and ET.parse(tmp_path / "clean.xml").getroot().find("testsuite/system-err") is None


def test_whole_runs_have_no_warning_in_gate_or_compare(tmp_path, run_dir):
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("token_f1: 0.1\n")
    gated = runner.invoke(app, ["gate", str(run_dir), "--thresholds", str(thresholds), "--baseline", str(run_dir)])
    compared = runner.invoke(app, ["compare", str(run_dir), str(run_dir), "-o", str(tmp_path / "cmp")])
    assert gated.exit_code == compared.exit_code == 0 and "warning" not in (gated.output + compared.output).lower()
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))["warnings"] == []
