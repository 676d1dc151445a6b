"""Control characters from the data (ANSI colours, a clear screen, an OSC 8 hyperlink, a
bidirectional override, a line break) never reach a terminal raw: not in report.md,
compare.md or sweep.md, which CI logs print, and not on the console, where a line break in a
configuration's name printed a line of its own that looked like the tool's. Values report.md
shows as code spans (the start time, version, sources) are read there as they are, yet inert."""

from __future__ import annotations

import json
import re

from cli_helpers import token_f1_run
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data.text import visible_controls
from ragmeter.report.markdown import md_code, md_text

runner = CliRunner()

HOSTILE_ID = "ansi-\x1b[31mRED\x1b[0m"
HOSTILE_QUESTION = "Q \x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\ \x1b[2J abc\u202etxt.exe \x9b1m"
RAW = ("\x1b", "\u202e", "\x9b")


def test_visible_controls_escapes_what_drives_a_terminal_and_keeps_text():
    assert visible_controls("a\x1b[2Jb\nc\u202ed\x9b") == "a\\x1b[2Jb\\nc\\u202ed\\x9b"
    assert visible_controls("中文 tab\tok é") == "中文 tab\tok é"
    for text in (md_text(HOSTILE_QUESTION), md_code(HOSTILE_QUESTION), md_code(HOSTILE_ID)):
        assert not any(raw in text for raw in RAW), text
    assert md_code(HOSTILE_ID) == "`ansi-\\x1b[31mRED\\x1b[0m`"


def test_a_cut_never_splits_the_escape_of_a_control():
    """The Markdown report cuts a long value to its limit after the controls became escapes:
    the cut could end in half of one (``\\x1``, ``\\u20``, a lone backslash)."""
    for limit in range(2, 16):
        for text in ("abcdef\x1b[2J" + "x" * 20, "a\u202eb" * 10, "\x9b" * 20, "中" * 5 + "\x1b" * 10):
            flat = md_code(text, limit).strip("`")
            assert len(flat) <= limit and flat.endswith("…"), (limit, text, flat)
            shown = flat.removesuffix("…")
            assert visible_controls(text).startswith(shown), (limit, text, flat)
            assert not re.search(r"\\(?!x[0-9a-f]{2}|u[0-9a-f]{4})", shown), (limit, text, flat)  # no partial escape left
            escaped = md_text(text, limit)
            assert escaped.endswith("…") and escaped.count("\\\\") == shown.count("\\"), (limit, text, escaped)
    assert md_text("ab\x1bcd", 6) == "ab…" and md_code("ab\x1bcd", 7) == "`ab\\x1b…`"


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_report_and_compare_markdown_hold_no_raw_control(tmp_path):
    rows = [
        {"id": HOSTILE_ID, "user_input": HOSTILE_QUESTION, "response": "a", "reference": "b"},
        {"id": "plain", "user_input": "q", "response": "b", "reference": "b"},
    ]
    _write(tmp_path / "a.jsonl", rows)
    _write(tmp_path / "b.jsonl", [{**row, "response": "b"} for row in rows])
    for name in ("a", "b"):
        result = runner.invoke(app, ["eval", str(tmp_path / f"{name}.jsonl"), "-m", "token_f1", "-o", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "cmp")])
    assert result.exit_code == 0, result.output
    report = (tmp_path / "a" / "report.md").read_text(encoding="utf-8")
    assert "ansi-\\x1b[31mRED" in report  # the sample is listed, its escape visible
    for path in (tmp_path / "a" / "report.md", tmp_path / "cmp" / "compare.md"):
        text = path.read_text(encoding="utf-8")
        assert not any(raw in text for raw in RAW), path


