"""OpenAIJudge against a scripted fake server (an in-process mock transport given to the
openai client): request shapes, parsing and repair, retries, fallbacks, limits, metering."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import math
import threading
import traceback
from http.server import BaseHTTPRequestHandler, HTTPServer

import openai
import pytest
from json_http import json_server, send_json, serving

from ragmeter.judges import requests, transport
from ragmeter.judges.base import ContextTooLong, JudgeError, ReplyCutOff, Verdict
from ragmeter.judges.metering import PriceTable, metered
from ragmeter.judges.openai_compat import OpenAIJudge

# The openai client's HTTP library: httpx2 for openai >= 3, httpx before.
if "httpx2" in str(inspect.signature(openai.AsyncOpenAI.__init__).parameters["http_client"].annotation):
    import httpx2 as hx
else:  # pragma: no cover
    import httpx as hx

KEY = "sk-test-SECRET-123"
PREMISE = {"premise": ["Members may borrow up to 12 books. Loans last three weeks."]}
CLAIMS = ["Members may borrow 12 books.", "Loans last a year.", "The library has a cafe."]
QUESTIONS_SCHEMA = {
    "type": "object",
    "properties": {"questions": {"type": "array", "items": {"type": "string"}}, "noncommittal": {"type": "boolean"}},
    "required": ["questions", "noncommittal"],
}


# ---- the fake server ------------------------------------------------------------------


def completion(content="", *, finish_reason="stop", top=None, usage=(100, 10)):
    """A chat.completion body; ``top``: the first token's top log-probabilities."""
    choice = {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", "content": content}}
    if top is not None:
        first = next(iter(top))
        choice["logprobs"] = {
            "content": [
                {
                    "token": first,
                    "logprob": top[first],
                    "bytes": None,
                    "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top.items()],
                }
            ]
        }
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return body


def error(status, message, *, headers=None, param=None):
    return hx.Response(status, json={"error": {"message": message, "type": "invalid_request_error", "param": param}}, headers=headers)


class Server:
    """Answers requests with a script: each entry a body (dict -> 200 JSON), a Response,
    an exception to raise, or a function of the request body (may be async)."""

    def __init__(self, *script):
        self.script = list(script)
        self.requests: list[dict] = []
        self.headers: list = []

    async def __call__(self, request):
        body = json.loads(request.content)
        self.requests.append(body)
        self.headers.append(request.headers)
        if not self.script:
            raise AssertionError(f"unscripted request #{len(self.requests)}")
        step = self.script.pop(0)
        if callable(step):
            step = step(body)
            if inspect.isawaitable(step):
                step = await step
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, dict):
            return hx.Response(200, json=step)
        return step


def make_judge(server, **options) -> OpenAIJudge:
    """A judge talking to ``server``; batch verdict mode unless told otherwise (auto mode's
    probe has tests of its own)."""
    options.setdefault("api_key", KEY)
    options.setdefault("verdict_mode", "batch")
    client = hx.AsyncClient(transport=hx.MockTransport(server))
    return OpenAIJudge(base_url="http://judge.test/v1", model=options.pop("model", "test-model"), http_client=client, **options)


class FakeClock:
    def __init__(self):
        self.now = 1000.0
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(requests, "clock", fake.time)
    monkeypatch.setattr(requests, "sleep", fake.sleep)
    return fake


def run(judge: OpenAIJudge, coroutine_function):
    """Run ``coroutine_function(judge)`` inside metered(); return (result, usage)."""

    async def main():
        try:
            with metered() as usage:
                result = await coroutine_function(judge)
            return result, usage
        finally:
            await judge.aclose()

    return asyncio.run(main())


def batch_reply(*verdicts, reasons=True):
    return json.dumps(
        {"verdicts": [{"id": i, "reason": f"r{i}", "verdict": v} if reasons else {"id": i, "verdict": v} for i, v in verdicts]}
    )


def last_user(body) -> str:
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def verdicts(items=CLAIMS, lang="en"):
    return lambda judge: judge.verdicts("supported", PREMISE, items, lang)


# ---- batch verdicts -------------------------------------------------------------------


