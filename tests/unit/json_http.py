"""A real local HTTP server that answers every POST with JSON, for tests of code that talks HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, reply: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> None:
    """Answer the request ``handler`` is serving with ``reply`` as JSON, ``status`` and ``headers``."""
    body = json.dumps(reply).encode()
    handler.send_response(status)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def json_server(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Iterator[str]:
    """Serve ``answer(request body) -> reply body`` on 127.0.0.1 (HTTP/1.1, keep-alive) while
    the block runs; yields the server's base URL (``http://127.0.0.1:PORT``)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            send_json(self, answer(json.loads(self.rfile.read(int(self.headers["Content-Length"])))))

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