def test_a_line_break_in_a_configuration_prints_no_line_of_its_own(tmp_path):
    _write(tmp_path / "q.jsonl", [{"id": f"q{i}", "user_input": "q", "reference": "w1 w2 w3 w4"} for i in range(3)])
    fake = "error: FAKE LINE from the grid"
    (tmp_path / "sweep.yaml").write_text(
        "pipeline: sweep_pipeline:answer\nconfigs:\n"
        f"  - {{chunk_size: 512, top_k: 5, note: {json.dumps('a' + chr(10) + fake + chr(27) + '[2J')}}}\n"
        "  - {chunk_size: 256, top_k: 1}\n",
        encoding="utf-8",
    )
    result = runner.invoke(
        app, ["sweep", str(tmp_path / "q.jsonl"), "--grid", str(tmp_path / "sweep.yaml"), "-m", "token_f1", "-o", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    assert not any(line.startswith(fake) for line in result.output.splitlines()), result.output
    assert f"\\n{fake}\\x1b[2J" in result.output and "\x1b" not in result.output
    sweep_md = (tmp_path / "out" / "sweep.md").read_text(encoding="utf-8")
    assert f"a {fake}\\x1b[2J" in sweep_md and "\x1b" not in sweep_md  # one line: the break is a space


def test_report_md_shows_start_time_version_and_sources_as_code_spans(tmp_path):
    """report.md read raw `started 2026\\-12\\-07T13\\:17...`, every '-', ':' and '.' of the time,
    version and file name backslashed; code spans show them as they are, and Markdown in them inert."""
    run_dir = token_f1_run(tmp_path)
    text = (run_dir / "report.md").read_text(encoding="utf-8")
    header = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    run = header["run"]
    assert (
        f"samples from `{tmp_path / 'data.jsonl'}`; started `{run['started_at']}`, {run['seconds']:.1f} s; ragmeter `{run['ragmeter_version']}`."
        in text
    )
    header["run"].update(started_at="`x` **b** <i>", ragmeter_version="[v](http://evil)", sources=["![i](e.png)"])
    (run_dir / "run.json").write_text(json.dumps(header), encoding="utf-8")
    assert runner.invoke(app, ["report", str(run_dir)]).exit_code == 0
    line = (run_dir / "report.md").read_text(encoding="utf-8").splitlines()[2]
    tokens = MarkdownIt("gfm-like").parseInline(line)[0].children
    assert [t.type for t in tokens if t.type not in ("text", "code_inline")] == []
    assert [t.content for t in tokens if t.type == "code_inline"] == ["![i](e.png)", "`x` **b** <i>", "[v](http://evil)"]


def test_report_md_shows_the_judge_model_and_url_as_code_spans(tmp_path):
    """The Judge line went through md_text: raw report.md read 'openai Qwen/Qwen2\\.5\\-7B at
    http\\://127\\.0\\.0\\.1\\:8000/v1'; each value from the run is now a code span, Markdown in it inert."""
    run_dir = token_f1_run(tmp_path)
    header = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    header["run"]["judge"] = {"backend": "openai", "model": "Qwen/Qwen2.5-7B", "base_url": "http://127.0.0.1:8000/v1"}
    (run_dir / "run.json").write_text(json.dumps(header), encoding="utf-8")
    assert runner.invoke(app, ["report", str(run_dir)]).exit_code == 0
    text = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "Judge: `openai` `Qwen/Qwen2.5-7B` at `http://127.0.0.1:8000/v1`." in text
    header["run"]["judge"] = {"backend": "openai", "model": "`x` **b** <i>", "base_url": "[v](http://evil)", "verdict_mode": "<b>m|"}
    (run_dir / "run.json").write_text(json.dumps(header), encoding="utf-8")
    assert runner.invoke(app, ["report", str(run_dir)]).exit_code == 0
    (line,) = [row for row in (run_dir / "report.md").read_text(encoding="utf-8").splitlines() if row.startswith("Judge:")]
    tokens = MarkdownIt("gfm-like").parseInline(line)[0].children
    assert [t.type for t in tokens if t.type not in ("text", "code_inline")] == []
    assert [t.content for t in tokens if t.type == "code_inline"] == ["openai", "`x` **b** <i>", "[v](http://evil)", "<b>m|"]


def test_a_pipe_is_escaped_only_in_a_table_cell(tmp_path):
    """md_code wrote every '|' as '\\|': in a table cell GFM reads it as the cell's '|', but in a
    sentence a code span shows the backslash, so report.md's sources line read `data\\|v2.jsonl`."""
    assert md_code("a|b") == "`a|b`" and md_code("a|b", cell=True) == "`a\\|b`"
    run_dir = token_f1_run(tmp_path)
    header = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    header["run"]["sources"] = ["data|v2.jsonl"]
    header["metrics"][0]["id"] = "token|f1"
    (run_dir / "run.json").write_text(json.dumps(header), encoding="utf-8")
    lines = [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    for record in lines:
        for part in ("scores", "seconds", "usage", "configs"):
            record[part] = {"token|f1": record[part]["token_f1"]}
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    assert runner.invoke(app, ["report", str(run_dir)]).exit_code == 0
    text = (run_dir / "report.md").read_text(encoding="utf-8")
    line = text.splitlines()[2]
    spans = [t.content for t in MarkdownIt("gfm-like").parseInline(line)[0].children if t.type == "code_inline"]
    assert spans[0] == "data|v2.jsonl", line
    row = next(row for row in text.splitlines() if row.startswith("| `token"))
    assert row.startswith("| `token\\|f1` | ") and len(re.findall(r"(?<!\\)\|", row)) == 10, row  # the id's '|' splits no cell