def test_batch_verdicts_parse_in_one_request(clock):
    server = Server(completion(batch_reply((1, "yes"), (2, "No"), (3, "no"))))
    result, usage = run(make_judge(server), verdicts())
    assert result == [Verdict(1.0, "r1", "text"), Verdict(0.0, "r2", "text"), Verdict(0.0, "r3", "text")]
    assert len(server.requests) == 1
    body = server.requests[0]
    assert body["model"] == "test-model" and body["temperature"] == 0.0 and body["seed"] == 0
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "supported"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["verdicts"]
    assert body["response_format"]["json_schema"]["strict"] is False
    assert all(claim in last_user(body) for claim in CLAIMS)
    assert body["logprobs"] is True and body["top_logprobs"] == 10  # read where the server gives them
    assert (usage.calls, usage.retries, usage.prompt_tokens, usage.completion_tokens) == (1, 0, 100, 10)


def test_batch_accepts_booleans_and_chinese_answers(clock):
    reply = json.dumps({"verdicts": [{"id": 1, "verdict": True}, {"id": 2, "verdict": "否"}, {"id": 3, "verdict": "是"}]})
    result, _ = run(make_judge(Server(completion(reply))), verdicts())
    assert [v.p_yes for v in result] == [1.0, 0.0, 1.0]
    assert result[0].reason is None


def test_malformed_json_is_repaired_without_asking_again(clock):
    broken = 'Sure! ```json\n{"verdicts": [{"id": 1, "reason": "ok", "verdict": "yes"}, {"id": 2, "verdict": "no",}, {"id": 3, "verdict": "yes"},]}\n```'
    server = Server(completion(broken))
    result, usage = run(make_judge(server), verdicts())
    assert [v.p_yes for v in result] == [1.0, 0.0, 1.0]
    assert len(server.requests) == 1 and usage.calls == 1


def test_a_bare_list_of_verdicts_is_accepted(clock):
    reply = json.dumps([{"id": 1, "verdict": "yes"}, {"id": 2, "verdict": "no"}])
    result, _ = run(make_judge(Server(completion(reply))), verdicts(items=CLAIMS[:2]))
    assert [v.p_yes for v in result] == [1.0, 0.0]


def test_truncated_list_is_completed_by_one_follow_up_for_the_missing_items(clock):
    cut = batch_reply((1, "yes"), (2, "no"), (3, "no"))[:70]  # ends inside the second entry
    server = Server(completion(cut, finish_reason="length"), completion(batch_reply((1, "no"), (2, "yes"))))
    result, usage = run(make_judge(server), verdicts())
    assert [v.p_yes for v in result] == [1.0, 0.0, 1.0]
    assert len(server.requests) == 2 and usage.calls == 2
    follow_up = last_user(server.requests[1])
    assert CLAIMS[0] not in follow_up and CLAIMS[1] in follow_up and CLAIMS[2] in follow_up


def test_wrong_ids_are_asked_again_then_an_error_names_what_is_missing(clock):
    server = Server(
        completion(batch_reply((1, "yes"), (7, "no"), (9, "no"))),
        completion(batch_reply((5, "no"), (6, "no"))),
    )
    with pytest.raises(JudgeError, match=r"item\(s\) 2, 3 of 3"):
        run(make_judge(server), verdicts())
    assert len(server.requests) == 2


def test_empty_reply_is_asked_again_once_then_fails(clock):
    server = Server(completion(""), completion("   "))
    with pytest.raises(JudgeError, match="after repair and one re-ask"):
        run(make_judge(server), verdicts())
    assert len(server.requests) == 2
    assert "valid JSON only" in last_user(server.requests[1])


def test_unusable_reply_then_good_one(clock):
    server = Server(completion("I think the first is right."), completion(batch_reply((1, "yes"), (2, "no"), (3, "no"))))
    result, usage = run(make_judge(server), verdicts())
    assert [v.p_yes for v in result] == [1.0, 0.0, 0.0]
    second = server.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "I think the first is right."}
    assert usage.calls == 2 and usage.retries == 0


# ---- generate -------------------------------------------------------------------------


