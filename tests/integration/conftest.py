"""Real components shared by the integration tests, each started once per test session:
llama-cpp-python's OpenAI-compatible server on the packaged model, and a PostgreSQL cluster
for the run store's tests (with ``store_url``: the same test on SQLite and PostgreSQL)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from llama_server import LOGS, N_CTX, free_port, stop_with_the_tests
from postgres_server import fresh_database, throwaway_cluster


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """llama-cpp-python's OpenAI-compatible server on the packaged model; yields its URL
    (``http://127.0.0.1:<port>``, without ``/v1``)."""
    with running_llama_server(tmp_path_factory.mktemp("llama-server") / "server.log") as url:
        yield url


@pytest.fixture(scope="session")
def second_llama_server(tmp_path_factory):
    """A second server like ``llama_server``, for runs spread over two endpoints; yields its URL."""
    with running_llama_server(tmp_path_factory.mktemp("llama-server-2") / "server.log") as url:
        yield url


@contextlib.contextmanager
def running_llama_server(log_path: Path):
    """Start llama-cpp-python's server on the packaged model, logging to ``log_path``; yields
    its URL once it answers, and stops it (its whole process group) on leaving."""
    from ragmeter.judges.local_model import llama_server_command, packaged_model_path

    for module in ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"):
        __import__(module)  # the server's own dependencies (test extras)
    model = packaged_model_path()
    port = free_port()
    command = llama_server_command(
        "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(N_CTX), "--chat_format", "chatml", "--verbose", "False",
    )  # fmt: skip
    # RAGMETER_TEST_SERVER_THREADS: CPU threads of the server (default: the server's own
    # choice, half the cores to generate and all to read prompts); 1 on a shared machine.
    threads = os.environ.get("RAGMETER_TEST_SERVER_THREADS")
    if threads:
        command += ["--n_threads", threads, "--n_threads_batch", threads]
    log = log_path.open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=stop_with_the_tests)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_ready(process, url, log_path)
        LOGS[url] = log_path
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        log.close()


def _wait_until_ready(process: subprocess.Popen, url: str, log_path: Path) -> None:
    """Return once the server lists its models; raise (with the log's tail) when it exits or takes over 180 s."""
    deadline = time.monotonic() + 180
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the llama.cpp server exited ({process.returncode}):\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/v1/models", timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the llama.cpp server was not ready in 180 s:\n{log_path.read_text()[-3000:]}") from None
            time.sleep(0.5)


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL cluster, started once for the session's store tests; yields its URL."""
    with throwaway_cluster() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """The URL of an empty database: a SQLite file, or a fresh database on the test cluster."""
    if request.param == "sqlite":
        return str(tmp_path / "store" / "runs.db")
    return fresh_database(request.getfixturevalue("postgres_server"))
