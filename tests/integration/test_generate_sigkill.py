"""A real `ragmeter generate` process killed with SIGKILL resumes from its journal to the test
set of an uninterrupted run, asking the judge only for the missing questions. The judge is a
small OpenAI-compatible server in this process (deterministic answers, a little slow), so
the test needs no model; the embeddings are the real packaged USE model."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

KB = Path(__file__).resolve().parents[2] / "examples" / "knowledge_base"
SIZE = 12


class _FakeJudge(BaseHTTPRequestHandler):
    requests = 0

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests += 1
        time.sleep(0.1)
        last = body["messages"][-1]["content"]
        digest = hashlib.sha256(last.encode("utf-8")).hexdigest()
        if "response_format" in body:
            properties = body["response_format"]["json_schema"]["schema"]["properties"]
            reply = {"question": f"Which rule does {last[20:60].strip()} set ({digest[:6]})?"}
            if "answer" in properties:
                reply["answer"] = f"The rule in {digest[:6]}."
            content = json.dumps(reply)
        else:
            content = "Yes"
        data = json.dumps(
            {
                "id": digest[:8], "object": "chat.completion", "created": 0, "model": "fake",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        ).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def judge_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeJudge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()


def _generate(url: str, out: Path) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "ragmeter", "generate", str(KB / "en"), "--out", str(out), "--size", str(SIZE),
        "--judge-base-url", url, "--judge-model", "fake", "--verdict-mode", "single", "--concurrency", "1",
        "--no-cache", "--no-progress",
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "RAGMETER_JUDGE_API_KEY": "none"})


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def test_sigkill_then_rerun_equals_an_uninterrupted_run(tmp_path, judge_url):
    reference = _generate(judge_url, tmp_path / "uninterrupted")
    _, stderr = reference.communicate(timeout=300)
    assert reference.returncode == 0, stderr.decode()
    uninterrupted_requests = _FakeJudge.requests

    killed = tmp_path / "killed"
    victim = _generate(judge_url, killed)
    deadline = time.monotonic() + 120
    while len(_lines(killed / "journal.jsonl")) < 3:
        assert victim.poll() is None, "the run finished before it could be killed"
        assert time.monotonic() < deadline, "the run journalled too slowly"
        time.sleep(0.02)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    journalled = len(_lines(killed / "journal.jsonl"))
    assert 3 <= journalled < SIZE and not (killed / "testset.jsonl").exists()

    _FakeJudge.requests = 0
    resumed = _generate(judge_url, killed)
    _, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr.decode()
    summary = json.loads((killed / "summary.json").read_text(encoding="utf-8"))
    assert summary["resumed"] >= journalled - 1 and summary["asked"] == SIZE
    assert _FakeJudge.requests < uninterrupted_requests  # only the missing questions were asked for
    for name in ("testset.jsonl", "rejects.jsonl"):
        assert _lines(killed / name) == _lines(tmp_path / "uninterrupted" / name)
    assert not (killed / "journal.jsonl").exists()