def test_generate_sends_the_schema_and_returns_the_object(clock):
    reply = {"questions": ["How long is a loan?"], "noncommittal": False}
    server = Server(completion(json.dumps(reply)))
    result, _ = run(make_judge(server), lambda j: j.generate("questions", {"response": "Loans last 3 weeks."}, QUESTIONS_SCHEMA, "en"))
    assert result == reply
    fmt = server.requests[0]["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "questions", "schema": QUESTIONS_SCHEMA, "strict": False}}


def test_generate_cut_off_reply_goes_through_repair_and_re_ask(clock):
    good = {"questions": ["How long is a loan?", "Can I renew?"], "noncommittal": False}
    server = Server(completion('{"questions": ["How long is a loan?", "Can I re', finish_reason="length"), completion(json.dumps(good)))
    result, _ = run(make_judge(server), lambda j: j.generate("questions", {"response": "x"}, QUESTIONS_SCHEMA, "en"))
    assert result == good
    assert "noncommittal" in last_user(server.requests[1]) and "cut off" in last_user(server.requests[1])


def test_generate_cut_off_twice_raises_reply_cut_off(clock):
    cut = completion('{"questions": ["How long is a loan?", "Can I re', finish_reason="length")
    server = Server(cut, cut)
    with pytest.raises(ReplyCutOff, match="cut off at"):
        run(make_judge(server), lambda j: j.generate("questions", {"response": "x"}, QUESTIONS_SCHEMA, "en"))


def test_generate_array_where_object_expected_fails_after_re_ask(clock):
    server = Server(completion('{"questions": "just one", "noncommittal": false}'), completion("[1, 2]"))
    with pytest.raises(JudgeError, match="after repair and one re-ask"):
        run(make_judge(server), lambda j: j.generate("questions", {"response": "x"}, QUESTIONS_SCHEMA, "en"))


# ---- retries --------------------------------------------------------------------------


def test_429_with_retry_after_is_waited_for_and_counted(clock):
    server = Server(error(429, "slow down", headers={"Retry-After": "1"}), completion(batch_reply((1, "yes"), (2, "no"), (3, "no"))))
    result, usage = run(make_judge(server), verdicts())
    assert len(result) == 3
    assert clock.sleeps == [1.0]
    assert usage.retries == 1 and usage.calls == 1


def test_retry_after_as_http_date(clock, monkeypatch):
    monkeypatch.setattr(requests.time, "time", lambda: 1_700_000_000.0)
    date = "Tue, 14 Nov 2023 22:13:27 GMT"  # 1_700_000_007
    server = Server(error(503, "busy", headers={"Retry-After": date}), completion(batch_reply((1, "yes"))))
    run(make_judge(server), verdicts(items=["a"]))
    assert clock.sleeps == [pytest.approx(7.0)]


def test_server_errors_back_off_exponentially_with_jitter(clock):
    server = Server(error(500, "oops"), error(502, "bad gateway"), completion(batch_reply((1, "yes"))))
    result, usage = run(make_judge(server), verdicts(items=["a"]))
    assert result[0].p_yes == 1.0
    assert usage.retries == 2 and usage.calls == 1
    first, second = clock.sleeps
    assert 0.25 <= first <= 0.5 and 0.5 <= second <= 1.0


def test_backoff_is_capped(clock):
    judge = make_judge(Server())
    assert all(judge.transport.delay(retry, None) <= requests.BACKOFF_CAP for retry in range(1, 20))
    assert judge.transport.delay(12, None) >= requests.BACKOFF_CAP / 2
    asyncio.run(judge.aclose())


def test_timeouts_and_connection_errors_are_retried(clock):
    server = Server(
        lambda body: hx.ReadTimeout("read timed out"),
        lambda body: hx.ConnectError("connection refused"),
        completion(batch_reply((1, "no"))),
    )
    result, usage = run(make_judge(server), verdicts(items=["a"]))
    assert result[0].p_yes == 0.0 and usage.retries == 2


def test_a_hanging_server_is_abandoned_after_the_timeout(clock):
    async def hang(body):
        await asyncio.sleep(30)

    server = Server(hang, completion(batch_reply((1, "yes"))))
    result, usage = asyncio.run(asyncio.wait_for(_run_async(make_judge(server, timeout=0.2), verdicts(items=["a"])), 10))
    assert result[0].p_yes == 1.0 and usage.retries == 1


async def _run_async(judge, function):
    try:
        with metered() as usage:
            return await function(judge), usage
    finally:
        await judge.aclose()


def test_an_unreadable_200_body_is_retried(clock):
    server = Server(
        hx.Response(200, content=b'{"id": "c", "choices": [{"index": 0, "mess', headers={"content-type": "application/json"}),
        completion(batch_reply((1, "yes"))),
    )
    result, usage = run(make_judge(server), verdicts(items=["a"]))
    assert result[0].p_yes == 1.0 and usage.retries == 1


def test_giving_up_after_max_retries_reports_the_last_status(clock):
    server = Server(*[error(503, "overloaded")] * 3)
    with metered() as usage, pytest.raises(JudgeError, match=r"after 2 retries.*HTTP 503"):
        asyncio.run(_run_async_plain(make_judge(server, max_retries=2), verdicts(items=["a"])))
    assert len(server.requests) == 3
    assert usage.retries == 2 and usage.calls == 1


async def _run_async_plain(judge, function):
    try:
        return await function(judge)
    finally:
        await judge.aclose()


# ---- errors that are not retried; secrets -----------------------------------------------


def test_401_fails_at_once_and_never_shows_the_key(clock, caplog):
    caplog.set_level(logging.DEBUG)
    server = Server(error(503, f"upstream rejected bearer {KEY}"), error(401, f"Incorrect API key provided: {KEY}."))
    judge = make_judge(server)
    with pytest.raises(JudgeError) as caught:
        run(judge, verdicts(items=["a"]))
    assert len(server.requests) == 2 and len(clock.sleeps) == 1  # the 503 is retried, the 401 is not
    assert "retry 1" in caplog.text  # the retry was logged (with the key blanked out)
    assert "401" in str(caught.value)
    texts = [
        str(caught.value),
        repr(caught.value),
        "".join(traceback.format_exception(caught.value)),
        json.dumps(judge.describe()),
        repr(judge),
        str(judge),
        caplog.text,
    ]
    for text in texts:
        assert KEY not in text
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"  # it was sent, all the same


def test_describe_strips_credentials_from_the_url():
    judge = OpenAIJudge(base_url="https://user:pw@llm.example.com:8443/v1?api-key=abc#x", model="m", api_key=KEY)
    described = judge.describe()
    assert described["base_url"] == "https://llm.example.com:8443/v1"
    assert judge.identity() == {
        "backend": "openai",
        "model": "m",
        "base_url": "https://llm.example.com:8443/v1",
        "verdict_mode": "auto",
        "temperature": 0.0,
        "seed": 0,
        "context_window": 128000,
    }
    assert described.items() >= judge.identity().items()
    assert described["verdict_mode_used"] is None and described["probe"].startswith("not run yet")
    for text in (repr(judge), json.dumps(described)):
        assert "pw" not in text and "abc" not in text and KEY not in text
    asyncio.run(judge.aclose())


def test_other_4xx_fail_without_retry(clock):
    server = Server(error(404, "model not found"))
    with pytest.raises(JudgeError, match="HTTP 404"):
        run(make_judge(server), verdicts(items=["a"]))
    assert len(server.requests) == 1


def test_context_length_400_raises_context_too_long(clock):
    message = (
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
        "(4900 in the messages, 100 in the completion). Please reduce the length of the messages or completion."
    )
    server = Server(error(400, message, param="messages"))
    with pytest.raises(ContextTooLong) as caught:
        run(make_judge(server), verdicts(items=["a"]))
    assert (caught.value.tokens, caught.value.limit) == (5000, 4096)
    assert len(server.requests) == 1


def test_prompt_over_the_window_is_refused_before_sending(clock):
    server = Server()
    with pytest.raises(ContextTooLong) as caught:
        run(make_judge(server, context_window=200), verdicts(items=["a"]))
    assert caught.value.limit == 200 and caught.value.tokens > 200
    assert server.requests == []


def test_count_tokens_estimates():
    judge = OpenAIJudge(base_url="http://x/v1", model="m")
    assert judge.count_tokens("abcd" * 10) == 10
    assert judge.count_tokens("abcde") == 2
    assert judge.count_tokens("读者一次最多") == 6
    assert judge.count_tokens("借 12 本书") == 3 + 1  # 3 CJK + " 12 " (4 chars)
    assert judge.count_tokens("") == 0
    asyncio.run(judge.aclose())


# ---- capabilities ---------------------------------------------------------------------


def test_rejected_response_format_falls_back_and_is_remembered(clock):
    good = json.dumps({"questions": ["q"], "noncommittal": False})
    server = Server(
        error(400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", param="response_format"),
        completion(good),
        completion(good),
    )

    async def twice(judge):
        with metered() as first:
            await judge.generate("questions", {"response": "x"}, QUESTIONS_SCHEMA, "en")
        with metered() as second:
            await judge.generate("questions", {"response": "y"}, QUESTIONS_SCHEMA, "en")
        return first, second

    (first, second), _ = run(make_judge(server), twice)
    assert "response_format" in server.requests[0]
    assert "response_format" not in server.requests[1] and "response_format" not in server.requests[2]
    assert first.calls == 2 and first.retries == 0 and second.calls == 1
    assert clock.sleeps == []


def test_waiting_requests_learn_of_a_rejection_before_they_are_sent(clock):
    good = completion(json.dumps({"questions": ["q"], "noncommittal": False}))
    server = Server(error(422, "response_format: extra inputs are not permitted"), good, good, good)

    async def three(judge):
        return await asyncio.gather(*(judge.generate("questions", {"response": r}, QUESTIONS_SCHEMA, "en") for r in "abc"))

    results, usage = run(make_judge(server, concurrency=1), three)
    assert len(results) == 3
    assert ["response_format" in body for body in server.requests] == [True, False, False, False]
    assert usage.calls == 4 and usage.retries == 0


def test_llama_cpp_style_500_validation_error_counts_as_a_rejection(clock):
    message = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
    )
    server = Server(
        hx.Response(500, json={"error": {"message": message, "type": "internal_server_error"}}), completion(batch_reply((1, "yes")))
    )
    result, usage = run(make_judge(server), verdicts(items=["a"]))
    assert result[0].p_yes == 1.0
    assert usage.retries == 0 and usage.calls == 2 and clock.sleeps == []


def test_unsupported_max_tokens_switches_to_max_completion_tokens(clock):
    server = Server(
        error(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            param="max_tokens",
        ),
        completion(batch_reply((1, "yes"))),
    )
    run(make_judge(server), verdicts(items=["a"]))
    assert "max_tokens" not in server.requests[1] and server.requests[1]["max_completion_tokens"] > 0


# ---- single mode: log-probabilities ----------------------------------------------------


def test_single_mode_p_yes_from_top_logprobs(clock):
    server = Server(
        completion("Yes", top={"Yes": -0.1, "No": -2.4, "Answer": -5.0}, usage=(50, 1)),
        completion("No", top={"No": -0.2, " no": -3.0, "Yes": -1.9, " Yes": -4.0}, usage=(50, 1)),
    )
    result, usage = run(make_judge(server, verdict_mode="single", concurrency=1), verdicts(items=CLAIMS[:2]))
    assert result[0].method == "logprobs"
    assert result[0].p_yes == pytest.approx(math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4)))
    yes, no = math.exp(-1.9) + math.exp(-4.0), math.exp(-0.2) + math.exp(-3.0)
    assert result[1].p_yes == pytest.approx(yes / (yes + no))
    body = server.requests[0]
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 10
    assert "response_format" not in body
    assert CLAIMS[0] in last_user(server.requests[0]) and CLAIMS[1] in last_user(server.requests[1])
    assert usage.calls == 2 and usage.prompt_tokens == 100


