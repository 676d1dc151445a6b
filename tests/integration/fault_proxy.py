"""A fault-injecting HTTP reverse proxy for tests, on plain asyncio (no dependencies).

It runs in a thread with its own event loop, in front of an HTTP/1.1 server, and numbers
the ``POST .../chat/completions`` requests it receives (1, 2, 3...). A request whose number
is scheduled, or the first unserved request whose body contains a scheduled text, gets a
fault instead of (or on top of) the upstream answer:

- ``"429"``: 429 Too Many Requests with ``Retry-After: 1``.
- ``"500"``: 500 Internal Server Error.
- ``"hang"``: no answer; the connection stays open until the client gives up.
- ``"truncate_body"``: the upstream's real 200 response, its body cut in the middle
  (invalid JSON).
- ``"truncate_content"``: the upstream's real 200 response, valid JSON, but the message
  content cut at 40 % (``finish_reason`` set to ``"length"``).

A truncation scheduled on a request the upstream does not answer with 200 moves to the
next request. Everything else passes through. ``hits`` lists ``(request number, fault)`` for each fault
served; ``timeline`` has ``(number, fault, start, end, status)`` for every numbered request
(times from ``time.monotonic()``; status ``None`` when no answer was sent). One request
per connection (the proxy answers ``Connection: close``).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

FAULTS = ("429", "500", "hang", "truncate_body", "truncate_content")
#: Faults the client should retry (the others exercise reply repair).
RETRYABLE = {"429", "500", "hang", "truncate_body"}

_REASONS = {200: "OK", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway"}


class FaultProxy:
    """Args:
    upstream: ``(host, port)`` of the real server.
    by_number: Fault of each scheduled request number.
    by_text: ``(text, fault)`` pairs: the first request whose body contains the text
        (and has no numbered fault) gets the fault, once.
    hang_limit: Longest a hang lasts if the client never gives up, seconds.
    """

    def __init__(
        self,
        upstream: tuple[str, int],
        by_number: dict[int, str] | None = None,
        by_text: list[tuple[str, str]] | None = None,
        hang_limit: float = 120.0,
    ):
        self.upstream = upstream
        self.by_number = dict(by_number or {})
        self.by_text = list(by_text or [])
        for fault in [*self.by_number.values(), *(f for _, f in self.by_text)]:
            if fault not in FAULTS:
                raise ValueError(f"unknown fault {fault!r}")
        self.hang_limit = hang_limit
        self.hits: list[tuple[int, str]] = []
        self._carried: list[str] = []  # truncations that found no 200 to truncate
        self.timeline: list[tuple[int, str | None, float, float, int | None]] = []
        self.requests = 0
        self.port: int | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._tasks: set[asyncio.Task] = set()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        self._thread = threading.Thread(target=self._run, name="fault-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the fault proxy did not start")
        if self._error is not None:
            raise RuntimeError("the fault proxy failed to start") from self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported by start()
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await server.wait_closed()

    # ---- one request -------------------------------------------------------------------

    def _fault_for(self, method: str, target: str, body: bytes) -> tuple[int, str | None]:
        if method != "POST" or not target.rstrip("/").endswith("/chat/completions"):
            return 0, None
        with self._lock:
            self.requests += 1
            number = self.requests
            fault = self.by_number.pop(number, None)
            if self._carried:  # carried faults first; this request's own waits its turn
                if fault is not None:
                    self._carried.append(fault)
                fault = self._carried.pop(0)
            if fault is None:
                text = body.decode("utf-8", errors="replace")
                for index, (needle, candidate) in enumerate(self.by_text):
                    if needle in text:
                        fault = candidate
                        del self.by_text[index]
                        break
        return number, fault

    def _served(self, number: int, fault: str | None, applied: bool = True) -> None:
        with self._lock:
            if fault is None:
                return
            if applied:
                self.hits.append((number, fault))
            else:
                self._carried.append(fault)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        number, fault, status, start = 0, None, None, time.monotonic()
        try:
            method, target, headers, body = await _read_request(reader)
            start = time.monotonic()
            number, fault = self._fault_for(method, target, body)
            if fault in ("hang", "429", "500"):
                self._served(number, fault)
            if fault == "hang":
                try:
                    await asyncio.wait_for(reader.read(), self.hang_limit)  # until the client leaves
                except asyncio.TimeoutError:
                    pass
                return
            if fault == "429":
                status = 429
                await _respond(writer, 429, {"Retry-After": "1"}, _error_body("rate limit reached (injected)", "rate_limit_exceeded"))
                return
            if fault == "500":
                status = 500
                await _respond(writer, 500, {}, _error_body("internal error (injected)", "server_error"))
                return
            upstream_status, reply_headers, reply = await self._forward(method, target, headers, body)
            if fault is not None:
                self._served(number, fault, applied=upstream_status == 200)
            if upstream_status == 200 and fault == "truncate_body":
                reply = reply[: len(reply) // 2]
            elif upstream_status == 200 and fault == "truncate_content":
                reply = _truncate_content(reply)
            await _respond(writer, upstream_status, reply_headers, reply)
            status = upstream_status
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:  # the proxy is stopping
            pass
        finally:
            if number:
                self.timeline.append((number, fault, start, time.monotonic(), status))
            self._tasks.discard(task)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass

    async def _forward(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes):
        host, port = self.upstream
        reader, writer = await asyncio.open_connection(host, port)
        try:
            lines = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
            lines += [f"{k}: {v}" for k, v in headers if k.lower() not in ("host", "connection", "transfer-encoding", "content-length")]
            lines.append(f"Content-Length: {len(body)}")
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
            await writer.drain()
            status_line = (await reader.readuntil(b"\r\n")).decode("latin-1")
            status = int(status_line.split(" ", 2)[1])
            reply_headers = await _read_headers(reader)
            reply = await _read_body(reader, reply_headers, until_eof=True)
        finally:
            writer.close()
        keep = {k: v for k, v in reply_headers if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server")}
        return status, keep, reply


# ---- HTTP/1.1 plumbing -----------------------------------------------------------------


async def _read_request(reader: asyncio.StreamReader):
    request_line = (await reader.readuntil(b"\r\n")).decode("latin-1").rstrip("\r\n")
    method, target, _ = request_line.split(" ", 2)
    headers = await _read_headers(reader)
    body = await _read_body(reader, headers, until_eof=False)
    return method, target, headers, body


async def _read_headers(reader: asyncio.StreamReader) -> list[tuple[str, str]]:
    headers = []
    while True:
        line = (await reader.readuntil(b"\r\n")).decode("latin-1").rstrip("\r\n")
        if not line:
            return headers
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip()))


async def _read_body(reader: asyncio.StreamReader, headers: list[tuple[str, str]], until_eof: bool) -> bytes:
    lowered = {k.lower(): v for k, v in headers}
    if "chunked" in lowered.get("transfer-encoding", "").lower():
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                return body
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    if "content-length" in lowered:
        return await reader.readexactly(int(lowered["content-length"]))
    return await reader.read() if until_eof else b""


async def _respond(writer: asyncio.StreamWriter, status: int, headers: dict[str, str], body: bytes) -> None:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if not any(k.lower() == "content-type" for k in headers):
        lines.append("Content-Type: application/json")
    lines += [f"Content-Length: {len(body)}", "Connection: close"]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()


def _error_body(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}}).encode()


def _truncate_content(reply: bytes) -> bytes:
    try:
        data = json.loads(reply)
        choice = data["choices"][0]
        content = choice["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError):
        return reply
    choice["message"]["content"] = content[: max(1, len(content) * 2 // 5)]
    choice["finish_reason"] = "length"
    return json.dumps(data).encode()
