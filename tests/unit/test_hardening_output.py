"""Hardening of what a run writes (issue 13): line separators in the data (defect 2), links
planted in --out (6), atomic reports (7), credentials of the judge's URL (8), inert Markdown
(15), strict JSON (16), a private answer cache (17)."""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from cli_helpers import run_eval, strict_json, write_jsonl
from json_http import send_json
from markdown_it import MarkdownIt
from typer.testing import CliRunner

import ragmeter.report as report_package
from ragmeter.cli import app
from ragmeter.data import files
from ragmeter.data.files import atomic_writer, write_text
from ragmeter.judges import requests
from ragmeter.results import Result
from ragmeter.run import recorder as recorder_module

runner = CliRunner()

MODEL_FREE = "exact_match,token_f1,nonllm_context_recall,ndcg@3"


@pytest.fixture
def journal_copies(monkeypatch, tmp_path):
    """The journal of each finished run, copied just before the run removes it (a finished
    run keeps its scores in results.jsonl only): a list of the copies' texts."""
    copies: list[str] = []
    finish = recorder_module.Recorder.finish

    def copying_finish(self, *args, **kwargs):
        journal = self.out_dir / "journal.jsonl"
        copies.append(journal.read_text(encoding="utf-8") if journal.exists() else "")
        return finish(self, *args, **kwargs)

    monkeypatch.setattr(recorder_module.Recorder, "finish", copying_finish)
    return copies


# ---- defect 2: U+2028 / U+2029 in any sample text --------------------------------------

SEPARATORS = "\u2028\u2029\u0085"


def _separator_rows():
    s = SEPARATORS
    return [
        {
            "id": f"one{s}id",
            "user_input": f"How long{s}is the timeout?",
            "response": f"Sixty{s}minutes.",
            "reference": f"Sixty minutes.{s}",
            "retrieved_contexts": [f"The timeout{s}is sixty minutes.", "Other."],
            "retrieved_context_ids": [f"doc{s}1", "doc2"],
            "reference_contexts": [f"The timeout{s}is sixty minutes."],
            "reference_context_ids": [f"doc{s}1"],
            "metadata": {f"note{s}key": f"value{s}", "list": [s]},
        },
        {
            "id": "two",
            "user_input": "Who approves?",
            "response": "The DBA.",
            "reference": f"The DBA{s}approves.",
            "retrieved_contexts": ["The DBA approves."],
            "retrieved_context_ids": ["doc3"],
            "reference_contexts": ["The DBA approves."],
            "reference_context_ids": ["doc3"],
        },
    ]