def test_single_mode_without_logprobs_uses_the_text(clock):
    server = Server(completion("No"), completion("Yes."))
    result, _ = run(make_judge(server, verdict_mode="single", concurrency=1), verdicts(items=CLAIMS[:2]))
    assert result == [Verdict(0.0, None, "text"), Verdict(1.0, None, "text")]


def test_single_mode_server_without_logprobs_support(clock):
    server = Server(error(400, "logprobs is not supported by this server", param="logprobs"), completion("Yes"), completion("No"))

    async def one_then_another(judge):
        return await judge.verdicts("supported", PREMISE, ["a"], "en") + await judge.verdicts("supported", PREMISE, ["b"], "en")

    result, usage = run(make_judge(server, verdict_mode="single"), one_then_another)
    assert [v.p_yes for v in result] == [1.0, 0.0] and {v.method for v in result} == {"text"}
    assert usage.calls == 3 and usage.retries == 0
    assert "logprobs" not in server.requests[1] and "logprobs" not in server.requests[2]


def test_single_mode_one_failing_item_fails_the_call_after_the_others_finish(clock):
    server = Server(completion("Yes"), error(400, "bad request"), completion("No"))
    with pytest.raises(JudgeError, match="HTTP 400"):
        run(make_judge(server, verdict_mode="single", concurrency=1), verdicts(items=CLAIMS))
    assert len(server.requests) == 3


