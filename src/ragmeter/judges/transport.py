"""Chat completions from an OpenAI-compatible endpoint, sent so that they do not give up.

:class:`ChatTransport` is the HTTP half of :class:`~ragmeter.judges.openai_compat.OpenAIJudge`:
it builds each request, leaves out the optional parameters the server rejected (and
remembers), limits the requests in flight and their rate, retries rate limits, server
errors, timeouts, connection errors and unreadable bodies with exponential backoff and
jitter (honouring ``Retry-After``), classifies the errors that are not worth retrying, and
records every exchange's usage (:func:`~ragmeter.judges.metering.record`).

The API key is never printed, logged, described or put in an error message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.data.secrets import redact, redirect_target
from ragmeter.judges import requests
from ragmeter.judges.base import ContextTooLong, JudgeError
from ragmeter.judges.breaker import Breaker, connect_failure
from ragmeter.judges.metering import Price, Usage, record
from ragmeter.judges.replies import CJK, content, shape_problem
from ragmeter.judges.requests import (
    BACKOFF_BASE,
    BACKOFF_CAP,
    CONTEXT_ERROR,
    REQUEST_WAIT_CAP,
    RETRY_AFTER_CAP,
    RateLimiter,
    Retryable,
    Unsupported,
    context_numbers,
    error_text,
    public_url,
    rejected_param,
    retry_after,
    short,
)

log = logging.getLogger("ragmeter.judges.openai")

#: Top log-probabilities asked for per generated token when log-probabilities are wanted.
TOP_LOGPROBS = 10

#: Most bytes of one reply body, decompressed, read from the endpoint: far above what a chat
#: completion takes (2,048 tokens with their top log-probabilities are about 2 MB), far below
#: what a server sending an endless body or a decompression bomb would make the run hold.
REPLY_LIMIT = 32 * 1024 * 1024


class ReplyTooLarge(Exception):
    """The endpoint's reply body was longer than :data:`REPLY_LIMIT` bytes."""


async def read_capped(response) -> None:
    """Read ``response``'s body (decompressed) into it, refusing more than :data:`REPLY_LIMIT`
    bytes: the HTTP client's response hook, run before the client would read the whole body.

    Raises:
        ReplyTooLarge: The body is longer (the connection is closed by the client).
    """
    parts, size = [], 0
    async for part in response.aiter_bytes():
        size += len(part)
        if size > REPLY_LIMIT:
            raise ReplyTooLarge(f"a reply body over {REPLY_LIMIT / 2**20:g} MiB (not read further)")
        parts.append(part)
    # Where the client keeps a body it has read (httpx and httpx2 alike): its own read and the
    # openai package's parsing then use this one instead of reading the spent stream.
    response._content = b"".join(parts)


def guarded(client):
    """A caller's own HTTP ``client`` (an ``AsyncClient``) with the judge's rules: redirects not
    followed, a body read by :func:`read_capped` (its first response hook: the caller's read it capped).

    Raises:
        ValueError: The client follows redirects.
    """
    if getattr(client, "follow_redirects", False):
        raise ValueError(
            "the judge's http_client follows redirects: an endpoint could send the prompts and the key to a host never "
            "configured; make the client with follow_redirects=False (a redirect then fails the request, naming its target)"
        )
    hooks = client.event_hooks
    if read_capped not in hooks["response"]:
        client.event_hooks = {**hooks, "response": [read_capped, *hooks["response"]]}
    return client