def _lines_as_a_reader_splits_them(path):
    """Lines as str.splitlines splits them: it breaks at U+2028, U+2029 and U+0085 too, as
    many JSON-lines readers do. Each must be a whole JSON record."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_line_separators_in_every_field_round_trip_through_every_file(tmp_path, journal_copies):
    """Defect 2: with U+2028, U+2029 and U+0085 in every text field, results.jsonl and the
    journal hold one record per line even for readers that split at those characters, every
    value reads back unchanged, and run.json and summary.json load."""
    rows = _separator_rows()
    out = tmp_path / "run"
    result = run_eval(write_jsonl(tmp_path / "data.jsonl", rows), "-m", MODEL_FREE, "-o", out)
    assert result.exit_code == 0, result.output
    records = _lines_as_a_reader_splits_them(out / "results.jsonl")
    assert [r["key"] for r in records] == [rows[0]["id"], "two"]
    first = records[0]["sample"]
    for field in ("user_input", "response", "reference", "retrieved_contexts", "retrieved_context_ids", "reference_context_ids"):
        assert first[field] == rows[0][field], field
    assert first["metadata"] == rows[0]["metadata"]
    assert records[0]["scores"]["ndcg@3"]["value"] == 1.0  # the ids with separators still match
    assert len(journal_copies) == 1
    journal = [json.loads(line) for line in journal_copies[0].splitlines()]
    assert len(journal) == 2 * len(MODEL_FREE.split(","))
    assert {r["sample"] for r in journal} == {rows[0]["id"], "two"}
    json.loads((out / "run.json").read_text(encoding="utf-8"))
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["run"]["n_samples"] == 2


def test_report_gate_and_compare_read_a_run_with_line_separators(tmp_path):
    """Defect 2: report, gate and compare work on the run directory eval wrote."""
    data = write_jsonl(tmp_path / "data.jsonl", _separator_rows())
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_eval(data, "-m", MODEL_FREE, "-o", a).exit_code == 0
    assert run_eval(data, "-m", MODEL_FREE, "-o", b).exit_code == 0
    report = runner.invoke(app, ["report", str(a)])
    assert report.exit_code == 0, report.output
    thresholds = tmp_path / "thresholds.yaml"
    thresholds.write_text("token_f1: 0.01\n")
    gate = runner.invoke(app, ["gate", str(a), "--thresholds", str(thresholds), "--baseline", str(b)])
    assert gate.exit_code == 0, gate.output
    compare = runner.invoke(app, ["compare", str(a), str(b), "-o", str(tmp_path / "cmp")])
    assert compare.exit_code == 0, compare.output
    assert "2 samples matched by id" in compare.output
    json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))


# ---- defect 6: links planted in --out --------------------------------------------------

PLANTED = (
    "report.html",
    "report.md",
    "results.jsonl",
    "summary.json",
    "run.json",
    "input_issues.jsonl",
    "journal.jsonl",
    ".results.partial",
    ".ragmeter.lock",
    "results.jsonl.tmp",
    ".report.html.tmp",
)


def _plant(out, outside, names):
    """A link in ``out`` at each name, to its own file outside (existing, with known text),
    plus one dangling link to a file outside that does not exist."""
    out.mkdir(parents=True, exist_ok=True)
    outside.mkdir(exist_ok=True)
    targets = {}
    for name in names:
        target = outside / f"target-of-{name.strip('.')}"
        target.write_text(f"outside file for {name}\n")
        link = out / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
        targets[target] = target.read_text()
    return targets


def test_links_planted_in_the_output_directory_are_never_followed(tmp_path):
    """Defect 6: eval, report and compare replace or refuse links at every name they write
    (and at the temporary names a writer might use); files outside stay untouched."""
    rows = [{"id": "a", "response": "sixty minutes", "reference": "sixty minutes"}, {"id": "b", "response": "x", "reference": "y"}]
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    out, outside = tmp_path / "run", tmp_path / "outside"
    targets = _plant(out, outside, PLANTED)
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(outside / "never-created.md")  # dangling

    result = run_eval(data, "-m", "exact_match,token_f1", "-o", out)
    assert result.exit_code == 0, result.output
    for target, text in targets.items():
        assert target.read_text() == text, target
    assert not (outside / "never-created.md").exists()
    for name in ("report.html", "report.md", "results.jsonl", "summary.json", "run.json", "input_issues.jsonl"):
        assert not (out / name).is_symlink() and (out / name).is_file(), name
    assert len((out / "results.jsonl").read_text().splitlines()) == 2

    targets = _plant(out, outside, ("report.html", "report.md", "summary.json"))
    assert runner.invoke(app, ["report", str(out)]).exit_code == 0
    for target, text in targets.items():
        assert target.read_text() == text, target
    assert "ragmeter report" in (out / "report.md").read_text()

    cmp = tmp_path / "cmp"
    targets = _plant(cmp, outside, ("compare.md", "compare.json", "compare.html"))
    assert runner.invoke(app, ["compare", str(out), str(out), "-o", str(cmp)]).exit_code == 0
    for target, text in targets.items():
        assert target.read_text() == text, target
    assert not (cmp / "compare.json").is_symlink()


def test_a_journal_link_planted_before_a_resumed_run_is_not_written_through(tmp_path):
    """Defect 6, resuming: a link at journal.jsonl pointing at a file outside (that looks
    like a journal) is neither read as the journal nor appended to."""
    rows = [{"id": "a", "response": "sixty minutes", "reference": "sixty minutes"}]
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    out = tmp_path / "run"
    assert run_eval(data, "-m", "token_f1", "-o", out).exit_code == 0
    outside = tmp_path / "victim.jsonl"
    outside.write_text('{"sample": "a", "metric": "exact_match"}\n')
    (out / "journal.jsonl").symlink_to(outside)
    result = run_eval(data, "-m", "token_f1,exact_match", "-o", out)
    assert result.exit_code == 0, result.output
    assert outside.read_text() == '{"sample": "a", "metric": "exact_match"}\n'
    # token_f1 is reused from the earlier run's results; exact_match is computed, not taken from the link.
    assert "1 scores computed, 1 resumed" in result.output


# ---- defect 7: atomic reports ----------------------------------------------------------


def test_a_failure_while_writing_leaves_the_previous_file_and_no_temporary(tmp_path):
    """Defect 7, the writer: an error after part of the new text was written leaves the old
    file whole and removes the temporary file."""
    target = tmp_path / "report.html"
    target.write_text("previous report")
    with pytest.raises(RuntimeError), atomic_writer(target) as handle:
        handle.write("<html>half of the new")
        handle.flush()
        raise RuntimeError("renderer failed midway")
    assert target.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_the_new_file_is_renamed_into_place_from_the_same_directory(tmp_path, monkeypatch):
    """Defect 7: the text is written to a temporary file beside the target and renamed over
    it; until the rename the target holds the old text in full."""
    target = tmp_path / "summary.json"
    target.write_text("old")
    seen = []
    real_replace = os.replace

    def spying_replace(source, destination):
        written = Path(source).read_text()
        seen.append((os.path.dirname(os.fspath(source)), os.fspath(destination), written, target.read_text()))
        return real_replace(source, destination)

    monkeypatch.setattr(files.os, "replace", spying_replace)
    write_text(target, "new text")
    assert seen == [(str(tmp_path), str(target), "new text", "old")]
    assert target.read_text() == "new text"


def test_a_rendering_failure_keeps_the_previous_report(tmp_path, monkeypatch):
    """Defect 7, the reports: when rendering report.html fails, `ragmeter report` exits 2 and
    the report.html of the earlier rendering is intact, with no temporary file left."""
    data = write_jsonl(tmp_path / "data.jsonl", [{"id": "a", "response": "x y", "reference": "x z"}])
    out = tmp_path / "run"
    assert run_eval(data, "-m", "token_f1", "-o", out).exit_code == 0
    before = (out / "report.html").read_bytes()
    assert b"</html>" in before

    def failing_render(summary, result):
        raise MemoryError("out of memory while rendering")

    monkeypatch.setattr(report_package, "render_html", failing_render)
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert (out / "report.html").read_bytes() == before
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(MemoryError):
        report_package.write_reports(Result.load(out), out)
    assert (out / "report.html").read_bytes() == before


# ---- defect 8: credentials in --judge-base-url -----------------------------------------


class _EchoHandler(BaseHTTPRequestHandler):
    """A judge endpoint that fails every request with HTTP 500 (retry at once) and echoes
    the request's path and headers in its error message, as some servers do."""

    journal: ClassVar[Path | None] = None
    journal_snapshots: ClassVar[list[str]] = []

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.journal is not None and self.journal.exists():
            self.journal_snapshots.append(self.journal.read_text(encoding="utf-8"))
        message = f"cannot serve {self.path} with headers {dict(self.headers)}"
        send_json(self, {"error": {"message": message, "type": "server_error"}}, 500, {"Retry-After": "0"})

    def log_message(self, *args):
        pass