def test_single_mode_unusable_answer_is_asked_again_then_fails(clock):
    server = Server(completion("Maybe"), completion("Perhaps"))
    with pytest.raises(JudgeError, match="neither Yes nor No"):
        run(make_judge(server, verdict_mode="single"), verdicts(items=["a"]))
    assert len(server.requests) == 2 and server.requests[1]["messages"][-1]["content"].startswith("Answer with one word")


# ---- scale ----------------------------------------------------------------------------

RUBRIC = {"rubric": "5 = perfect", "question": "q?", "reference": "r", "response": "a"}
OPTIONS = ["1", "2", "3", "4", "5"]


def test_scale_distribution_from_logprobs(clock):
    server = Server(completion("4", top={"4": -0.5, "3": -1.5, " 5": -2.0, "Grade": -3.0}))
    result, _ = run(make_judge(server), lambda j: j.scale("rubric", RUBRIC, OPTIONS, "en"))
    total = math.exp(-0.5) + math.exp(-1.5) + math.exp(-2.0)
    assert result["4"] == pytest.approx(math.exp(-0.5) / total)
    assert result["3"] == pytest.approx(math.exp(-1.5) / total)
    assert result["5"] == pytest.approx(math.exp(-2.0) / total)
    assert result["1"] == result["2"] == 0.0
    assert sum(result.values()) == pytest.approx(1.0)
    body = server.requests[0]
    assert body["max_tokens"] == 1 and body["logprobs"] is True
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "system" and roles[1:] == ["user", "assistant"] * ((len(roles) - 2) // 2) + ["user"]
    assert "<rubric>" in body["messages"][-1]["content"]


def test_scale_without_logprobs_takes_the_digit(clock):
    server = Server(completion("3"))
    result, _ = run(make_judge(server), lambda j: j.scale("rubric", RUBRIC, OPTIONS, "en"))
    assert result == {"1": 0.0, "2": 0.0, "3": 1.0, "4": 0.0, "5": 0.0}


def test_scale_unusable_reply_is_asked_again_then_fails(clock):
    server = Server(completion("Grade", top={"Grade": -0.1, "The": -1.0}), completion("Good"))
    with pytest.raises(JudgeError, match="none of the options"):
        run(make_judge(server), lambda j: j.scale("rubric", RUBRIC, OPTIONS, "en"))
    assert len(server.requests) == 2


# ---- limits ---------------------------------------------------------------------------


def test_rpm_limiter_spaces_requests(clock):
    server = Server(*[completion("Yes")] * 4)
    run(make_judge(server, verdict_mode="single", requests_per_minute=30, concurrency=4), verdicts(items=list("abcd")))
    assert len(server.requests) == 4
    assert clock.sleeps == [2.0, 2.0, 2.0]  # 60 / 30 s between request starts


def test_rpm_limiter_grants_evenly_spaced_slots(clock):
    limiter = requests.RateLimiter(requests_per_minute=30)
    granted = []

    async def take():
        await limiter.acquire()
        granted.append(clock.now)

    async def main():
        await asyncio.gather(*(take() for _ in range(4)))
        clock.now += 100  # idle for a while: the next request goes at once
        await take()

    asyncio.run(main())
    assert [t - granted[0] for t in granted] == [0.0, 2.0, 4.0, 6.0, 106.0]


def test_rpm_limiter_also_spaces_retries(clock):
    starts = []

    def stamp(response):
        def answer(body):
            starts.append(clock.now)
            return response

        return answer

    server = Server(stamp(error(500, "x")), stamp(hx.Response(200, json=completion(batch_reply((1, "yes"))))))
    run(make_judge(server, requests_per_minute=6), verdicts(items=["a"]))
    assert starts[1] - starts[0] == pytest.approx(10.0)  # the backoff (< 1 s) is inside the 10 s spacing


def test_concurrency_limit_is_respected(clock):
    in_flight = peak = 0

    async def slow(body):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return hx.Response(200, json=completion("Yes"))

    server = Server(*[slow] * 10)
    result, usage = run(make_judge(server, verdict_mode="single", concurrency=3), verdicts(items=[f"c{i}" for i in range(10)]))
    assert len(result) == 10 and usage.calls == 10
    assert peak == 3


# ---- metering -------------------------------------------------------------------------


def test_cost_from_the_price_table(clock):
    server = Server(completion(batch_reply((1, "yes")), usage=(1000, 500)))
    _, usage = run(make_judge(server, model="gpt-4o-mini-2024-07-18"), verdicts(items=["a"]))
    assert usage.cost_usd == pytest.approx((1000 * 0.15 + 500 * 0.60) / 1e6)


def test_custom_price_table(clock, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"test-model": {"input_per_million": 1.0, "output_per_million": 2.0}}))
    server = Server(completion(batch_reply((1, "yes")), usage=(1000, 500)))
    _, usage = run(make_judge(server, prices=PriceTable(prices)), verdicts(items=["a"]))
    assert usage.cost_usd == pytest.approx(0.002)


