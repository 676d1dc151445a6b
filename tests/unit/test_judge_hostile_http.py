"""OpenAIJudge against hostile endpoints served by a real local HTTP server: what a reply can
do to the run (its size, its log-probabilities, its headers) and what a failure leaves kept."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from json_http import send, send_json, serving

from ragmeter.data.secrets import register
from ragmeter.judges import requests, transport
from ragmeter.judges.base import ContextTooLong, JudgeError
from ragmeter.judges.cache import CachingJudge, DiskCache
from ragmeter.judges.ensemble import EnsembleJudge
from ragmeter.judges.metering import metered
from ragmeter.judges.openai_compat import OpenAIJudge
from ragmeter.judges.replies import REPAIR_LIMIT
from ragmeter.judges.windowing import premise_verdicts

KEY = "sk-hostile-SECRET-4567"


def chat_reply(content: str = "yes", logprobs: object = None) -> dict:
    """A chat.completion body answering ``content``, with ``logprobs`` as the choice's."""
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}, "logprobs": logprobs}
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}


@contextmanager
def raw_server(answer: Callable[[int], tuple[int, dict[str, str], bytes]]) -> Iterator[str]:
    """Serve ``answer(request number) -> (status, headers, body)`` on 127.0.0.1 while the
    block runs (``Content-Type: application/json`` unless the headers say otherwise); yields
    the base URL of its API (``http://127.0.0.1:PORT/v1``)."""
    count = []

    def post(handler, body):
        count.append(1)
        status, headers, reply = answer(len(count))
        send(handler, status, {"Content-Type": "application/json", **headers}, reply)

    with serving(post) as url:
        yield f"{url}/v1"


def single_verdict(url: str, **options):
    """The verdict of one claim in single mode from the judge at ``url`` (no retries unless told)."""
    options.setdefault("max_retries", 0)
    judge = OpenAIJudge(url, "m", api_key=KEY, verdict_mode="single", **options)

    async def ask():
        try:
            return await judge.verdicts("supported", {"premise": ["The sky is blue."]}, ["The sky is blue."], "en")
        finally:
            await judge.aclose()

    return asyncio.run(ask())


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_a_reply_body_over_the_limit_is_refused_not_read_to_its_end(monkeypatch, encoding):
    # The whole body was read into memory, however long: a server streaming without end (or a
    # gzip bomb, a few kB that decompress to gigabytes) made the run hold gigabytes and die.
    monkeypatch.setattr(transport, "REPLY_LIMIT", 64 * 1024)
    body = b" " * (1024 * 1024) + json.dumps(chat_reply()).encode()  # valid JSON, 1 MiB long
    headers = {"Content-Encoding": "gzip"} if encoding == "gzip" else {}
    sent = gzip.compress(body) if encoding == "gzip" else body
    with raw_server(lambda n: (200, headers, sent)) as url, pytest.raises(JudgeError) as failure:
        single_verdict(url)
    assert str(failure.value) == "the judge endpoint failed after 0 retries; last failure: a reply body over 0.0625 MiB (not read further)"


def test_a_reply_within_the_limit_is_read(monkeypatch):
    monkeypatch.setattr(transport, "REPLY_LIMIT", 64 * 1024)
    with raw_server(lambda n: (200, {"Content-Encoding": "gzip"}, gzip.compress(json.dumps(chat_reply("Yes")).encode()))) as url:
        (verdict,) = single_verdict(url)
    assert (verdict.p_yes, verdict.method) == (1.0, "text")


def batch_reply(*ids: int) -> bytes:
    """A batch reply saying yes to the items ``ids``."""
    verdicts = [{"id": i, "reason": "stated", "verdict": "yes"} for i in ids]
    return json.dumps(chat_reply(json.dumps({"verdicts": verdicts}))).encode()


