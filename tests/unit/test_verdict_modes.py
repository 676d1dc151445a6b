"""Endpoint verdicts with signal: P(yes) from log-probabilities in batch replies, the verdict
probe of ``verdict_mode="auto"`` (and its place in the disk cache), and the running tally
that warns when a task's verdicts are all the same. Against a scripted fake server."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import sqlite3

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from json_http import send_json, serving
from test_openai_judge import KEY, PREMISE, Server, completion, error, make_judge, run

from ragmeter.judges import requests as judge_requests
from ragmeter.judges.base import JudgeError, Verdict
from ragmeter.judges.cache import CachingJudge, DiskCache
from ragmeter.judges.openai_compat import OpenAIJudge
from ragmeter.judges.probe import (
    MARGIN,
    MIN_AUC,
    PROBE_RETRY_AFTER,
    UNIFORM_AFTER,
    Separation,
    VerdictTally,
    balanced_accuracy,
    probe_cases,
    roc_auc,
)
from ragmeter.judges.replies import verdict_probabilities

CLAIMS = ["Members may borrow 12 books.", "Loans last a year.", "The library has a cafe."]
TRUTH = {claim: label for case in probe_cases() for claim, label in zip(case.claims, case.supported, strict=True)}
N_PROBE_CASES = len(probe_cases())
N_PROBE_CLAIMS = len(TRUTH)


# ---- replies with log-probabilities -----------------------------------------------------


def batch_tokens(entries, merged_quote=False):
    """The tokens of a batch reply ``{"verdicts": [...]}``; each entry (id, reason, value,
    alternatives at the value token as {token: p}). With ``merged_quote`` the opening quote
    and the value are one token (' "yes'), as some tokenizers write them."""
    tokens = [('{"', None), ("verdicts", None), ('":', None), (" [", None)]
    for number, (ident, reason, value, alternatives) in enumerate(entries):
        tokens += [("{" if number == 0 else ", {", None), ('"', None), ("id", None), ('":', None), (f" {ident}", None), (",", None)]
        tokens += [(' "', None), ("reason", None), ('":', None), (' "', None), (reason, None), ('",', None)]
        tokens += [(' "', None), ("verdict", None), ('":', None)]
        if merged_quote:
            tokens += [(f' "{value}', {f' "{k}': p for k, p in alternatives.items()}), ('"}', None)]
        else:
            tokens += [(' "', None), (value, alternatives), ('"}', None)]
    tokens.append(("]}", None))
    return tokens


def logprob_completion(tokens, usage=(100, 10)):
    """A chat.completion whose content is the tokens joined, with their log-probabilities."""
    body = completion("".join(t for t, _ in tokens), usage=usage)
    content = []
    for token, alternatives in tokens:
        top = alternatives or {token: 1.0}
        content.append(
            {
                "token": token,
                "logprob": math.log(top.get(token, 1.0)),
                "bytes": None,
                "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in top.items()],
            }
        )
    body["choices"][0]["logprobs"] = {"content": content}
    return body


def batch_logprob_reply(p_values, merged_quote=False):
    entries = []
    for ident, p in enumerate(p_values, 1):
        value = "yes" if p >= 0.5 else "no"
        entries.append((ident, f"r{ident}", value, {"yes": p * 0.9, "no": (1 - p) * 0.9, "Yes": p * 0.1, "No": (1 - p) * 0.1}))
    return logprob_completion(batch_tokens(entries, merged_quote))


def verdicts(items=CLAIMS, lang="en", premise=PREMISE):
    return lambda judge: judge.verdicts("supported", premise, items, lang)


def test_batch_verdicts_read_p_yes_at_each_verdict_value():
    server = Server(batch_logprob_reply([0.8, 0.3, 0.6]))
    result, usage = run(make_judge(server), verdicts())
    assert [v.method for v in result] == ["logprobs"] * 3
    assert [v.p_yes for v in result] == pytest.approx([0.8, 0.3, 0.6])
    assert [v.reason for v in result] == ["r1", "r2", "r3"]
    assert usage.calls == 1 and len(server.requests) == 1


def test_batch_verdicts_read_a_value_token_that_carries_its_opening_quote():
    server = Server(batch_logprob_reply([0.2, 0.9, 0.55], merged_quote=True))
    result, _ = run(make_judge(server), verdicts())
    assert [v.p_yes for v in result] == pytest.approx([0.2, 0.9, 0.55])
    assert all(v.method == "logprobs" for v in result)


def test_a_value_whose_alternatives_name_neither_answer_keeps_its_text():
    entries = [
        (1, "r1", "yes", {"yes": 0.7, "no": 0.3}),
        (2, "r2", "no", {"no": 0.6, "maybe": 0.4}),  # no yes spelling: still a no/yes split of 0 and 0.6
        (3, "r3", "yes", {"yes": 0.5, "perhaps": 0.5}),
    ]
    tokens = batch_tokens(entries)
    # The third value's alternatives: neither yes nor no.
    tokens = [(t, {"maybe": 0.6, "perhaps": 0.4}) if a == {"yes": 0.5, "perhaps": 0.5} else (t, a) for t, a in tokens]
    tokens = [("yes", a) if a == {"maybe": 0.6, "perhaps": 0.4} else (t, a) for t, a in tokens]
    result, _ = run(make_judge(Server(logprob_completion(tokens))), verdicts())
    assert (result[0].p_yes, result[0].method) == (pytest.approx(0.7), "logprobs")
    assert (result[1].p_yes, result[1].method) == (0.0, "logprobs")
    assert (result[2].p_yes, result[2].method) == (1.0, "text")


def test_a_server_without_logprobs_gives_text_verdicts():
    reply = json.dumps({"verdicts": [{"id": 1, "reason": "ok", "verdict": "yes"}, {"id": 2, "reason": "no", "verdict": "no"}]})
    result, _ = run(make_judge(Server(completion(reply))), verdicts(items=CLAIMS[:2]))
    assert [(v.p_yes, v.method) for v in result] == [(1.0, "text"), (0.0, "text")]


def test_a_server_that_rejects_logprobs_is_asked_without_them():
    reply = json.dumps({"verdicts": [{"id": 1, "reason": "ok", "verdict": "no"}]})
    server = Server(error(400, "logprobs is not supported with this model", param="logprobs"), completion(reply))
    judge = make_judge(server)
    result, usage = run(judge, verdicts(items=CLAIMS[:1]))
    assert result == [Verdict(0.0, "ok", "text")]
    assert "logprobs" in server.requests[0] and "logprobs" not in server.requests[1]
    assert "logprobs" in judge.transport.unsupported and usage.retries == 0


def test_a_verdict_quoted_inside_a_reason_is_not_taken_for_an_entry():
    entries = [(1, 'the text says \\"verdict\\": \\"no\\" here', "yes", {"yes": 0.75, "no": 0.25})]
    probabilities = verdict_probabilities(_response(logprob_completion(batch_tokens(entries))))
    assert probabilities == pytest.approx([0.75])


def test_a_reply_whose_values_cannot_be_matched_to_its_entries_keeps_the_text():
    # Two "verdict" keys in one entry: json keeps one entry, the tokens hold two values.
    tokens = [('{"verdicts": [{"id": 1, "verdict": "', None), ("no", {"no": 0.6, "yes": 0.4}), ('", "verdict": "', None)]
    tokens += [("yes", {"yes": 0.9, "no": 0.1}), ('"}]}', None)]
    result, _ = run(make_judge(Server(logprob_completion(tokens))), verdicts(items=CLAIMS[:1]))
    assert result == [Verdict(1.0, None, "text")]


def _response(body):
    import openai

    return openai.types.chat.ChatCompletion.model_validate(body)


# ---- the probe --------------------------------------------------------------------------


def probe_server(batch_policy, single_policy, *, batch_logprobs=False, then=()):
    """A server answering the probe's requests by policy (claim, true label) -> P(yes), then
    the requests in ``then`` in order. Batch replies are text unless ``batch_logprobs``;
    single replies carry top log-probabilities."""
    later = list(then)

    def answer(body):
        user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        batch = re.findall(r'<statement id="\d+">\n(.*?)\n</statement>', user, re.S)
        single = re.findall(r"<statement>\n(.*?)\n</statement>", user, re.S)
        claims = batch or single
        if not claims or any(c not in TRUTH for c in claims):
            if not later:
                raise AssertionError(f"unexpected request: {user[-300:]}")
            return later.pop(0)
        if batch:
            p_values = [batch_policy(c, TRUTH[c]) for c in claims]
            if batch_logprobs:
                return batch_logprob_reply(p_values)
            entries = [{"id": i, "reason": "r", "verdict": "yes" if p >= 0.5 else "no"} for i, p in enumerate(p_values, 1)]
            return completion(json.dumps({"verdicts": entries}))
        p = single_policy(claims[0], TRUTH[claims[0]])
        return completion("Yes" if p >= 0.5 else "No", top={"Yes": math.log(max(p, 1e-6)), "No": math.log(max(1 - p, 1e-6))})

    return Server(*[answer] * 200)


def always_yes(claim, label):
    return 1.0


def right(claim, label):
    return 0.9 if label else 0.1


def in_order(claim, label):
    """Yes, no, yes, no... whatever the claim: the pattern a weak model falls into."""
    return 1.0 if list(TRUTH).index(claim) % 2 == 0 else 0.0


def test_auto_keeps_batch_when_batch_verdicts_separate_the_probe():
    server = probe_server(right, right, batch_logprobs=True, then=[batch_logprob_reply([0.8, 0.2, 0.3])])
    judge = make_judge(server, verdict_mode="auto")
    result, usage = run(judge, verdicts())
    assert [v.p_yes for v in result] == pytest.approx([0.8, 0.2, 0.3])
    assert len(server.requests) == N_PROBE_CASES + 1  # one batch request per probe case, then the real one
    assert usage.calls == 1  # the probe's calls are its own, not the first sample's
    described = judge.describe()
    assert described["verdict_mode"] == "auto" and described["verdict_mode_used"] == "batch"
    assert described["probe"]["chosen"] == "batch" and len(described["probe"]["tried"]) == 1
    assert described["probe"]["tried"][0]["method"] == "logprobs" and described["probe"]["tried"][0]["roc_auc"] == 1.0
    assert described["probe"]["usage"]["calls"] == N_PROBE_CASES
    assert described["verdict_methods"] == {"logprobs": 3} and described["warnings"] == []


@pytest.mark.parametrize("batch_policy", [always_yes, in_order], ids=["all yes", "yes-no in order"])
def test_auto_falls_back_to_single_mode_when_batch_verdicts_do_not_separate(batch_policy):
    real = [completion("Yes", top={"Yes": math.log(0.7), "No": math.log(0.3)}) for _ in CLAIMS]
    server = probe_server(batch_policy, right, then=real)
    judge = make_judge(server, verdict_mode="auto")
    result, _ = run(judge, verdicts())
    assert [v.p_yes for v in result] == pytest.approx([0.7] * 3) and all(v.method == "logprobs" for v in result)
    assert len(server.requests) == N_PROBE_CASES + N_PROBE_CLAIMS + len(CLAIMS)
    probe = judge.describe()["probe"]
    batch, single = probe["tried"]
    assert (batch["mode"], batch["passed"], batch["method"]) == ("batch", False, "text")
    assert batch["roc_auc"] < MIN_AUC
    assert (single["mode"], single["passed"], single["roc_auc"]) == ("single", True, 1.0)
    assert probe["chosen"] == "single" and probe["warning"] is None
    assert judge.describe()["verdict_mode_used"] == "single"


def mostly_right(claim, label):
    """Right but for the first two claims of each label: passes the probe, far from perfect."""
    misses = [c for c, y in TRUTH.items() if y][:2] + [c for c, y in TRUTH.items() if not y][:2]
    return (0.1 if label else 0.9) if claim in misses else (0.9 if label else 0.1)


def test_auto_prefers_single_mode_when_batch_passes_the_probe_but_single_separates_much_better():
    real = [completion("No", top={"Yes": math.log(0.2), "No": math.log(0.8)}) for _ in CLAIMS]
    server = probe_server(mostly_right, right, then=real)
    judge = make_judge(server, verdict_mode="auto")
    result, _ = run(judge, verdicts())
    assert [v.p_yes for v in result] == pytest.approx([0.2] * 3)
    probe = judge.describe()["probe"]
    batch, single = probe["tried"]
    assert batch["passed"] and batch["balanced_accuracy"] == pytest.approx(10 / 12, abs=1e-4) and batch["balanced_accuracy"] < 1 - MARGIN
    assert single["passed"] and single["balanced_accuracy"] == 1.0
    assert probe["chosen"] == "single" and probe["warning"] is None


def test_auto_keeps_batch_when_single_mode_is_no_better_by_the_margin():
    server = probe_server(mostly_right, mostly_right, batch_logprobs=True, then=[batch_logprob_reply([0.8, 0.2, 0.3])])
    judge = make_judge(server, verdict_mode="auto")
    result, _ = run(judge, verdicts())
    assert [v.p_yes for v in result] == pytest.approx([0.8, 0.2, 0.3])
    probe = judge.describe()["probe"]
    assert [t["mode"] for t in probe["tried"]] == ["batch", "single"] and all(t["passed"] for t in probe["tried"])
    assert probe["chosen"] == "batch" and judge.describe()["verdict_mode_used"] == "batch"


def test_auto_warns_loudly_when_no_mode_separates_the_probe(caplog):
    real = [completion("Yes", top={"Yes": -0.01, "No": -5.0})] * 3
    server = probe_server(always_yes, always_yes, then=real)
    judge = make_judge(server, verdict_mode="auto")
    with caplog.at_level(logging.WARNING, logger="ragmeter.judges.openai"):
        result, _ = run(judge, verdicts())
    assert all(v.p_yes > 0.99 for v in result)
    described = judge.describe()
    assert described["probe"]["chosen"] == "single"  # equally bad: the later, graded one
    (warning,) = described["warnings"]
    assert "did not separate" in warning and "no signal" in warning
    assert any("did not separate" in r.getMessage() for r in caplog.records)


def test_the_probe_outcome_is_kept_in_the_disk_cache(tmp_path):
    cache = DiskCache(tmp_path / "cache.sqlite")
    first = CachingJudge(
        make_judge(probe_server(always_yes, right, then=[completion("Yes", top={"Yes": -0.1, "No": -2.4})] * 3), verdict_mode="auto"), cache
    )
    run(first, verdicts())
    assert first.describe()["verdict_mode_used"] == "single"

    # A new judge on the same cache: the probe's outcome is read back, no probe request is made.
    other_items = ["Loans can be renewed.", "Fines are waived."]
    server = Server(*[completion("No", top={"Yes": -2.0, "No": -0.2})] * 2)
    second = CachingJudge(make_judge(server, verdict_mode="auto"), cache)
    result, usage = run(second, verdicts(items=[*CLAIMS, *other_items]))
    assert [v.p_yes > 0.5 for v in result] == [True, True, True, False, False]
    assert len(server.requests) == 2  # only the two items the cache does not hold
    assert usage.cached_calls == 3 and usage.calls == 2
    assert second.describe()["probe"]["chosen"] == "single"
    assert second.describe()["verdicts"]["supported"]["n"] == 5  # cached verdicts are counted too


def test_auto_and_the_mode_it_chose_share_cached_verdicts(tmp_path):
    cache = DiskCache(tmp_path / "cache.sqlite")
    auto = CachingJudge(
        make_judge(probe_server(right, right, batch_logprobs=True, then=[batch_logprob_reply([0.8, 0.2, 0.3])]), verdict_mode="auto"), cache
    )
    run(auto, verdicts())
    explicit = CachingJudge(make_judge(Server(), verdict_mode="batch"), cache)  # any request would fail: unscripted
    result, usage = run(explicit, verdicts())
    assert [v.p_yes for v in result] == pytest.approx([0.8, 0.2, 0.3]) and usage.cached_calls == 3
    single = CachingJudge(make_judge(Server(*[completion("Yes", top={"Yes": -0.1, "No": -2.4})] * 3), verdict_mode="single"), cache)
    _, usage = run(single, verdicts())
    assert usage.calls == 3  # another mode's answers are not reused


def test_a_probe_that_gets_no_answer_fails_the_call_and_is_not_kept(tmp_path):
    cache = DiskCache(tmp_path / "cache.sqlite")
    server = Server(*[error(401, "bad key")] * 40)
    judge = CachingJudge(make_judge(server, verdict_mode="auto"), cache)
    with pytest.raises(JudgeError, match="verdict probe got no verdicts"):
        run(judge, verdicts())
    assert sqlite3.connect(tmp_path / "cache.sqlite").execute("SELECT COUNT(*) FROM entries").fetchone() == (0,)
    assert judge.describe()["verdict_mode_used"] is None


def test_a_failed_probe_is_not_run_again_for_every_sample_but_again_once_the_judge_is_back(monkeypatch):
    # Every sample ran the whole probe again against an endpoint that errs.
    now, requests_seen, up = [1000.0], [], [False]
    monkeypatch.setattr(judge_requests, "clock", lambda: now[0])

    def answer(handler, body):
        requests_seen.append(handler.path)
        if up[0]:
            send_json(handler, completion("Yes", top={"Yes": -0.05, "No": -3.0}))
        else:
            send_json(handler, {"error": {"message": "bad key", "type": "invalid_request_error"}}, status=401)

    with serving(answer) as url:
        judge = OpenAIJudge(f"{url}/v1", "m", api_key=KEY, verdict_mode="auto")
        with pytest.raises(JudgeError, match="verdict probe got no verdicts"):
            asyncio.run(judge.verdicts("supported", PREMISE, CLAIMS, "en"))
        probed = len(requests_seen)
        for _ in range(5):  # the next samples, within PROBE_RETRY_AFTER: no request
            with pytest.raises(JudgeError, match="verdict probe got no verdicts"):
                asyncio.run(judge.verdicts("supported", PREMISE, CLAIMS, "en"))
        assert len(requests_seen) == probed
        now[0] += PROBE_RETRY_AFTER
        up[0] = True
        result = asyncio.run(judge.verdicts("supported", PREMISE, CLAIMS, "en"))
        asyncio.run(judge.aclose())
    assert len(result) == 3 and len(requests_seen) > probed and judge.describe()["verdict_mode_used"] is not None


def test_concurrent_first_calls_run_the_probe_once():
    real = [batch_logprob_reply([0.8, 0.2, 0.3])] * 4
    server = probe_server(right, right, batch_logprobs=True, then=real)
    judge = make_judge(server, verdict_mode="auto")

    async def four(j):
        return await asyncio.gather(*(j.verdicts("supported", PREMISE, CLAIMS, "en") for _ in range(4)))

    results, _ = run(judge, four)
    assert len(results) == 4 and len(server.requests) == N_PROBE_CASES + 4


def test_explicit_modes_do_not_probe():
    server = Server(completion(json.dumps({"verdicts": [{"id": 1, "reason": "", "verdict": "yes"}]})))
    judge = make_judge(server, verdict_mode="batch")
    run(judge, verdicts(items=CLAIMS[:1]))
    assert len(server.requests) == 1 and "probe" not in judge.describe()


def test_probe_measures():
    assert roc_auc([True, True, False, False], [0.9, 0.6, 0.6, 0.1]) == pytest.approx(0.875)
    assert roc_auc([True, False], [0.5, 0.5]) == 0.5 and roc_auc([True, True], [0.1, 0.2]) == 0.5
    assert balanced_accuracy([True, True, False, False], [True, False, False, False]) == pytest.approx(0.75)
    labels = [True, False] * 6
    assert not Separation.measure("batch", labels, [Verdict(1.0)] * 12).passed  # all yes
    ranked_but_all_yes = [Verdict(0.9 if y else 0.6, method="logprobs") for y in labels]
    assert Separation.measure("batch", labels, ranked_but_all_yes).roc_auc == 1.0
    assert not Separation.measure("batch", labels, ranked_but_all_yes).passed  # every decision yes
    assert Separation.measure("single", labels, [Verdict(0.8 if y else 0.3) for y in labels]).passed


def test_probe_measures_match_sklearn_on_tied_scores_and_unequal_classes():
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    # 3 supported, 5 unsupported; P(yes) 0.5 and 0.7 shared across the classes.
    labels = [True, True, True, False, False, False, False, False]
    p_yes = [0.7, 0.5, 0.5, 0.7, 0.5, 0.2, 0.1, 0.5]
    # By hand: 15 pairs. 0.7 beats 0.5, 0.2, 0.1, 0.5 and ties 0.7: 4.5; each 0.5 beats 0.2
    # and 0.1 and ties the two 0.5s: 3. (4.5 + 3 + 3) / 15 = 0.7.
    assert roc_auc_score(labels, p_yes) == pytest.approx(0.7)
    assert roc_auc(labels, p_yes) == pytest.approx(roc_auc_score(labels, p_yes))
    decisions = [p >= 0.5 for p in p_yes]
    # Recall of yes 3/3, of no 2/5: (1 + 0.4) / 2 = 0.7.
    assert balanced_accuracy(labels, decisions) == pytest.approx(balanced_accuracy_score(labels, decisions))
    assert balanced_accuracy(labels, decisions) == pytest.approx(0.7)
    # One class only: no separation to measure, chance (0.5) for both measures.
    assert balanced_accuracy([True, True], [True, False]) == 0.5 and balanced_accuracy([False], [False]) == 0.5


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 4), st.booleans()), min_size=2, max_size=30))
def test_probe_measures_match_sklearn_whatever_the_ties(rows):
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    labels = [y for y, _, _ in rows]
    assume(any(labels) and not all(labels))
    p_yes = [s / 4 for _, s, _ in rows]
    decisions = [d for _, _, d in rows]
    assert roc_auc(labels, p_yes) == pytest.approx(roc_auc_score(labels, p_yes), abs=1e-12)
    assert balanced_accuracy(labels, decisions) == pytest.approx(balanced_accuracy_score(labels, decisions), abs=1e-12)


def test_the_probe_is_balanced_and_bilingual():
    cases = probe_cases()
    labels = [label for case in cases for label in case.supported]
    assert labels.count(True) == labels.count(False) >= 10
    assert {case.lang for case in cases} == {"en", "zh"}
    # No fixed answer order: neither "all yes" nor "yes, no, yes, no..." passes.
    assert roc_auc(labels, [float(i % 2 == 0) for i in range(len(labels))]) < MIN_AUC


# ---- the tally of verdicts --------------------------------------------------------------


def test_the_tally_warns_once_when_a_task_says_yes_to_everything(caplog):
    tally = VerdictTally()
    with caplog.at_level(logging.WARNING, logger="ragmeter.judges"):
        tally.add("supported", [Verdict(1.0)] * (UNIFORM_AFTER - 1))
        assert tally.warnings() == []
        tally.add("supported", [Verdict(1.0)])
        tally.add("supported", [Verdict(1.0)] * 5)
    (warning,) = tally.warnings()
    assert f"all {UNIFORM_AFTER + 5} verdicts of the task 'supported'" in warning and "no signal at all" in warning
    assert sum("supported" in r.getMessage() for r in caplog.records) == 1
    assert tally.to_dict()["supported"] == {"n": UNIFORM_AFTER + 5, "share_yes": 1.0, "p_min": 1.0, "p_max": 1.0}


def test_the_tally_tells_graded_but_one_sided_verdicts_apart():
    tally = VerdictTally(uniform_after=4)
    tally.add("useful", [Verdict(0.6), Verdict(0.9), Verdict(0.7), Verdict(0.55)])
    (warning,) = tally.warnings()
    assert "still rank items" in warning
    tally.add("useful", [Verdict(0.2)])
    assert tally.warnings() == []


def test_the_judge_counts_its_verdicts_per_task():
    reply = json.dumps({"verdicts": [{"id": i, "reason": "", "verdict": v} for i, v in ((1, "yes"), (2, "no"), (3, "yes"))]})
    judge = make_judge(Server(completion(reply)))
    run(judge, verdicts())
    assert judge.describe()["verdicts"] == {"supported": {"n": 3, "share_yes": 0.6667, "p_min": 0.0, "p_max": 1.0}}
    assert KEY not in json.dumps(judge.describe())
