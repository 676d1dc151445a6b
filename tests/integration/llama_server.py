"""Settings of the llama-cpp-python server the integration tests start (see conftest.py)."""

from __future__ import annotations

import socket

#: The server's context window, and the model name the tests send (the server serves one).
N_CTX = 4096
MODEL = "qwen2.5-coder-1.5b-instruct"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