@pytest.mark.parametrize("mode", ["single", "batch"])
def test_verdicts_given_before_the_endpoint_failed_are_kept_in_the_cache(tmp_path, mode):
    # A verdicts call failing on one item (the server died, a rate limit outlasting the
    # retries) threw away the verdicts already given for the others: paid for, and asked
    # again on the rerun. The cache now keeps them; the rerun asks only for the rest.
    yes = json.dumps(chat_reply("Yes")).encode()
    dead = (503, {}, b'{"error": {"message": "dead"}}')
    script = {
        "single": [(200, {}, yes), (200, {}, yes), dead, (200, {}, yes)],
        "batch": [(200, {}, batch_reply(1)), dead, (200, {}, batch_reply(1, 2))],
    }[mode]
    claims = ["The sky is blue.", "Grass is green.", "Snow is white."]
    cache = DiskCache(tmp_path / "cache.sqlite")

    async def ask(url: str):
        judge = CachingJudge(OpenAIJudge(url, "m", api_key=KEY, verdict_mode=mode, max_retries=0, concurrency=1), cache)
        try:
            return await judge.verdicts("supported", {"premise": ["The sky is blue. Grass is green."]}, claims, "en")
        finally:
            await judge.aclose()

    seen: list[int] = []
    with raw_server(lambda n: seen.append(n) or script[n - 1]) as url:
        with pytest.raises(JudgeError) as failure:
            asyncio.run(ask(url))
        first = len(seen)
        verdicts = asyncio.run(ask(url))
    assert len(seen) - first == 1  # the rerun asked only for what was not given, in one request
    assert [v.p_yes for v in verdicts] == [1.0, 1.0, 1.0]
    assert sorted(failure.value.given) == ([0, 1] if mode == "single" else [0])


@pytest.mark.parametrize(
    ("logprobs", "expected"),
    [
        # exp(1000) overflowed: the sample failed with "OverflowError: math range error".
        ('{"content": [{"token": "Yes", "logprob": 1000, "top_logprobs": [{"token": "Yes", "logprob": 1000}]}]}', (1.0, "logprobs")),
        # 1e999 is infinity to a JSON reader: P(yes) was 0 / inf = 0.0 against the text's yes (NaN when both were infinite).
        ('{"content": [{"token": "Yes", "logprob": 1e999, "top_logprobs": [{"token": "No", "logprob": 1e999}]}]}', (1.0, "text")),
        ('{"content": [{"token": "Yes", "logprob": "high", "top_logprobs": [{"token": "Yes", "logprob": "high"}]}]}', (1.0, "text")),
        ('{"content": [{"token": 5, "logprob": -1, "top_logprobs": [{"token": 5, "logprob": -1}]}]}', (1.0, "text")),
        ('{"content": {"token": "Yes"}}', (1.0, "text")),
        ('{"content": [{"token": "Yes", "logprob": -0.1, "top_logprobs": {"Yes": -0.1}}]}', (1.0, "logprobs")),
    ],
)
@pytest.mark.parametrize("mode", ["single", "batch"])
def test_malformed_log_probabilities_are_no_answer_and_the_text_is_read(logprobs, expected, mode):
    # A malformed logprobs part failed the sample with a Python error (OverflowError,
    # ValueError, AttributeError, KeyError, TypeError) though the reply's text answered.
    text = "Yes" if mode == "single" else json.dumps({"verdicts": [{"id": 1, "verdict": "yes"}]})
    body = json.dumps(chat_reply(text)).replace('"logprobs": null', f'"logprobs": {logprobs}').encode()
    with raw_server(lambda n: (200, {}, body)) as url:
        judge = OpenAIJudge(url, "m", api_key=KEY, verdict_mode=mode, max_retries=0)
        (verdict,) = asyncio.run(judge.verdicts("supported", {"premise": ["The sky is blue."]}, ["The sky is blue."], "en"))
        asyncio.run(judge.aclose())
    assert (verdict.p_yes, verdict.method) == (expected if mode == "single" else (1.0, "text"))


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "nan"},  # waited "nan s": no wait at all
        {"retry-after-ms": "NaN"},
        {"Retry-After": "-5"},  # waited 0 s: the retries hammered the server at once
        {"Retry-After": "Mon, 01 Jan 99999 00:00:00 GMT"},  # failed the sample: "ValueError: year 99999 is out of range"
    ],
)
def test_an_unusable_retry_after_falls_back_to_the_backoff(monkeypatch, headers):
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(requests, "sleep", sleep)
    limited = (429, headers, b'{"error": {"message": "slow down"}}')
    with raw_server(lambda n: limited if n == 1 else (200, {}, json.dumps(chat_reply("Yes")).encode())) as url:
        (verdict,) = single_verdict(url, max_retries=2)
    assert verdict.p_yes == 1.0
    assert len(waits) == 1 and requests.BACKOFF_BASE / 2 <= waits[0] <= requests.BACKOFF_BASE