@pytest.fixture
def echo_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _files_text(directory):
    return {p.name: p.read_text(encoding="utf-8", errors="replace") for p in directory.rglob("*") if p.is_file()}


CREDENTIAL_ROWS = [
    {"id": f"s{i}", "user_input": "How long is the timeout?", "response": "Sixty minutes.", "reference": "Sixty minutes."} for i in range(3)
]


def test_credentials_echoed_by_a_failing_endpoint_reach_no_file_and_no_console(tmp_path, echo_server):
    """Defect 8: the user, password and api-key query value of --judge-base-url, the API key
    from the environment, and the Basic authorization the user information would become (it is
    not sent), echoed back by the endpoint in its errors, appear in no file of the run (results, journal,
    summary, run.json, reports, lock) nor on the console of a real `ragmeter eval` process
    (fixed: retry warnings printed the server's text raw; the lock file kept the command
    line; an echoed Basic header was not masked)."""
    user, password, query_key, env_key = "alice-user-7", "PaSsWoRd-7f3a9", "QuErYkEy-41bd2", "sk-envkey-0c9e8d7f6a5b"
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    out = tmp_path / "run"
    _EchoHandler.journal, _EchoHandler.journal_snapshots = out / "journal.jsonl", []
    port = echo_server.server_address[1]
    url = f"http://{user}:{password}@127.0.0.1:{port}/v1?api-key={query_key}"
    data = write_jsonl(tmp_path / "data.jsonl", CREDENTIAL_ROWS)
    # The URL comes early on the command line: the lock file records the first arguments.
    command = [sys.executable, "-m", "ragmeter", "eval", "--judge-base-url", url, str(data), "-m", "token_f1,answer_relevancy"]
    command += ["-o", str(out), "--judge-model", "m", "--verdict-mode", "batch", "--concurrency", "1", "--no-progress"]
    process = subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "RAGMETER_JUDGE_API_KEY": env_key})
    assert process.returncode == 0, process.stderr
    console = process.stdout + process.stderr
    written = _files_text(out)
    assert {"results.jsonl", "summary.json", "run.json", "report.md", "report.html", ".ragmeter.lock"} <= set(written)
    # The echo happened: the failures, with the server's text, reached the console and the files.
    assert "judge request failed (HTTP 500: " in console and "cannot serve" in written["results.jsonl"]
    assert len(_EchoHandler.journal_snapshots) >= 2 and "cannot serve" in _EchoHandler.journal_snapshots[-1]
    # The authorization header was echoed, masked: the key's, not a Basic one made of the URL's
    # user and password (it replaced the key), which are not sent at all.
    assert "'authorization': '*** [api key]'" in console + written["results.jsonl"]
    everything = {"console": console, **written, **{f"journal #{i}": t for i, t in enumerate(_EchoHandler.journal_snapshots)}}
    for where, text in everything.items():
        for secret in (user, password, query_key, env_key, basic):
            assert secret not in text, (secret, where)
    assert f"--judge-base-url http://***@127.0.0.1:{port}/v1?api-key=***" in written[".ragmeter.lock"]  # recorded, masked


