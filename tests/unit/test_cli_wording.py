"""Edge cases of the store and trace commands: what the console says when nothing was stored,
one more kind of issue, the unit a skipped issue was; a monitor that would never pause."""

from __future__ import annotations

import json

from cli_helpers import runner
from test_monitor import traces

from ragmeter.cli import app
from ragmeter.cli.issues import print_issues
from ragmeter.data import InputIssue


def test_an_import_that_could_read_no_file_says_nothing_was_stored(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    done = runner.invoke(app, ["traces", "import", str(folder), "--store", str(tmp_path / "r.db"), "--no-embed"])
    assert done.exit_code == 2 and done.output.strip().endswith("1 of 1 trace file(s) could not be read; nothing was stored")
    done = runner.invoke(app, ["runs", "import", str(folder), "--store", str(tmp_path / "r.db")])
    assert done.exit_code == 2 and done.output.strip().endswith("1 of 1 run directories could not be read; nothing was stored")


def test_a_skipped_trace_line_is_called_a_line(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(span.to_dict()) + "\n" for span in traces(1)) + '{"trace_id": \n')
    done = runner.invoke(app, ["traces", "import", str(path), "--store", str(tmp_path / "r.db"), "--no-embed"])
    assert done.exit_code == 0 and "(line skipped)" in done.output and "(row skipped)" not in done.output, done.output


def test_one_kind_of_issue_left_over_is_one_kind(capsys):
    issues = [InputIssue(source="f.jsonl", location=f"line {n}", field=None, message=f"problem {n}", skipped=True) for n in range(13)]
    print_issues(issues, limit=12, written=False)
    captured = capsys.readouterr()
    said = " ".join((captured.out + captured.err).split())
    assert "… and 1 more kind of issue" in said and "kinds" not in said


def test_the_monitor_refuses_to_wait_no_time_between_reads(tmp_path):
    """--interval 0 read the store again and again without a pause when no trace was new."""
    done = runner.invoke(app, ["monitor", "-m", "latency_ms", "--store", str(tmp_path / "r.db"), "--interval", "0"])
    assert done.exit_code == 2 and "--interval" in done.output and "0.1" in done.output, done.output
