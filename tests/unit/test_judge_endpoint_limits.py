"""OpenAIJudge's limits on what an endpoint can cost the run, against real local HTTP servers:
a dead endpoint (the circuit breaker), a server asking to wait without end, credentials in the
base URL, a caller's own HTTP client, and a reply slow to repair."""

from __future__ import annotations

import asyncio
import inspect
import json
import socket
import threading

import openai
import pytest
from json_http import send, send_json, serving

from ragmeter.judges import breaker, requests, transport
from ragmeter.judges.base import JudgeError
from ragmeter.judges.ensemble import EnsembleJudge
from ragmeter.judges.metering import metered
from ragmeter.judges.openai_compat import OpenAIJudge

# The openai client's HTTP library: httpx2 for openai >= 3, httpx before.
if "httpx2" in str(inspect.signature(openai.AsyncOpenAI.__init__).parameters["http_client"].annotation):
    import httpx2 as hx
else:  # pragma: no cover
    import httpx as hx

KEY = "sk-limits-SECRET-2468"
PREMISE = {"premise": ["The sky is blue."]}


def chat_reply(content: str = "Yes") -> dict:
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}, "logprobs": None}
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def no_waiting(monkeypatch) -> list[float]:
    """Retries wait no time; the waits asked for are listed."""
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(requests, "sleep", sleep)
    return waits


@pytest.fixture
def clock(monkeypatch) -> list[float]:
    """The clock of the retry logic and the breaker, moved by the test (``clock[0] += s``)."""
    now = [1000.0]
    monkeypatch.setattr(requests, "clock", lambda: now[0])
    return now


async def one_verdict(judge) -> str:
    """The verdict of one claim, or the error it failed with."""
    try:
        (verdict,) = await judge.verdicts("supported", PREMISE, ["The sky is blue."], "en")
    except JudgeError as failure:
        return str(failure)
    return f"p_yes={verdict.p_yes}"


def test_a_dead_endpoint_stops_being_asked_until_it_is_back(no_waiting, clock):
    # With the endpoint down, every sample went through all of its retries: 12 samples, 72
    # attempts and 135 s, each sample failing with "failed after 5 retries". Now a few attempts
    # in a row that cannot connect open the breaker; the rest fail at once, saying why.
    port = closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    judge = OpenAIJudge(url, "m", api_key=KEY, verdict_mode="single", max_retries=5, concurrency=1)
    served: list[int] = []

    def post(handler, body):
        served.append(1)
        send_json(handler, chat_reply())

    async def run() -> tuple[list[str], int, list[str]]:
        with metered() as usage:
            dead = [await one_verdict(judge) for _ in range(12)]
        with serving(post, port=port):
            back = [await one_verdict(judge)]  # still open: not asked
            clock[0] += breaker.RETRY_UNREACHABLE_AFTER
            back += [await one_verdict(judge), await one_verdict(judge)]  # one let through, then closed
        await judge.aclose()
        return dead, usage.retries, back

    dead, retries, back = asyncio.run(run())
    assert retries == breaker.UNREACHABLE_AFTER - 1  # all attempts: the first request's
    assert len(no_waiting) == breaker.UNREACHABLE_AFTER - 1
    for failure in dead:
        assert failure.startswith(f"the judge endpoint at {url} is unreachable since ")
        assert failure.endswith(
            "(no attempt could connect: connection error (ConnectError)); requests fail at once, one every 30 s tries again"
        )
        assert KEY not in failure
    assert back[0].startswith(f"the judge endpoint at {url} is unreachable since ")
    assert back[1:] == ["p_yes=1.0", "p_yes=1.0"] and len(served) == 2


def test_http_errors_and_a_reachable_member_do_not_open_the_breaker(no_waiting):
    # Only failures to connect count: a server answering 503 is there (retried as before),
    # and in an ensemble the dead member's breaker leaves the live member's requests alone.
    dead_url = f"http://127.0.0.1:{closed_port()}/v1"
    served: list[int] = []

    def post(handler, body):
        served.append(1)
        send_json(handler, {"error": {"message": "busy"}} if len(served) <= 8 else chat_reply(), 503 if len(served) <= 8 else 200)

    with serving(post) as live:
        busy = OpenAIJudge(f"{live}/v1", "a", verdict_mode="single", max_retries=3, concurrency=1)
        failures = [asyncio.run(one_verdict(busy)) for _ in range(2)]
        ensemble = EnsembleJudge(
            [OpenAIJudge(f"{live}/v1", "a", verdict_mode="single", max_retries=5), OpenAIJudge(dead_url, "b", verdict_mode="single")],
            "mean",
        )
        answers = [asyncio.run(one_verdict(ensemble)) for _ in range(3)]
    assert failures == ['the judge endpoint failed after 3 retries; last failure: HTTP 503: {"error": {"message": "busy"}}'] * 2
    assert len(served) == 8 + 3
    for answer in answers:
        assert answer.startswith(f"ensemble member 2 (b): the judge endpoint at {dead_url} is unreachable since ")


