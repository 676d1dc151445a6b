"""OpenAIJudge against a real OpenAI-compatible server running the packaged model
(llama-cpp-python's own server, in a subprocess), through a proxy that injects faults:
rate limits, server errors, a hang, a cut-off body and cut-off JSON content.

Every call must end with a result or an explicit JudgeError (none lost, none hanging),
every retryable fault must be counted as a retry, and the verdicts must make sense.

What the packaged 1.5B model can be trusted with, measured while writing this test:
in batch mode its reply catches a claim the premise does not mention, but mostly says
"yes" to a claim that contradicts a detail of the premise, and with several items per
request it tends to answer yes, no... in order, whatever the items; in single mode its
log-probabilities rank contradicted claims well below supported ones. The quality checks
below ask each mode for what it can do. (Batch mode reads P(yes) from the log-probabilities
this server returns; a reply whose content a fault cut off falls back to its text.)
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from ragmeter.judges.base import JudgeError, Verdict
from ragmeter.judges.metering import Usage, metered
from ragmeter.judges.openai_compat import OpenAIJudge

sys.path.insert(0, str(Path(__file__).parent))
from fault_proxy import RETRYABLE, FaultProxy
from llama_server import MODEL, N_CTX

pytestmark = pytest.mark.integration

#: No judge call may take longer than this, retries included.
CALL_LIMIT = 600.0

# Batch mode, one claim per call: (premise, supported claim, claim the premise does not mention).
UNMENTIONED = [
    (
        "The Louvre museum in Paris is closed on Tuesdays.",
        "The Louvre is closed on Tuesdays.",
        "The Louvre has a free car park for visitors.",
    ),
    (
        "Water boils at 100 degrees Celsius at sea level.",
        "At sea level, water boils at 100 degrees Celsius.",
        "Water was discovered by Isaac Newton.",
    ),
    (
        "Maria Lopez was elected mayor of Springfield in 2019.",
        "Maria Lopez became mayor of Springfield in 2019.",
        "Maria Lopez has three children.",
    ),
    (
        "The train to Lyon leaves at 8:15 from platform 4.",
        "The train to Lyon departs from platform 4.",
        "The train to Lyon serves breakfast.",
    ),
]
# Batch mode, several claims in one call (robustness only).
SEVERAL = ("The bakery opens at 7:00 and sells bread and croissants.", ["The bakery sells croissants.", "The bakery has a swimming pool."])
# Single mode: (premise, supported claim, claim that contradicts the premise).
CONTRADICTED = [
    ("The Louvre museum in Paris is closed on Tuesdays.", "The Louvre is closed on Tuesdays.", "The Louvre is closed on Mondays."),
    (
        "Water boils at 100 degrees Celsius at sea level.",
        "At sea level, water boils at 100 degrees Celsius.",
        "Water boils at 50 degrees Celsius at sea level.",
    ),
    (
        "Maria Lopez was elected mayor of Springfield in 2019.",
        "Maria Lopez became mayor of Springfield in 2019.",
        "Maria Lopez was elected mayor of Springfield in 2005.",
    ),
    (
        "The train to Lyon leaves at 8:15 from platform 4.",
        "The train to Lyon departs from platform 4.",
        "The train to Lyon leaves from platform 9.",
    ),
]
QUESTIONS_SCHEMA = {
    "type": "object",
    "properties": {"questions": {"type": "array", "items": {"type": "string"}}, "noncommittal": {"type": "boolean"}},
    "required": ["questions", "noncommittal"],
}
# Faults by request number (as the proxy counts POST /chat/completions), and one for the
# generation request, found by a phrase of its system prompt.
FAULTS_BY_NUMBER = {1: "hang", 2: "429", 3: "500", 4: "truncate_body", 6: "truncate_content"}
FAULTS_BY_TEXT = [("you write the questions it answers", "truncate_content")]


def _warm_up(url: str) -> float:
    """Read the batch prompt's constant head once, so that the server's prefix reuse makes
    every later batch request cheap, then time one typical batch request: the judge's
    timeout is set from it, so that the test suits an idle machine and a busy one alike.
    The requests are the judge's own (schema-constrained reply, log-probabilities asked
    for), sent straight to the server: no fault, not metered."""

    async def warm_then_time() -> float:
        judge = OpenAIJudge(f"{url}/v1", MODEL, verdict_mode="batch", concurrency=1, timeout=600, context_window=N_CTX)
        try:
            await judge.verdicts("supported", {"premise": ["Warm-up."]}, ["Warm-up."], "en")
            started = time.monotonic()
            await judge.verdicts("supported", {"premise": ["The shop opens at nine on weekdays."]}, ["The shop opens at nine."], "en")
            return time.monotonic() - started
        finally:
            await judge.aclose()

    return asyncio.run(warm_then_time())


def _p(verdict: Verdict | JudgeError) -> float | None:
    return verdict.p_yes if isinstance(verdict, Verdict) else None


def test_judge_through_faults_against_the_real_server(llama_server):
    started = time.monotonic()
    typical = _warm_up(llama_server)
    # Per-attempt timeout: well above a typical call (~4-12 s on 2 idle cores), which may
    # wait for another in the server's queue, or read a new prompt head (2-3 typical calls).
    # The injected hang costs this long, overlapping with the other in-flight slot's work.
    timeout = min(180.0, max(20.0, 6 * typical))
    host, port = llama_server.removeprefix("http://").split(":")
    with FaultProxy((host, int(port)), FAULTS_BY_NUMBER, FAULTS_BY_TEXT) as proxy:
        outcome = asyncio.run(_scenario(proxy.url + "/v1", timeout))
        hits = list(proxy.hits)
        requests = proxy.requests
        timeline = sorted(proxy.timeline)
    elapsed = time.monotonic() - started
    print(f"\ntypical call {typical:.1f} s, judge timeout {timeout:.0f} s; {requests} requests through the proxy, {elapsed:.0f} s in all")
    print(f"faults hit: {hits}")
    for number, fault, start, end, status in timeline:
        print(f"  #{number:<3} {fault or '':<17} {start - started:6.1f} s -> {end - started:6.1f} s  {status}")
    batch, several, generated, single, scale, usage, described = outcome
    print("batch:", [[(v.p_yes, v.reason) for v in r] if isinstance(r, list) else r for r in batch])
    print("several:", several, "\ngenerated:", generated, "\nsingle:", single, "\nscale:", scale, "\nusage:", usage)

    # Every call ended, with a result or an explicit JudgeError (a hang would have raised
    # TimeoutError out of the scenario).
    calls = [*batch, several, generated, *single, scale]
    for result in calls:
        assert isinstance(result, (list, dict, JudgeError)), result
    # Every scheduled fault was served, and every retryable one was counted as a retry.
    assert sorted(f for _, f in hits) == sorted([*FAULTS_BY_NUMBER.values(), *(f for _, f in FAULTS_BY_TEXT)])
    retryable_hit = sum(1 for _, fault in hits if fault in RETRYABLE)
    assert usage.retries >= retryable_hit, (usage, hits)
    assert usage.calls + usage.retries == requests  # every HTTP exchange was metered
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0 and usage.cost_usd is None
    # Every fault is recoverable: no call should have failed.
    failed = [r for r in calls if isinstance(r, JudgeError)]
    assert not failed, failed

    # Batch mode: a supported claim gets yes more often than one the premise does not mention.
    ordered = sum(_p(sup[0]) > _p(unsup[0]) for sup, unsup in zip(batch[0::2], batch[1::2], strict=False))
    assert ordered >= 3, batch
    methods = [v.method for r in batch for v in r]
    assert set(methods) <= {"logprobs", "text"} and methods.count("logprobs") >= len(methods) - 2, methods
    assert all(v.p_yes in (0.0, 1.0) for r in batch for v in r if v.method == "text")
    assert len(several) == 2 and all(0.0 <= v.p_yes <= 1.0 for v in several)

    assert isinstance(generated["questions"], list) and generated["questions"]
    assert isinstance(generated["noncommittal"], bool)

    # Single mode: the server's log-probabilities, not the text, rank contradicted claims lower.
    assert all(v.method == "logprobs" for pair in single for v in pair)
    assert sum(sup.p_yes > contra.p_yes for sup, contra in single) >= 3, single
    assert sum(scale.values()) == pytest.approx(1.0)
    assert sum(int(k) * p for k, p in scale.items()) > 3.0  # a correct answer, graded high

    assert "sk-test" not in json.dumps(described)


async def _scenario(base_url: str, timeout: float):
    total = Usage()

    async def call(coroutine):
        with metered() as usage:
            try:
                result = await asyncio.wait_for(coroutine, CALL_LIMIT)
            except JudgeError as exc:
                result = exc
        total.add(usage)
        return result

    judge = OpenAIJudge(
        base_url,
        MODEL,
        api_key="sk-test-not-a-real-key",
        verdict_mode="batch",
        concurrency=2,
        timeout=timeout,
        max_retries=4,
        context_window=N_CTX,
    )
    try:
        jobs = [judge.verdicts("supported", {"premise": [p]}, [claim], "en") for p, sup, unsup in UNMENTIONED for claim in (sup, unsup)]
        jobs.append(judge.verdicts("supported", {"premise": [SEVERAL[0]]}, SEVERAL[1], "en"))
        *batch, several = await asyncio.gather(*(call(job) for job in jobs))
        generated = await call(judge.generate("questions", {"response": "The Louvre is closed on Tuesdays."}, QUESTIONS_SCHEMA, "en"))
        described = judge.describe()
    finally:
        await judge.aclose()

    single_judge = OpenAIJudge(base_url, MODEL, verdict_mode="single", concurrency=2, timeout=timeout, context_window=N_CTX)
    try:
        single = await asyncio.gather(
            *(call(single_judge.verdicts("supported", {"premise": [p]}, [sup, contra], "en")) for p, sup, contra in CONTRADICTED)
        )
        rubric = {
            "rubric": "5: the response is correct and complete. 3: partly correct. 1: wrong.",
            "question": "When is the Louvre closed?",
            "reference": "On Tuesdays.",
            "response": "It is closed on Tuesdays.",
        }
        scale = await call(single_judge.scale("rubric", rubric, ["1", "2", "3", "4", "5"], "en"))
    finally:
        await single_judge.aclose()
    return batch, several, generated, single, scale, total, described