def test_an_in_process_run_prints_each_judge_warning_once_and_never_to_the_root_loggers_handlers(tmp_path, echo_server):
    """An application with its own root logging that runs a command in-process: the judge's
    retry warnings are printed once, masked, on the console, and not a second time, raw, by
    the root logger's handler (they propagated to it, with the endpoint's echo of the
    credentials). After the command, ragmeter's logger is as it was."""
    _EchoHandler.journal, _EchoHandler.journal_snapshots = None, []
    password = "PaSsWoRd-e41a"
    url = f"http://carol:{password}@127.0.0.1:{echo_server.server_address[1]}/v1"
    data = write_jsonl(tmp_path / "data.jsonl", CREDENTIAL_ROWS[:1])
    root_stream = io.StringIO()
    root_handler = logging.StreamHandler(root_stream)
    logging.getLogger().addHandler(root_handler)
    ragmeter_logger = logging.getLogger("ragmeter")
    handlers_before = list(ragmeter_logger.handlers)
    try:
        command = ["eval", str(data), "-m", "answer_relevancy", "-o", str(tmp_path / "run"), "--judge-base-url", url]
        result = runner.invoke(app, [*command, "--judge-model", "m", "--verdict-mode", "batch", "--concurrency", "1", "--no-progress"])
        during = root_stream.getvalue()
        logging.getLogger("ragmeter.judges").warning("after the command")
    finally:
        logging.getLogger().removeHandler(root_handler)
    assert result.exit_code == 0, result.output
    retries = [line for line in result.output.splitlines() if "judge request failed (HTTP 500: " in line]
    assert retries and len(retries) == len(set(retries))  # each retry once, not once per handler
    assert password not in result.output
    assert during == ""
    # Afterwards a library user's own logging gets ragmeter's records again, and only there.
    assert root_stream.getvalue() == "after the command\n"
    assert ragmeter_logger.handlers == handlers_before