def test_unknown_model_has_unknown_cost_not_zero(clock):
    server = Server(completion(batch_reply((1, "yes"))))
    _, usage = run(make_judge(server, model="my-local-llama"), verdicts(items=["a"]))
    assert usage.cost_usd is None


def test_usage_is_recorded_per_call_and_estimated_when_the_server_gives_none(clock):
    reply = batch_reply((1, "yes"), (2, "no"))
    server = Server(completion(reply, usage=None))
    judge = make_judge(server)
    _, usage = run(judge, verdicts(items=CLAIMS[:2]))
    assert usage.calls == 1 and usage.cached_calls == 0
    expected_prompt = transport.prompt_tokens(server.requests[0]["messages"])
    assert usage.prompt_tokens == usage.prompt_tokens_evaluated == expected_prompt
    assert usage.completion_tokens == judge.count_tokens(reply)
    assert usage.seconds > 0


def test_usage_lands_on_the_calling_task(clock):
    server = Server(*[completion(batch_reply((1, "yes")), usage=(10 * n, n)) for n in (1, 2)])
    judge = make_judge(server, concurrency=2)

    async def one(name):
        with metered() as usage:
            await judge.verdicts("supported", PREMISE, [name], "en")
        return usage

    async def main():
        try:
            return await asyncio.gather(one("a"), one("b"))
        finally:
            await judge.aclose()

    first, second = asyncio.run(main())
    assert first.calls == second.calls == 1
    assert sorted([first.prompt_tokens, second.prompt_tokens]) == [10, 20]