def test_a_huge_retry_after_is_waited_for_at_most_the_cap(monkeypatch):
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(requests, "sleep", sleep)
    limited = (429, {"Retry-After": "1e400"}, b'{"error": {"message": "slow down"}}')
    with raw_server(lambda n: limited if n == 1 else (200, {}, json.dumps(chat_reply("Yes")).encode())) as url:
        single_verdict(url, max_retries=2)
    assert waits == [requests.RETRY_AFTER_CAP]


@pytest.mark.parametrize(
    ("choices", "failure"),
    [
        ([5], "a response whose choice is not an object with a message"),  # was AttributeError: 'int' object has no attribute 'message'
        ([{"index": 0, "message": "Yes"}], "a response whose message is not an object"),
        ([{"index": 0, "message": {"role": "assistant", "content": 5}}], "a response whose message content is not text"),
        ([{"index": 0, "message": {"role": "assistant", "content": {"verdict": "yes"}}}], "a response whose message content is not text"),
    ],
)
@pytest.mark.parametrize("mode", ["single", "batch"])
def test_a_reply_of_the_wrong_shape_is_retried_then_named(choices, failure, mode):
    # Each failed the sample with a Python error (AttributeError, TypeError) and no retry.
    body = json.dumps({**chat_reply(), "choices": choices}).encode()
    with raw_server(lambda n: (200, {}, body)) as url, pytest.raises(JudgeError) as raised:
        judge = OpenAIJudge(url, "m", api_key=KEY, verdict_mode=mode, max_retries=0)
        asyncio.run(judge.verdicts("supported", {"premise": ["The sky is blue."]}, ["The sky is blue."], "en"))
    assert str(raised.value) == f"the judge endpoint failed after 0 retries; last failure: {failure}"


@pytest.mark.parametrize("mode", ["single", "batch"])
def test_content_parts_are_read_as_text_and_odd_usage_counts_are_estimated(mode):
    # Content as text parts failed the sample (TypeError / AttributeError on a list), and
    # so did a token count that is no number (ValueError from int("many")).
    text = "Yes" if mode == "single" else json.dumps({"verdicts": [{"id": 1, "verdict": "yes"}]})
    reply = chat_reply()
    reply["choices"][0]["message"]["content"] = [{"type": "text", "text": text}]
    reply["usage"] = {"prompt_tokens": "many", "completion_tokens": float("nan"), "total_tokens": -1}
    with raw_server(lambda n: (200, {}, json.dumps(reply).encode())) as url:
        judge = OpenAIJudge(url, "m", api_key=KEY, verdict_mode=mode, max_retries=0)

        async def ask():
            with metered() as usage:
                verdicts = await judge.verdicts("supported", {"premise": ["The sky is blue."]}, ["The sky is blue."], "en")
            await judge.aclose()
            return verdicts, usage

        (verdict,), usage = asyncio.run(ask())
    assert (verdict.p_yes, verdict.method) == (1.0, "text")
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0


def test_an_ensemble_passes_on_a_prompt_too_long_so_that_the_premise_is_windowed():
    # The ensemble renamed a member's failure by calling its class with a message:
    # ContextTooLong(message) raised "TypeError: ContextTooLong.__init__() missing 1 required
    # positional argument: 'limit'", so a premise too long for the window failed the sample
    # instead of being judged in windows.
    yes = json.dumps(chat_reply("Yes")).encode()
    premise = " ".join(f"Fact number {i} is stated here." for i in range(300))

    async def both_ways(ensemble):
        # One event loop for both calls: a client's connections do not outlive their loop.
        try:
            with pytest.raises(ContextTooLong) as too_long:
                await ensemble.verdicts("supported", {"premise": [premise]}, ["Fact number 3 is stated."], "en")
            return too_long, await premise_verdicts(ensemble, "supported", premise, ["Fact number 3 is stated."], "en")
        finally:
            await ensemble.aclose()

    with raw_server(lambda n: (200, {}, yes)) as url:
        # One retry: a keep-alive connection the server has just closed fails an attempt now and then
        # under load (ReadError), which is not what this test is about.
        members = [OpenAIJudge(url, name, api_key=KEY, verdict_mode="single", context_window=600, max_retries=1) for name in "ab"]
        too_long, ((verdict,), strategy) = asyncio.run(both_ways(EnsembleJudge(members, "mean")))
    assert str(too_long.value).startswith("ensemble member 1 (a): prompt needs ")
    assert too_long.value.limit == 600
    assert (strategy, verdict.p_yes) == ("windows", 1.0)