def estimated_tokens(text: str) -> int:
    """Tokens of ``text`` without the model's tokenizer: one per CJK character plus one per
    4 other characters (rounded up)."""
    cjk = len(CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def token_count(reported: Any, otherwise: int) -> int:
    """The token count a server ``reported``, or ``otherwise`` (an estimate) when it reported
    none or no finite number of 0 or more ("12", NaN, -5)."""
    if isinstance(reported, (int, float)) and not isinstance(reported, bool) and math.isfinite(reported) and reported >= 0:
        return int(reported)
    return otherwise


def prompt_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """Estimated prompt tokens of chat ``messages``, with a few per message for the chat
    template's markers."""
    return sum(estimated_tokens(m["content"]) + 4 for m in messages) + 3


class ChatTransport:
    """Sends chat completions to one endpoint.

    Args:
        base_url: The API root (``http://127.0.0.1:8000/v1``).
        model: The model name sent with every request.
        api_key: Bearer token, or ``None``; only ever given to the HTTP client.
        concurrency: Most requests in flight at once.
        requests_per_minute: Most request starts per minute (retries included); ``None``
            for no limit.
        timeout: Seconds one attempt may take before it is abandoned and retried.
        max_retries: Retries of one request before :class:`JudgeError`.
        context_window: Tokens one prompt may use (estimated by :func:`prompt_tokens`).
        temperature: Sampling temperature sent with every request.
        seed: Sampling seed sent with every request (``None``: none sent).
        price: The model's price, or ``None`` when unknown (the usage's cost is then unknown).
        http_client: An ``AsyncClient`` of the HTTP library the ``openai`` package uses (see
            :func:`guarded`).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        *,
        concurrency: int,
        requests_per_minute: float | None,
        timeout: float,
        max_retries: int,
        context_window: int,
        temperature: float,
        seed: int | None,
        price: Price | None,
        http_client: Any = None,
    ):
        try:
            from openai import AsyncOpenAI, DefaultAsyncHttpxClient, Timeout
        except ImportError:
            raise JudgeError("the HTTP judge needs the openai package: pip install openai") from None
        self.model = model
        self.concurrency = concurrency
        self.requests_per_minute = requests_per_minute
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.context_window = context_window
        self.temperature = temperature
        self.seed = seed
        self.price = price
        self._secret = api_key or ""
        self.breaker = Breaker(public_url(base_url))
        own = guarded(http_client) if http_client is not None else None
        root, query = requests.split_query(base_url)  # a query (?api-version=...) goes with every request, after the path
        self._new_client = lambda: AsyncOpenAI(
            base_url=root,
            default_query=query or None,
            api_key=api_key or "none",
            max_retries=0,
            timeout=Timeout(self.timeout, connect=0.9 * self.timeout),  # a connect timeout (the breaker counts it) comes first
            # The openai package follows redirects, which could send the prompts and key to a host never configured: a redirect
            # is an error (_classify). Nor is a reply read without end: read_capped reads the body. (See guarded too.)
            http_client=own
            if own is not None
            else DefaultAsyncHttpxClient(follow_redirects=False, event_hooks={"response": [read_capped]}),
        )
        self._client = self._new_client()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Optional parameters the server rejected: left out of every later request.
        self.unsupported: set[str] = set()
        self._random = random.Random()

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        json_schema: tuple[str, dict[str, Any]] | None = None,
        logprobs: bool = False,
    ):
        """One chat completion, leaving out the optional parameters the server rejected.

        Args:
            messages: The chat messages.
            max_tokens: Longest reply (lowered to what the context window leaves).
            json_schema: ``(name, schema)``: ask for ``response_format`` ``json_schema``.
            logprobs: Ask for each generated token's :data:`TOP_LOGPROBS` alternatives.

        Raises:
            ContextTooLong: The prompt does not fit the window (estimated, or as the server says).
            JudgeError: The server refused the request, or failed after every retry.
        """
        estimate = prompt_tokens(messages)
        if estimate > self.context_window:
            raise ContextTooLong(estimate, self.context_window)
        max_tokens = max(1, min(max_tokens, self.context_window - estimate))

        def build() -> dict[str, Any]:
            # Built just before each attempt, so that a request waiting for its turn already
            # leaves out what another request found the server rejects.
            return self._params(messages, max_tokens, json_schema, logprobs)

        while True:
            try:
                return await self._call(build, estimate)
            except Unsupported as exc:
                log.info("the server rejected '%s'; asking again without it (remembered)", exc.param)
                self.unsupported.add(exc.param)

    def _params(self, messages, max_tokens: int, json_schema, logprobs: bool) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "messages": messages}
        params["max_completion_tokens" if "max_tokens" in self.unsupported else "max_tokens"] = max_tokens
        if "temperature" not in self.unsupported:
            params["temperature"] = self.temperature
        if self.seed is not None and "seed" not in self.unsupported:
            params["seed"] = self.seed
        if json_schema is not None and "response_format" not in self.unsupported:
            name, schema = json_schema
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "answer", "schema": schema, "strict": False},
            }
        if logprobs and "logprobs" not in self.unsupported:
            params["logprobs"] = True
            params["top_logprobs"] = TOP_LOGPROBS
        return params

    def _bind_to_running_loop(self) -> None:
        """Make the loop-bound parts (connection pool, semaphore, rate limiter) for the
        running event loop: each ``evaluate()`` call runs its own loop."""
        loop = asyncio.get_running_loop()
        if loop is self._loop:
            return
        if self._loop is not None:
            self._client = self._new_client()
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._limiter = RateLimiter(self.requests_per_minute) if self.requests_per_minute else None
        self._loop = loop

    async def _call(self, build, estimate: int):
        """Send one request (``build()`` gives its parameters), retrying what is worth
        retrying; record its usage."""
        self._bind_to_running_loop()
        started = time.perf_counter()
        retries, waited = 0, 0.0
        usage = Usage(calls=1, cost_usd=0.0 if self.price is not None else None)
        try:
            while True:
                try:
                    response = await self._attempt(build, estimate)
                except Retryable as failure:
                    delay = self._next_wait(failure, retries + 1, waited)
                    retries += 1
                    log.warning(
                        "judge request failed (%s); retry %d of %d in %.1f s", failure.description, retries, self.max_retries, delay
                    )
                    await requests.sleep(delay)
                    waited += delay
                    continue
                self._fill_usage(usage, response, estimate)
                return response
        finally:
            usage.retries = retries
            usage.seconds = time.perf_counter() - started
            record(usage)

    def _next_wait(self, failure: Retryable, retry: int, waited: float) -> float:
        """Seconds to wait before retry number ``retry`` after ``failure``, ``waited`` seconds
        having been waited for this request already.

        Raises:
            JudgeError: The breaker opened (``EndpointUnreachable``), no retries are left, or the
                wait would take the request's waiting over :data:`~requests.REQUEST_WAIT_CAP`.
        """
        if self.breaker.opened is not None:
            raise self.breaker.error() from None
        last = f"last failure: {failure.description}"
        if retry > self.max_retries:
            raise JudgeError(f"the judge endpoint failed after {retry - 1} retries; {last}") from None
        delay = self.delay(retry, failure.retry_after)
        if waited + delay <= REQUEST_WAIT_CAP:
            return delay
        if failure.retry_after is not None:
            raise JudgeError(
                f"the judge endpoint asked to wait {failure.retry_after:.0f} s more (Retry-After) after {waited:.0f} s of waiting, "
                f"longer than the {REQUEST_WAIT_CAP:g} s a request may wait in all; {last}"
            ) from None
        raise JudgeError(
            f"the judge endpoint failed after {retry - 1} retries and {waited:.0f} s of waiting, and another wait would pass "
            f"the {REQUEST_WAIT_CAP:g} s a request may wait in all; {last}"
        ) from None

    async def _attempt(self, build, estimate: int):
        """One HTTP exchange; failures worth retrying raise :class:`Retryable`."""
        import openai

        async with self._semaphore:
            self.breaker.check()
            if self._limiter is not None:
                await self._limiter.acquire()
            params = build()
            try:
                response = await self._exchange(params)
            except (asyncio.TimeoutError, openai.APITimeoutError):
                raise Retryable(f"no reply within {self.timeout:g} s") from None
            except openai.APIStatusError as exc:
                raise self._classify(exc, estimate, params) from None
            except openai.APIConnectionError as exc:
                raise Retryable(f"connection error ({self._redact(type(exc.__cause__ or exc).__name__)})") from None
            except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
                raise Retryable(f"unreadable response body ({type(exc).__name__})") from None
            except ReplyTooLarge as exc:
                raise Retryable(str(exc)) from None
            problem = shape_problem(response)
            if problem is not None:
                raise Retryable(self._redact(problem))
            return response

    async def _exchange(self, params: dict[str, Any]):
        """One request with ``params`` and its reply, noted by the breaker: a failure to connect
        counts against the endpoint; any reply, an HTTP error too, for it."""
        import openai

        try:
            response = await asyncio.wait_for(self._client.chat.completions.create(**params), self.timeout)
        except (openai.APIConnectionError, asyncio.TimeoutError, asyncio.CancelledError) as exc:  # (timeouts included)
            self.breaker.unanswered(connect_failure(exc))
            raise
        except Exception:
            self.breaker.answered()
            raise
        self.breaker.answered()
        return response

    def _classify(self, exc, estimate: int, params: Mapping[str, Any]) -> Exception:
        """What an HTTP error status means for this request, as the exception to raise."""
        status = exc.status_code
        if 300 <= status < 400:
            where = redirect_target(exc.response.headers.get("location"))
            return JudgeError(
                f"the judge endpoint redirected (HTTP {status}){where}; redirects are not followed: give that address as the base URL"
            )
        text = self._redact(error_text(exc))
        if status in (400, 413, 422) and CONTEXT_ERROR.search(text):
            return ContextTooLong(*context_numbers(text, estimate, self.context_window))
        if status in (400, 415, 422) or status >= 500:
            # (llama.cpp's server answers 500 to a request it cannot validate.)
            rejected = rejected_param(exc, text, params)
            if rejected is not None:
                return Unsupported(rejected)
        if status in (408, 429) or status >= 500:
            return Retryable(f"HTTP {status}: {short(text)}", retry_after(exc.response.headers))
        return JudgeError(f"the judge endpoint refused the request: HTTP {status}: {short(text)}")

    def delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``retry``: ``Retry-After`` when the server
        gave one (capped), else exponential backoff with jitter."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), RETRY_AFTER_CAP)
        return min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (retry - 1)) * self._random.uniform(0.5, 1.0)

    def _fill_usage(self, usage: Usage, response, estimate: int) -> None:
        counted = getattr(response, "usage", None)
        usage.prompt_tokens = usage.prompt_tokens_evaluated = token_count(getattr(counted, "prompt_tokens", None), estimate)
        usage.completion_tokens = token_count(getattr(counted, "completion_tokens", None), estimated_tokens(content(response)))
        if self.price is not None:
            usage.cost_usd = self.price.cost(usage.prompt_tokens, usage.completion_tokens)

    def _redact(self, text: str) -> str:
        """An error text from the server without credentials: the key, and whatever a server
        echoes of the URL's user information, secret query values and authorization headers."""
        return redact(text.replace(self._secret, "[api key]") if self._secret else text)

    async def aclose(self) -> None:
        """Close the connection pool. A pool opened in another event loop (an earlier
        ``evaluate()`` whose loop has ended, when this loop made no request) is dropped
        instead: its connections belong to that loop, and closing them here raised "Event
        loop is closed"."""
        if self._loop is not None and self._loop is not asyncio.get_running_loop():
            self._client, self._loop = self._new_client(), None
            return
        await self._client.close()