def test_credentials_never_surface_when_the_judge_port_is_closed(tmp_path, monkeypatch, journal_copies):
    """Defect 8 with the judge at a closed port (every call fails after its retries): no
    credential of the URL or key in any file or in the console output."""

    async def no_wait(seconds):
        return None

    monkeypatch.setattr(requests, "sleep", no_wait)
    user, password, query_key, env_key = "bob-user-3", "PaSsWoRd-b81c", "QuErYkEy-77e0", "sk-envkey-5d4c3b2a1f0e"
    monkeypatch.setenv("RAGMETER_JUDGE_API_KEY", env_key)
    closed = _closed_port()
    out = tmp_path / "run"
    url = f"http://{user}:{password}@127.0.0.1:{closed}/v1?api-key={query_key}"
    result = run_eval(
        write_jsonl(tmp_path / "data.jsonl", CREDENTIAL_ROWS[:2]),
        *("-m", "token_f1,answer_relevancy", "-o", out, "--judge-base-url", url, "--judge-model", "m", "--verdict-mode", "batch"),
    )
    assert result.exit_code == 0, result.output
    written = _files_text(out)
    records = [json.loads(line) for line in written["results.jsonl"].splitlines()]
    assert all(r["scores"]["answer_relevancy"]["failed"] for r in records)
    assert "connection error" in result.output
    for where, text in {"console": result.output, "journal": journal_copies[0], **written}.items():
        for secret in (user, password, query_key, env_key, base64.b64encode(f"{user}:{password}".encode()).decode()):
            assert secret not in text, (secret, where)


def _closed_port():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---- defect 15: report.md is never live Markdown ---------------------------------------

HOSTILE_MD = "![x](http://evil/img.png) and [link](http://evil) <img src=x onerror=alert(1)> **bold** http://evil.example/auto"


def _tokens(tokens):
    for token in tokens:
        yield token
        yield from _tokens(token.children or [])


def test_report_md_renders_no_link_image_or_html_from_the_data(tmp_path):
    """Defect 15: sample text, ids, an input issue quoting a bad value and a source file name
    full of Markdown links and images are plain text in report.md: parsed with markdown-it
    (CommonMark with tables and GFM autolinks off or on), no image, link or raw HTML token
    comes from them, and the text itself is still there."""
    rows = [
        {
            "id": "[link](http://evil)",
            "user_input": HOSTILE_MD,
            "response": "wrong",
            "reference": "right answer",
            "retrieved_contexts": ["unrelated"],
            "reference_contexts": ["the right passage"],
        },
        {"id": "![x](http://evil/img.png)", "user_input": HOSTILE_MD, "response": ["![x](http://evil/img.png)"], "reference": "r"},
    ]
    data = write_jsonl(tmp_path / "![img](evil.png) [a](http:evil).jsonl", rows)
    out = tmp_path / "run"
    result = run_eval(data, "-m", "token_f1,nonllm_context_recall", "-o", out)
    assert result.exit_code == 0, result.output
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "evil" in text  # the data is in the report, as text
    for parser in (MarkdownIt("commonmark").enable("table"), MarkdownIt("gfm-like")):
        tokens = list(_tokens(parser.parse(text)))
        links = [t.attrGet("href") for t in tokens if t.type == "link_open"]
        images = [t.attrGet("src") for t in tokens if t.type == "image"]
        html = [t.content for t in tokens if t.type in ("html_inline", "html_block")]
        assert images == [] and html == [], (images, html)
        assert not [href for href in links if "evil" in str(href)], links
        rendered = parser.render(text)
        assert "<img" not in rendered and "<a " not in rendered
        assert "![x](http://evil/img.png)" in rendered.replace("&quot;", '"')  # shown literally