def test_a_request_waits_at_most_the_cap_in_all_however_long_the_server_asks(no_waiting):
    # A server answering every attempt with "Retry-After: 120" (the most one wait honours)
    # held the request, and its sample, for 5 waits of 120 s: 10 minutes.
    served: list[int] = []

    def post(handler, body):
        served.append(1)
        send_json(handler, {"error": {"message": "slow down"}}, 429, {"Retry-After": "120"})

    with serving(post) as url:
        judge = OpenAIJudge(f"{url}/v1", "m", api_key=KEY, verdict_mode="single", max_retries=5)
        failure = asyncio.run(one_verdict(judge))
    assert no_waiting == [requests.RETRY_AFTER_CAP] and len(served) == 2
    assert failure == (
        "the judge endpoint asked to wait 120 s more (Retry-After) after 120 s of waiting, longer than the 180 s a request may wait "
        'in all; last failure: HTTP 429: {"error": {"message": "slow down"}}'
    )


def test_a_user_and_password_in_the_base_url_are_not_sent_in_place_of_the_key(caplog):
    # The HTTP client made them a Basic authorization, which replaced the Bearer key without
    # a word: the server saw the URL's user and password, never the key the user had given.
    seen: list[str] = []

    def post(handler, body):
        seen.append(handler.headers.get("Authorization"))
        send_json(handler, chat_reply())

    with serving(post) as url:
        judge = OpenAIJudge(url.replace("http://", "http://alice:PASSWORD9@") + "/v1", "m", api_key=KEY, verdict_mode="single")
        answer = asyncio.run(one_verdict(judge))
    assert answer == "p_yes=1.0" and seen == [f"Bearer {KEY}"]
    assert "PASSWORD9" not in repr(judge) + json.dumps(judge.describe()) + judge.base_url + str(judge.transport._client.base_url)
    assert f"the judge's base URL {url}/v1 holds a user name or password: not sent (the API key is)" in caplog.text
    assert "PASSWORD9" not in caplog.text


def test_a_callers_http_client_that_follows_redirects_is_refused():
    # It was used as given: the endpoint's redirect was followed, the prompts and the key sent
    # to the host it named (the openai package's own client follows redirects).
    for client in (openai.DefaultAsyncHttpxClient(), hx.AsyncClient(follow_redirects=True)):
        with pytest.raises(ValueError, match=r"the judge's http_client follows redirects: .* follow_redirects=False"):
            OpenAIJudge("http://127.0.0.1:8000/v1", "m", api_key=KEY, http_client=client)


def test_a_callers_http_client_reads_no_reply_body_over_the_limit(monkeypatch):
    # Its replies were read whole, however long: the body cap was the judge's own client's only.
    monkeypatch.setattr(transport, "REPLY_LIMIT", 64 * 1024)
    seen: list[int] = []

    async def hook(response):
        seen.append(len(response.content))  # a hook of the caller's reads the capped body

    def post(handler, body):
        send(handler, 200, {"Content-Type": "application/json"}, b" " * (1024 * 1024) + json.dumps(chat_reply()).encode())

    with serving(post) as url:
        client = hx.AsyncClient(event_hooks={"response": [hook]})
        failure = asyncio.run(one_verdict(OpenAIJudge(f"{url}/v1", "m", verdict_mode="single", max_retries=0, http_client=client)))
        OpenAIJudge(f"{url}/v1", "m", http_client=client)  # the same client again: its hook is not added twice
    assert failure == "the judge endpoint failed after 0 retries; last failure: a reply body over 0.0625 MiB (not read further)"
    assert seen == [] and client.event_hooks["response"] == [transport.read_capped, hook]


def test_a_reply_is_repaired_while_the_other_requests_go_on(monkeypatch):
    # The JSON repairer ran in the event loop: a reply under the repair limit could take it
    # seconds, every other request of the run standing still meanwhile.
    import json_repair

    started, released, waited = threading.Event(), threading.Event(), []
    repair = json_repair.loads

    def slow_repair(text, *args, **kwargs):  # as slow as it takes the event loop to release it
        started.set()
        waited.append(released.wait(timeout=10))
        return repair(text, *args, **kwargs)

    monkeypatch.setattr(json_repair, "loads", slow_repair)
    broken = '{"verdicts": [{"id": 1, "reason": "stated", "verdict": "yes"'  # cut off

    async def release():
        while not started.is_set():
            await asyncio.sleep(0.01)
        released.set()

    async def run(judge):
        answer, _ = await asyncio.gather(one_verdict(judge), release())
        await judge.aclose()
        return answer

    with serving(lambda handler, body: send_json(handler, chat_reply(broken))) as url:
        answer = asyncio.run(run(OpenAIJudge(f"{url}/v1", "m", verdict_mode="batch", max_retries=0)))
    assert answer == "p_yes=1.0" and waited == [True]
