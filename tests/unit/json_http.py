"""A real local HTTP server that answers every POST (with JSON, or as a test says), for tests of code that talks HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, reply: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> None:
    """Answer the request ``handler`` is serving with ``reply`` as JSON, ``status`` and ``headers``."""
    send(handler, status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(reply).encode())


def send(handler: BaseHTTPRequestHandler, status: int, headers: Mapping[str, str], body: bytes) -> None:
    """Answer the request ``handler`` is serving with ``status``, ``headers`` and ``body`` as given."""
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def json_server(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Iterator[str]:
    """Serve ``answer(request body) -> reply body`` on 127.0.0.1 (HTTP/1.1, keep-alive) while
    the block runs; yields the server's base URL (``http://127.0.0.1:PORT``)."""
    with serving(lambda handler, body: send_json(handler, answer(json.loads(body)))) as url:
        yield url


@contextmanager
def serving(post: Callable[[BaseHTTPRequestHandler, bytes], None], port: int = 0) -> Iterator[str]:
    """Serve every POST on 127.0.0.1 (HTTP/1.1, keep-alive) with ``post(handler, request body)``,
    which answers it, while the block runs; yields the server's base URL (``http://127.0.0.1:PORT``).
    ``port``: the port to listen on (0: any free one)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            post(self, self.rfile.read(int(self.headers["Content-Length"])))

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