# ---- defect 16: strict JSON, no NaN or Infinity ----------------------------------------


def test_no_file_holds_nan_or_infinity(tmp_path, journal_copies):
    """Defect 16: input with NaN and infinities (metadata, latency, tokens, cost), a metric
    with a single scored sample (no spread) and one that scores nothing: every JSON file the
    run and a comparison write parses with a strict parser."""
    lines = [
        '{"id": "a", "response": "x y", "reference": "x z", "metadata": {"latency_ms": NaN, "tokens": Infinity, "cost_usd": -Infinity, "w": NaN}}',
        '{"id": "b", "response": "p", "reference": "p", "metadata": {"latency_ms": 1e999, "tokens": 12, "cost_usd": 0.5}}',
    ]
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    result = run_eval(data, "-m", "token_f1,latency_ms,total_tokens,cost_usd", "-o", out)
    assert result.exit_code == 0, result.output
    records = [strict_json(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert records[0]["sample"]["metadata"]["w"] is None
    assert records[0]["scores"]["latency_ms"]["value"] is None and records[1]["scores"]["latency_ms"]["value"] is None
    summary = strict_json((out / "summary.json").read_text())
    aggregates = {m["id"]: m["aggregate"] for m in summary["metrics"]}
    assert aggregates["latency_ms"]["n_scored"] == 0 and aggregates["latency_ms"]["mean"] is None
    assert aggregates["total_tokens"]["n_scored"] == 1
    strict_json((out / "run.json").read_text())
    for line in (out / "input_issues.jsonl").read_text().splitlines():
        strict_json(line)
    for line in journal_copies[0].splitlines():
        strict_json(line)
    assert runner.invoke(app, ["compare", str(out), str(out), "-o", str(tmp_path / "cmp")]).exit_code == 0
    strict_json((tmp_path / "cmp" / "compare.json").read_text())


def test_the_json_writers_turn_non_finite_numbers_into_null(tmp_path):
    """Defect 16 at the writer: NaN, infinities and numpy's NaN become null."""
    import numpy as np

    files.write_json(tmp_path / "a.json", {"nan": float("nan"), "inf": [float("inf"), -float("inf")], "np": np.float64("nan")})
    assert strict_json((tmp_path / "a.json").read_text()) == {"nan": None, "inf": [None, None], "np": None}
    assert strict_json(files.json_line({"x": float("nan")})) == {"x": None}


# ---- defect 17: the answer cache is private ---------------------------------------------


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_cache_directory_is_0700_and_its_database_0600(tmp_path, monkeypatch):
    """Defect 17: the cache (prompts and answers) is created readable by its owner only, and
    an existing cache left open to others is tightened; -wal and -shm files too."""
    cache = tmp_path / "nested" / "cache"
    monkeypatch.setenv("RAGMETER_CACHE_DIR", str(cache))
    old_umask = os.umask(0)  # nothing from the umask: the modes are the code's
    try:
        data = write_jsonl(tmp_path / "data.jsonl", [{"id": "a", "response": "x", "reference": "x"}])
        assert run_eval(data, "-m", "exact_match", "-o", tmp_path / "run").exit_code == 0
        assert _mode(cache) == 0o700
        assert _mode(cache / "cache.sqlite") == 0o600

        shutil.rmtree(cache)
        cache.mkdir(mode=0o777)
        (cache / "cache.sqlite").touch(mode=0o666)
        os.chmod(cache, 0o777)
        os.chmod(cache / "cache.sqlite", 0o666)
        assert run_eval(data, "-m", "exact_match", "-o", tmp_path / "run2").exit_code == 0
        assert _mode(cache) == 0o700
        assert _mode(cache / "cache.sqlite") == 0o600
    finally:
        os.umask(old_umask)