def test_aclose_closes_the_client():
    judge = OpenAIJudge(base_url="http://x/v1", model="m")
    asyncio.run(judge.aclose())
    assert judge.transport._client.is_closed()


def test_constructor_validates():
    with pytest.raises(ValueError, match="verdict_mode"):
        OpenAIJudge(base_url="http://x/v1", model="m", verdict_mode="both")
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIJudge(base_url="http://x/v1", model="m", concurrency=0)


def test_one_judge_serves_several_event_loops(clock):
    # Each evaluate() call runs its own event loop; the judge's semaphore, rate limiter and
    # connection pool must follow it instead of failing as bound to a closed loop.
    server = Server(*[completion(batch_reply((1, v))) for v in ("yes", "yes", "no", "no")])
    judge = make_judge(server, concurrency=1, requests_per_minute=600)
    premise = {"premise": ["The library opens at 9:00."]}

    async def two_at_once(claim):
        # Two requests with concurrency 1: the second waits, which ties the semaphore to the loop.
        return await asyncio.gather(*(judge.verdicts("supported", premise, [claim], "en") for _ in range(2)))

    first = asyncio.run(two_at_once("It opens at 9:00."))
    second = asyncio.run(two_at_once("It opens at 10:00."))
    assert [v[0].p_yes for v in first + second] == [1.0, 1.0, 0.0, 0.0]
    assert len(server.requests) == 4


