"""Settings of the llama-cpp-python server the integration tests start (see conftest.py)."""

from __future__ import annotations

import socket
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
