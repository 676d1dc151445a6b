"""A judge behind an OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp's
server, Ollama, LiteLLM...).

How it judges:

- Yes/no verdicts, ``verdict_mode="batch"`` (default): all items of one
  :meth:`~OpenAIJudge.verdicts` call go in ONE request; the reply is JSON
  (``{"verdicts": [{"id": 1, "reason": "...", "verdict": "yes"}]}``) and each verdict is
  1.0 or 0.0 (method ``"text"``). Items the reply leaves out (a list cut short, wrong ids)
  are asked again in one follow-up request.
- ``verdict_mode="single"``: one request per item for a single token, with its
  log-probabilities; P(yes) = P(yes spellings) / (P(yes spellings) + P(no spellings)) among
  the first token's top log-probabilities (method ``"logprobs"``), else the reply's text.
- JSON answers ask for ``response_format`` ``json_schema`` where the server supports it.
  Replies are parsed, repaired (``json_repair``) when broken or cut off, checked against the
  schema (required properties, arrays and objects), and asked for once more when still
  unusable.

Robustness: retries on 429, 5xx, timeouts, connection errors and unreadable response
bodies, with exponential backoff and jitter, honouring ``Retry-After``; every retry is
counted in :class:`~ragmeter.metering.Usage`. A server that rejects ``response_format``,
``logprobs``, ``seed`` or ``temperature`` (or wants ``max_completion_tokens``) is asked again
without it, and the judge remembers.

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

from ragmeter.judges import requests
from ragmeter.judges.base import ContextTooLong, FieldValue, JudgeError, LLMJudge, Verdict, check_evidence_sentences
from ragmeter.judges.metering import PriceTable, Usage, record
from ragmeter.judges.prompts import BATCH_VERDICTS_SCHEMA, PromptBook, VerdictPrompt
from ragmeter.judges.replies import (
    BATCH_SHAPE,
    CJK,
    NO,
    YES,
    answer_word,
    content,
    extract_verdicts,
    finish_reason,
    first_word,
    option_in,
    parse_json,
    reask,
    schema_problem,
    top_logprobs,
    wrap_verdicts,
    yes_no,
)
from ragmeter.judges.requests import (
    BACKOFF_BASE,
    BACKOFF_CAP,
    CONTEXT_ERROR,
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

VERDICT_MODES = ("batch", "single")

#: Top log-probabilities asked for in single mode and for scales.
TOP_LOGPROBS = 10


class OpenAIJudge(LLMJudge):
    """A judge model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        base_url: The API root, e.g. ``https://api.openai.com/v1`` or
            ``http://127.0.0.1:8000/v1``.
        model: The model name the endpoint serves (also the key into the price table).
        api_key: Bearer token; ``None`` for servers without authentication. It is never
            printed, logged, returned by :meth:`describe`, or put in errors or reprs.
        concurrency: Most requests in flight at once.
        requests_per_minute: Most request starts per minute (retries included), spaced
            evenly; ``None`` for no limit.
        timeout: Seconds one attempt may take before it is abandoned and retried.
        max_retries: Retries of one request after rate limits, server errors, timeouts,
            connection errors or unreadable replies; then :class:`JudgeError`.
        context_window: Tokens one prompt may use (estimated by :meth:`count_tokens`).
        temperature: Sampling temperature.
        seed: Sampling seed, sent for servers that honour it.
        prices: Price table for ``Usage.cost_usd``; ``None`` for the packaged table. A model
            the table does not list has an unknown cost (``None``), never 0.
        verdict_mode: ``"batch"``: all items of a :meth:`verdicts` call in one request,
            answered in JSON. ``"single"``: one request per item for one token with its
            log-probabilities.
        max_tokens: Longest reply to a JSON request (:meth:`generate`, batch verdicts).
        http_client: An ``AsyncClient`` of the HTTP library the ``openai`` package uses
            (proxies, custom transports, tests); default: the package's own.
        evidence_sentences: Premise sentences shown per statement checked (see
            :class:`~ragmeter.judges.base.LLMJudge`); 0, the default, shows the whole
            premise and keeps one request for all statements of a sample in batch mode.
    """

    backend = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        concurrency: int = 8,
        requests_per_minute: float | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        context_window: int = 128000,
        temperature: float = 0.0,
        seed: int | None = 0,
        prices: PriceTable | None = None,
        verdict_mode: str = "batch",
        max_tokens: int = 2048,
        http_client: Any = None,
        evidence_sentences: int = 0,
    ):
        check_evidence_sentences(evidence_sentences)
        if verdict_mode not in VERDICT_MODES:
            raise ValueError(f"verdict_mode must be one of {', '.join(VERDICT_MODES)}, got {verdict_mode!r}")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive (or None for no limit)")
        try:
            from openai import AsyncOpenAI
        except ImportError:
            raise JudgeError("the HTTP judge needs the openai package: pip install openai") from None
        self.base_url = base_url
        self.model = model
        self.concurrency = concurrency
        self.requests_per_minute = requests_per_minute
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.context_window = context_window
        self.temperature = temperature
        self.seed = seed
        self.verdict_mode = verdict_mode
        self.evidence_sentences = evidence_sentences
        self.max_tokens = max_tokens
        self._secret = api_key or ""
        self._price = (prices or PriceTable()).price(model)
        self._new_client = lambda: AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "none",
            max_retries=0,
            timeout=self.timeout,
            **({"http_client": http_client} if http_client is not None else {}),
        )
        self._client = self._new_client()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsupported: set[str] = set()
        self._random = random.Random()

    # ---- description -----------------------------------------------------------------

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={public_url(self.base_url)!r}, verdict_mode={self.verdict_mode!r})"

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": self.model,
            "base_url": public_url(self.base_url),
            "verdict_mode": self.verdict_mode,
            "temperature": self.temperature,
            "seed": self.seed,
            "context_window": self.context_window,
        }

    def count_tokens(self, text: str) -> int:
        """An estimate, without the model's tokenizer: one token per CJK character plus one
        per 4 other characters (rounded up)."""
        cjk = len(CJK.findall(text))
        return cjk + math.ceil((len(text) - cjk) / 4)

    def _prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int:
        # A few tokens per message for the chat template's markers.
        return sum(self.count_tokens(m["content"]) + 4 for m in messages) + 3

    # ---- the judge's tasks -----------------------------------------------------------

    async def verdicts(self, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
        if not items:
            return []
        book = PromptBook(lang)
        if self.verdict_mode == "single":
            prompt, tag = book.verdict(task, shared), book.item_tag(task)
            # Let every item finish (no request left running unwatched), then report the first failure.
            results = await asyncio.gather(*(self._single_verdict(book, prompt, item, tag) for item in items), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    raise result
            return [result for result in results if isinstance(result, Verdict)]
        found = await self._batch_verdicts(book, task, shared, list(items))
        missing = [i for i in range(len(items)) if i not in found]
        if missing:
            log.debug("judge reply left out %d of %d items; asking again for them", len(missing), len(items))
            again = await self._batch_verdicts(book, task, shared, [items[i] for i in missing])
            found.update({missing[j]: verdict for j, verdict in again.items()})
            still = [i + 1 for i in range(len(items)) if i not in found]
            if still:
                raise JudgeError(
                    f"the judge gave no verdict for item(s) {', '.join(map(str, still))} of {len(items)} "
                    f"('{task}'), even when asked again for them"
                )
        return [found[i] for i in range(len(items))]

    async def _batch_verdicts(self, book: PromptBook, task: str, shared: Mapping[str, FieldValue], items: list[str]) -> dict[int, Verdict]:
        """Verdicts found in one batch reply, by 0-based item index."""
        messages = book.batch_messages(task, shared, items)
        budget = min(self.max_tokens, 64 + 96 * len(items))
        value = await self._json_exchange(book, messages, BATCH_VERDICTS_SCHEMA, BATCH_SHAPE, budget, task, coerce=wrap_verdicts)
        return extract_verdicts(value["verdicts"], len(items))

    async def _single_verdict(self, book: PromptBook, prompt: VerdictPrompt, item: str, tag: str) -> Verdict:
        messages = prompt.messages(item, tag)
        for attempt in range(2):
            response = await self._complete(messages, max_tokens=1 if attempt == 0 else 4, logprobs=True)
            top = top_logprobs(response)
            if top:
                yes = sum(math.exp(lp) for token, lp in top if answer_word(token) in YES)
                no = sum(math.exp(lp) for token, lp in top if answer_word(token) in NO)
                if yes + no > 0:
                    return Verdict(p_yes=min(max(yes / (yes + no), 0.0), 1.0), method="logprobs")
            text = content(response)
            p = yes_no(first_word(text))
            if p is not None:
                return Verdict(p_yes=p, method="text")
            messages = reask(messages, text, book.reask("yes_no"))
        raise JudgeError(f"the judge answered neither {prompt.answers[0]} nor {prompt.answers[1]}, even when asked again")

    async def scale(self, task: str, shared: Mapping[str, FieldValue], options: Sequence[str], lang: str) -> dict[str, float]:
        book = PromptBook(lang)
        prompt = book.scale(task, shared)
        messages = prompt.chat(prompt.asks)
        options = list(options)
        for attempt in range(2):
            response = await self._complete(messages, max_tokens=1 if attempt == 0 else 4, logprobs=True)
            mass = dict.fromkeys(options, 0.0)
            for token, logprob in top_logprobs(response):
                if token.strip() in mass:
                    mass[token.strip()] += math.exp(logprob)
            total = sum(mass.values())
            if total > 0:
                return {option: value / total for option, value in mass.items()}
            text = content(response)
            chosen = option_in(text, options)
            if chosen is not None:
                return {option: 1.0 if option == chosen else 0.0 for option in options}
            messages = reask(messages, text, book.reask("option", options=", ".join(options)))
        raise JudgeError(f"the judge's reply to '{task}' named none of the options {', '.join(options)}, even when asked again")

    async def generate(self, task: str, fields: Mapping[str, FieldValue], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        book = PromptBook(lang)
        messages = book.generation_messages(task, fields)
        return await self._json_exchange(book, messages, dict(schema), dict(schema), self.max_tokens, task)

    # ---- JSON replies ----------------------------------------------------------------

    async def _json_exchange(
        self,
        book: PromptBook,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        shape: dict[str, Any],
        max_tokens: int,
        task: str,
        coerce=None,
    ) -> dict[str, Any]:
        """A JSON object from the judge: parsed, repaired if needed, ``coerce``-d, checked
        against ``shape``; asked for once more if still unusable."""
        problem = ""
        for attempt in range(2):
            response = await self._complete(messages, max_tokens=max_tokens, json_schema=(task, schema))
            text = content(response)
            value, problem = parse_json(text)
            if value is not None:
                value = coerce(value) if coerce is not None else value
                problem = schema_problem(value, shape) or ""
                if not problem:
                    return value
            if finish_reason(response) == "length":
                problem += f" (the reply was cut off at {max_tokens} tokens)"
            log.debug("unusable JSON from the judge for '%s' (%s)%s", task, problem, "; asking again" if attempt == 0 else "")
            messages = reask(messages, text, book.reask("json", problem=problem))
        raise JudgeError(f"the judge's reply to '{task}' was not usable JSON after repair and one re-ask: {problem}")

    # ---- HTTP ------------------------------------------------------------------------

    async def _complete(
        self,
        messages: list[dict[str, str]],
        *,
        max_tokens: int,
        json_schema: tuple[str, dict[str, Any]] | None = None,
        logprobs: bool = False,
    ):
        """One chat completion, leaving out the optional parameters the server rejected."""
        estimate = self._prompt_tokens(messages)
        if estimate > self.context_window:
            raise ContextTooLong(estimate, self.context_window)
        max_tokens = max(1, min(max_tokens, self.context_window - estimate))

        def build() -> dict[str, Any]:
            # Built just before each attempt, so that a request waiting for its turn already
            # leaves out what another request found the server rejects.
            params: dict[str, Any] = {"model": self.model, "messages": messages}
            if "max_tokens" in self._unsupported:
                params["max_completion_tokens"] = max_tokens
            else:
                params["max_tokens"] = max_tokens
            if "temperature" not in self._unsupported:
                params["temperature"] = self.temperature
            if self.seed is not None and "seed" not in self._unsupported:
                params["seed"] = self.seed
            if json_schema is not None and "response_format" not in self._unsupported:
                name, schema = json_schema
                params["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "answer", "schema": schema, "strict": False},
                }
            if logprobs and "logprobs" not in self._unsupported:
                params["logprobs"] = True
                params["top_logprobs"] = TOP_LOGPROBS
            return params

        while True:
            try:
                return await self._call(build, estimate)
            except Unsupported as exc:
                log.info("the server rejected '%s'; asking again without it (remembered)", exc.param)
                self._unsupported.add(exc.param)

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
        import openai

        self._bind_to_running_loop()
        started = time.perf_counter()
        retries = 0
        usage = Usage(calls=1, cost_usd=0.0 if self._price is not None else None)
        try:
            while True:
                try:
                    async with self._semaphore:
                        if self._limiter is not None:
                            await self._limiter.acquire()
                        params = build()
                        try:
                            response = await asyncio.wait_for(self._client.chat.completions.create(**params), self.timeout)
                        except (asyncio.TimeoutError, openai.APITimeoutError):
                            raise Retryable(f"no reply within {self.timeout:g} s") from None
                        except openai.APIStatusError as exc:
                            raise self._classify(exc, estimate, params) from None
                        except openai.APIConnectionError as exc:
                            raise Retryable(f"connection error ({self._redact(type(exc.__cause__ or exc).__name__)})") from None
                        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
                            raise Retryable(f"unreadable response body ({type(exc).__name__})") from None
                        if not getattr(response, "choices", None):
                            raise Retryable("a response without choices")
                except Retryable as failure:
                    if retries >= self.max_retries:
                        raise JudgeError(
                            f"the judge endpoint failed after {retries} retries; last failure: {failure.description}"
                        ) from None
                    retries += 1
                    delay = self._delay(retries, failure.retry_after)
                    log.warning(
                        "judge request failed (%s); retry %d of %d in %.1f s", failure.description, retries, self.max_retries, delay
                    )
                    await requests.sleep(delay)
                    continue
                self._fill_usage(usage, response, estimate)
                return response
        finally:
            usage.retries = retries
            usage.seconds = time.perf_counter() - started
            record(usage)

    def _classify(self, exc, estimate: int, params: Mapping[str, Any]) -> Exception:
        """What an HTTP error status means for this request, as the exception to raise."""
        status = exc.status_code
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

    def _delay(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), RETRY_AFTER_CAP)
        return min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (retry - 1)) * self._random.uniform(0.5, 1.0)

    def _fill_usage(self, usage: Usage, response, estimate: int) -> None:
        counted = getattr(response, "usage", None)
        prompt_tokens = getattr(counted, "prompt_tokens", None)
        completion_tokens = getattr(counted, "completion_tokens", None)
        if prompt_tokens is None:
            prompt_tokens = estimate
        if completion_tokens is None:
            completion_tokens = sum(self.count_tokens(c.message.content or "") for c in response.choices if c.message)
        usage.prompt_tokens = usage.prompt_tokens_evaluated = int(prompt_tokens)
        usage.completion_tokens = int(completion_tokens)
        if self._price is not None:
            usage.cost_usd = self._price.cost(usage.prompt_tokens, usage.completion_tokens)

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, "[api key]") if self._secret else text

    async def aclose(self) -> None:
        await self._client.close()


# ---- helpers -----------------------------------------------------------------------------