_CHAT_REPLY = {
    "id": "c", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Yes"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}  # fmt: skip


def test_a_judge_used_in_one_event_loop_closes_in_another():
    # Each evaluate() runs its own loop; a run answered from the cache makes no request, so
    # the judge is closed in a loop other than the one its connections were opened in.
    with json_server(lambda body: _CHAT_REPLY) as url:
        judge = OpenAIJudge(f"{url}/v1", "m", verdict_mode="single")
        (verdict,) = asyncio.run(judge.verdicts("supported", {"premise": ["A."]}, ["A."], "en"))
        assert verdict.p_yes == 1.0
        asyncio.run(judge.aclose())  # raised "Event loop is closed"
        (again,) = asyncio.run(judge.verdicts("supported", {"premise": ["B."]}, ["B."], "en"))  # and the judge still works
        assert again.p_yes == 1.0
        asyncio.run(judge.aclose())


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?api-key=K", "/v1/chat/completions?api-key=K"),
        ("?api-version=2024-06-01&x=a%20b", "/v1/chat/completions?api-version=2024-06-01&x=a+b"),
    ],
)
def test_a_base_url_with_a_query_sends_it_after_the_request_path(query, expected):
    # The openai client joined the path to the URL as text: /v1/?api-key=Kchat/completions.
    paths = []

    def answer(handler, body):
        paths.append(handler.path)
        send_json(handler, _CHAT_REPLY)

    with serving(answer) as url:
        judge = OpenAIJudge(f"{url}/v1{query}", "m", verdict_mode="single")
        (verdict,) = asyncio.run(judge.verdicts("supported", {"premise": ["A."]}, ["A."], "en"))
        asyncio.run(judge.aclose())
    assert verdict.p_yes == 1.0 and paths == [expected]
    assert "api-key" not in repr(judge) and "api-version" not in str(judge.describe())


def test_a_judge_endpoint_that_redirects_is_not_followed():
    # The openai package follows redirects: the prompts and the key could go to a host the
    # user never configured. Now a redirect fails the request with where it pointed.
    reached = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_POST(self):
            reached.append((self.path, self.headers.get("Authorization")))
            send_json(self, _CHAT_REPLY)

        def log_message(self, *args):
            pass

    class Redirecting(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(307)
            self.send_header("Location", f"http://user:pw@127.0.0.1:{other.server_port}/v1/chat/completions?key=1")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    other, server = HTTPServer(("127.0.0.1", 0), Elsewhere), HTTPServer(("127.0.0.1", 0), Redirecting)
    for running in (server, other):
        threading.Thread(target=running.serve_forever, daemon=True).start()
    try:
        judge = OpenAIJudge(f"http://127.0.0.1:{server.server_port}/v1", "m", api_key=KEY, verdict_mode="single", max_retries=2)
        with pytest.raises(JudgeError) as failure:
            asyncio.run(judge.verdicts("supported", {"premise": ["A."]}, ["A."], "en"))
        asyncio.run(judge.aclose())
    finally:
        server.shutdown()
        other.shutdown()
    assert str(failure.value) == (
        f"the judge endpoint redirected (HTTP 307) to http://127.0.0.1:{other.server_port}/v1/chat/completions; "
        "redirects are not followed: give that address as the base URL"
    )
    assert reached == []
