"""Requests to an endpoint that do not give up: what is worth retrying, how long to wait
(exponential backoff with jitter, ``Retry-After``), a requests-per-minute limit, and the
server errors that name a rejected parameter or an over-long prompt.

The clock and the sleep come from :func:`clock` and :func:`sleep` (tests replace them).
"""

from __future__ import annotations

import asyncio
import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

#: Backoff between retries: base * 2**(retry - 1), at most the cap, times a jitter in [0.5, 1].
BACKOFF_BASE = 0.5


BACKOFF_CAP = 30.0


#: Longest ``Retry-After`` honoured; a longer one is waited for this long.
RETRY_AFTER_CAP = 120.0


#: Most seconds one request waits between its attempts, all waits together: one wait as long as
#: :data:`RETRY_AFTER_CAP` and a minute more. Without it a server answering every attempt with a
#: long ``Retry-After`` held one request (and its sample) for 10 minutes; a wait that would
#: take a request past it fails the request instead, saying so.
REQUEST_WAIT_CAP = 180.0


# A 400 about the prompt's length, worded as OpenAI, vLLM, llama.cpp, Ollama... word it.
CONTEXT_ERROR = re.compile(
    r"context[_ ]length|context window|maximum context|context size|n_ctx|too many tokens|"
    r"prompt is too long|input is too long|exceeds? (?:the )?(?:available )?context",
    re.IGNORECASE,
)


# Words of a server rejecting a request parameter (rather than failing otherwise).
REJECTION = re.compile(
    r"unsupported|not supported|does not support|doesn't support|unrecognized|unknown|invalid|"
    r"not allowed|not permitted|extra (?:fields|inputs)|validation|literal_error|input should|"
    r"unexpected|only supported|is not available",
    re.IGNORECASE,
)


# Optional request parameters a server may reject, and the words its error uses for them.
OPTIONAL_PARAMS = {
    "response_format": ("response_format", "json_schema"),
    "logprobs": ("top_logprobs", "logprobs"),
    "seed": ("seed",),
    "temperature": ("temperature",),
    "max_tokens": ("max_tokens",),
}


# The clock and sleep the retry and rate-limit logic use (tests replace them).
def clock() -> float:
    return time.monotonic()


async def sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


class Unsupported(Exception):
    """The server rejected an optional parameter."""

    def __init__(self, param: str):
        super().__init__(param)
        self.param = param


class Retryable(Exception):
    """An attempt failed in a way worth trying again."""

    def __init__(self, description: str, retry_after: float | None = None):
        super().__init__(description)
        self.description, self.retry_after = description, retry_after


class RateLimiter:
    """Spaces request starts at least 60 / ``requests_per_minute`` seconds apart."""

    def __init__(self, requests_per_minute: float):
        self.interval = 60.0 / requests_per_minute
        self._next: float | None = None
        self._lock: asyncio.Lock | None = None

    async def acquire(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # waiters queue here, so each gets its own slot
            now = clock()
            if self._next is not None and now < self._next:
                await sleep(self._next - now)
                now = max(clock(), self._next)
            self._next = now + self.interval


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment (where credentials hide)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))


def without_user_info(url: str) -> str:
    """``url`` without the user name and password before its host (its query kept)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))


def split_query(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its query and fragment, and the query's parameters. The openai client
    joins a request's path to the base URL as text, so ``http://host/v1?api-key=K`` (or
    Azure's ``...?api-version=...``) would be asked at ``/v1/?api-key=Kchat/completions``;
    given the parameters as its default query, it asks ``/v1/chat/completions?api-key=K``.

    Args:
        url: The endpoint's base URL, as configured.
    """
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query="", fragment="")), dict(parse_qsl(parts.query, keep_blank_values=True))


def check_base_url(url: str) -> None:
    """Refuse an endpoint address no request can go to: one without ``http://`` or
    ``https://`` (``localhost:8000/v1``), without a host, or with a port out of range.

    Raises:
        ValueError: What is wrong, with the address (without its credentials).
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (reading it checks it)
    except ValueError as exc:
        raise ValueError(f"the judge's base URL {public_url(url)!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"the judge's base URL must begin with http:// or https:// and name a host (e.g. http://127.0.0.1:8000/v1), "
            f"got {public_url(url)!r}"
        )


def error_text(exc) -> str:
    try:
        text = exc.response.text
    except Exception:
        text = ""
    return text or str(getattr(exc, "message", "") or "")


def short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def retry_after(headers) -> float | None:
    """Seconds from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``; ``None``
    when neither holds a usable value (a negative or NaN number, a date out of the calendar's
    range): the backoff applies then."""
    value = headers.get("retry-after-ms")
    seconds = _seconds(value) if value else None
    if seconds is not None:
        return seconds / 1000
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else max(0.0, email.utils.mktime_tz(parsed) - time.time())
    except (ValueError, OverflowError):  # year 99999
        return None


def _seconds(value: str) -> float | None:
    """``value`` as a number of seconds, at least 0 (infinity too: the cap applies), or ``None``."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if number >= 0 else None  # (NaN is not >= 0)


def rejected_param(exc, text: str, params: Mapping[str, Any]) -> str | None:
    """The optional parameter the error rejects, if it rejects one we sent."""
    sent = [name for name in OPTIONAL_PARAMS if name in params]
    if not sent or not REJECTION.search(text):
        return None
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    named = body.get("param") if isinstance(body, dict) else None
    for name in sent:
        if named == name or named in OPTIONAL_PARAMS[name]:
            return name
    lowered = text.lower()
    for name in sent:
        if any(word in lowered for word in OPTIONAL_PARAMS[name]):
            return name
    return None


def context_numbers(text: str, estimate: int, window: int) -> tuple[int, int]:
    limit = re.search(r"(?:maximum context length is|context window of|context length of|n_ctx[^0-9]{0,5})\s*(\d+)", text, re.I)
    needed = re.search(r"(?:requested|request has|resulted in|prompt has|Requested tokens \()\s*(\d+)", text, re.I)
    return (int(needed.group(1)) if needed else estimate, int(limit.group(1)) if limit else window)
