"""Settings of the llama-cpp-python server the integration tests start (see conftest.py)."""

from __future__ import annotations

import ctypes
import signal
import socket
import sys
from pathlib import Path

#: The server's context window, and the model name the tests send (the server serves one).
N_CTX = 4096
MODEL = "qwen2.5-coder-1.5b-instruct"
#: Each running server's log (its URL, without ``/v1``, to the file), where uvicorn writes a
#: line per request: tests count a server's requests there.
LOGS: dict[str, Path] = {}


def requests_served(url: str) -> int:
    """Chat completion requests the server at ``url`` has answered so far, from its log."""
    return LOGS[url].read_text(encoding="utf-8", errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_with_the_tests() -> None:
    """In a server's child process before it starts (``preexec_fn``): on Linux, the kernel sends
    it SIGTERM when the test process dies, even by SIGKILL, where no ``finally`` runs. Elsewhere
    nothing (the fixture's ``finally`` still stops it on a normal exit)."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
