"""ragmeter answer: a user's pipeline (Python callable or HTTP endpoint) fills a test set's
responses and retrieved contexts, and ragmeter eval scores the result."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.run.pipeline_sources import PipelineSourceError, load_pipeline, post_json

runner = CliRunner()
SAMPLES = [
    {
        "id": "q1",
        "user_input": "How many approvals?",
        "reference": "Two.",
        "reference_context_ids": ["mr#1"],
        "metadata": {"answerable": True},
    },
    {"id": "q2", "user_input": "Parking fee?", "reference": "Not in the knowledge base.", "metadata": {"answerable": False}},
]
MODULE = """
def answer(question):
    if "Parking" in question:
        return {"contexts": [], "answer": "I don't know."}
    return {"contexts": ["A merge request needs two approvals."], "context_ids": ["mr#1"], "answer": "Two approvals."}

def build():
    return lambda question: (["ctx"], "built " + question)

def broken(question):
    raise RuntimeError("index not loaded")
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "my_rag_for_tests.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "testset.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SAMPLES), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_python_pipeline_fills_responses_and_eval_scores_them(workdir):
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", "my_rag_for_tests:answer", "-o", "answered.jsonl"])
    assert result.exit_code == 0, result.output
    rows = _rows(workdir / "answered.jsonl")
    assert [r["response"] for r in rows] == ["Two approvals.", "I don't know."]
    assert rows[0]["retrieved_context_ids"] == ["mr#1"] and rows[0]["reference"] == "Two."
    assert "2 of 2 questions answered" in result.output
    scored = runner.invoke(app, ["eval", "answered.jsonl", "-m", "hit_rate,refusal_accuracy", "-o", "run"])
    assert scored.exit_code == 0, scored.output
    summary = json.loads((workdir / "run" / "summary.json").read_text())
    means = {m["id"]: m["aggregate"]["mean"] for m in summary["metrics"]}
    assert means == {"hit_rate": 1.0, "refusal_accuracy": 1.0}


def test_a_factory_is_called_once_and_a_failing_question_is_recorded(workdir):
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", "my_rag_for_tests:build()", "-o", "a.jsonl"])
    assert result.exit_code == 0, result.output
    assert _rows(workdir / "a.jsonl")[0]["response"] == "built How many approvals?"
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", "my_rag_for_tests:broken", "-o", "b.jsonl"])
    assert result.exit_code == 0, result.output
    rows = _rows(workdir / "b.jsonl")
    assert all("index not loaded" in r["metadata"]["pipeline_error"] and "response" not in r for r in rows)
    assert "0 of 2 questions answered" in result.output and "Next:" not in result.output


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("my_rag_for_tests:missing", "has no function 'missing'"),
        ("no_such_module_xyz:answer", "cannot import no_such_module_xyz"),
        ("just_a_name", "give module:function"),
        ("my_rag_for_tests:answer()", "answer\\(\\) failed"),
    ],
)
def test_a_pipeline_that_cannot_be_loaded_is_a_one_line_error(workdir, spec, message):
    with pytest.raises(PipelineSourceError, match=message):
        load_pipeline(spec)
    result = runner.invoke(app, ["answer", "testset.jsonl", "-p", spec, "-o", "c.jsonl"])
    assert result.exit_code == 2 and message.replace("\\", "") in result.output and "Traceback" not in result.output
    assert not (workdir / "c.jsonl").exists()


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["question"]
        if "Parking" in question:
            body, status = b"<html>oops</html>", 200
        else:
            body, status = json.dumps({"answer": "Two.", "retrieved_contexts": ["c"], "context_ids": ["mr#1"]}).encode(), 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_an_http_endpoint_answers_and_a_malformed_reply_fails_only_its_question(workdir):
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/rag"
        result = runner.invoke(app, ["answer", "testset.jsonl", "-p", url, "-o", "h.jsonl", "--concurrency", "1"])
    finally:
        server.shutdown()
    assert result.exit_code == 0, result.output
    rows = _rows(workdir / "h.jsonl")
    assert rows[0]["response"] == "Two." and rows[0]["retrieved_context_ids"] == ["mr#1"]
    assert "not usable JSON" in rows[1]["metadata"]["pipeline_error"]


def test_an_endpoint_that_redirects_is_not_followed(workdir):
    """A redirect's address is not the endpoint the user configured: the question fails with
    the status and where it pointed, and nothing reaches that address (urllib followed a 302
    with a GET before)."""
    reached = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_GET(self):
            reached.append(self.path)
            self.send_response(200)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args):
            pass

    other = HTTPServer(("127.0.0.1", 0), Elsewhere)

    class Redirecting(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(int(self.path.rsplit("status=", 1)[1]))  # the status the URL asks for
            self.send_header("Location", f"http://user:secret@127.0.0.1:{other.server_port}/steal?q=1")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Redirecting)
    for running in (server, other):
        threading.Thread(target=running.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/rag?status="
        with pytest.raises(RuntimeError) as failure:
            post_json(url + "307", {"question": "How many approvals?"}, 5, "an object")
        result = runner.invoke(app, ["answer", "testset.jsonl", "-p", url + "302", "-o", "r.jsonl", "--concurrency", "1"])
    finally:
        server.shutdown()
        other.shutdown()
    assert str(failure.value) == (
        f"the endpoint redirected (HTTP 307) to http://127.0.0.1:{other.server_port}/steal; redirects are not followed: give that address"
    )
    assert result.exit_code == 0, result.output
    errors = [row["metadata"]["pipeline_error"] for row in _rows(workdir / "r.jsonl")]
    assert len(errors) == 2 and all(f"redirected (HTTP 302) to http://127.0.0.1:{other.server_port}/steal" in error for error in errors)
    assert reached == [] and "secret" not in result.output


class _AmbiguousHandler(BaseHTTPRequestHandler):
    """Replies by path: a repeated "answer" key, a repeated long key with control characters,
    or a number too long for Python to read."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/dupkey":
            body = b'{"answer": "right", "contexts": ["c"], "answer": "wrong"}'
        elif self.path == "/dupcontrol":
            key = b'"\\u001b[2J\\r' + b"k" * 100 + b'"'
            body = b'{"answer": "x", "contexts": ["c"], ' + key + b": 1, " + key + b": 2}"
        else:
            body = b'{"answer": "x", "contexts": ["c"], "n": 1' + b"0" * 5000 + b"}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


_UNUSABLE = "the endpoint's reply is not usable JSON:"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/dupkey", f'{_UNUSABLE} the key "answer" is given twice in one object'),
        # quoted briefly, its control characters escaped: never a raw escape sequence in a message
        ("/dupcontrol", f'{_UNUSABLE} the key "\\u001b[2J\\r{"k" * 35}"… (105 characters) is given twice in one object'),
        # Python's "Exceeds the limit (4300 digits) ... use sys.set_int_max_str_digits()" is not said
        (
            "/hugeint",
            "the endpoint's reply is not usable JSON: a number in field 'n' has more digits than can be read: "
            '"1000000000000000000000000000000000000000"… (5,001 characters)',
        ),
    ],
)
def test_an_ambiguous_or_unreadable_reply_fails_its_question_naming_the_endpoint(workdir, path, message):
    server = HTTPServer(("127.0.0.1", 0), _AmbiguousHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}{path}"
        result = runner.invoke(app, ["answer", "testset.jsonl", "-p", url, "-o", "h.jsonl"])
    finally:
        server.shutdown()
    assert result.exit_code == 0, result.output
    rows = _rows(workdir / "h.jsonl")
    assert all("response" not in r and message in r["metadata"]["pipeline_error"] for r in rows), rows