@pytest.mark.parametrize(
    ("content_type", "body", "failure"),
    [
        (
            "text/html",
            f"<html>Bad gateway for Bearer {KEY}</html>",
            "a reply that is not JSON: <html>Bad gateway for Bearer [api key]</html>",
        ),
        (
            "application/json",
            '{"error": {"message": "upstream provider overloaded"}}',
            "a response without choices: upstream provider overloaded",
        ),
    ],
)
def test_a_200_that_is_no_completion_says_what_it_was(content_type, body, failure):
    # Both read "a response without choices": a proxy's HTML page and a 200 carrying an error
    # (as some gateways send) are now named by what they said, the key masked.
    with raw_server(lambda n: (200, {"Content-Type": content_type}, body.encode())) as url, pytest.raises(JudgeError) as raised:
        single_verdict(url)
    assert str(raised.value) == f"the judge endpoint failed after 0 retries; last failure: {failure}"


def test_a_key_the_endpoint_echoes_into_its_reply_is_masked_in_the_cache(tmp_path):
    # The results file masked it, but the disk cache kept the verdict's reason as the server
    # wrote it, with the API key in it.
    echoed = "sk-echoed-SECRET-8910"
    register(echoed)  # as the judge settings do with the key they read
    reason = {"verdicts": [{"id": 1, "reason": f"you sent Bearer {echoed}", "verdict": "yes"}]}
    with raw_server(lambda n: (200, {}, json.dumps(chat_reply(json.dumps(reason))).encode())) as url:
        judge = CachingJudge(OpenAIJudge(url, "m", api_key=echoed, verdict_mode="batch", max_retries=0), DiskCache(tmp_path / "c.sqlite"))
        (verdict,) = asyncio.run(judge.verdicts("supported", {"premise": ["The sky is blue."]}, ["The sky is blue."], "en"))
        asyncio.run(judge.aclose())
    assert verdict.p_yes == 1.0
    written = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert echoed.encode() not in written and b"you sent Bearer ***" in written


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        # Each was accepted: every request then failed as "connection error (UnsupportedProtocol)"
        # after all its retries, sample after sample, and the run ended with exit code 0.
        ("localhost:8000/v1", "must begin with http:// or https:// and name a host"),
        ("file:///etc/passwd", "must begin with http:// or https:// and name a host"),
        ("http://user:PASSWORD1@127.0.0.1:99999/v1", "'http://127.0.0.1:99999/v1' is not a valid URL: Port out of range"),
        ("http://[::1/v1", "'<invalid url>' is not a valid URL"),  # was "unexpected error: InvalidURL" mid-run
    ],
)
def test_an_endpoint_address_no_request_can_reach_is_refused_at_once(url, problem):
    with pytest.raises(ValueError, match="the judge's base URL") as refused:
        OpenAIJudge(url, "m", api_key=KEY)
    assert problem in str(refused.value) and "PASSWORD1" not in str(refused.value)
    OpenAIJudge("http://[::1]:8000/v1", "m")  # IPv6 literals, ports and https pass
    OpenAIJudge("https://api.example.com/v1", "m")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        # The JSON repairer took 7 s on this (5 minutes on 400 kB), blocking every other request
        # of the run; the re-ask then sent the whole reply back.
        ("{[" * 500 + "a" * 25_000, "the reply was not JSON, and too long to repair (26000 characters)"),
        # json.loads raised RecursionError, which failed the sample without a re-ask.
        ("[" * 100_000 + "]" * 100_000, "the reply was JSON nested too deep to read"),
    ],
)
def test_a_reply_too_long_or_too_deep_for_the_repairer_is_refused_quickly(text, problem):
    sizes: list[int] = []

    def post(handler, body):
        sizes.append(len(body))
        send_json(handler, chat_reply(text))

    began = time.perf_counter()
    with serving(post) as url:
        judge = OpenAIJudge(f"{url}/v1", "m", verdict_mode="batch", max_retries=0)
        with pytest.raises(JudgeError) as raised:
            asyncio.run(judge.verdicts("supported", {"premise": ["The sky is blue."]}, ["The sky is blue."], "en"))
    assert str(raised.value).endswith(f"not usable JSON after repair and one re-ask: {problem}")
    assert time.perf_counter() - began < 5
    assert len(sizes) == 2 and sizes[1] < sizes[0] + REPAIR_LIMIT + 1000  # the re-ask quotes at most REPAIR_LIMIT characters
