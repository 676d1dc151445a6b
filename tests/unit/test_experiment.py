"""A/B experiments: two toy RAG pipelines over an in-test knowledge base, scored and compared.

The knowledge base holds, for each of 60 widgets, a fact ("The zorbN widget weighs W
kilograms.") and, for two widgets in three, a distractor note that shares more rare words
with the question than the fact does. An IDF-weighted keyword retriever therefore ranks
the distractor first and the fact second for those widgets: with top_k=1 the fact is
retrieved for a third of the questions only, with top_k=3 for all of them, and the
generator (which copies the weight from a retrieved fact, else says it does not know)
is right accordingly. The planted difference is 40 of 60 samples.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
import time
from collections import Counter

import pytest

import ragmeter
from ragmeter.decide.compare import A_BETTER, B_BETTER, NO_DIFFERENCE, compare_runs
from ragmeter.decide.experiment import arun_experiment, run_experiment
from ragmeter.results import Result
from ragmeter.run.pipelines import ConfiguredPipeline, pipeline_from_config
from ragmeter.run.replies import PipelineOutputError, normalise_output

N = 60
METRICS = ["token_f1", "hit_rate", "retrieval_recall"]


def weight(i: int) -> int:
    return 3 + (7 * i) % 41


def entity(i: int) -> str:
    return f"zorb{i}"


KB: dict[str, str] = {}
for _i in range(N):
    KB[f"fact-{_i:02d}"] = f"The {entity(_i)} widget weighs {weight(_i)} kilograms."
    if _i % 3:
        KB[f"note-{_i:02d}"] = f"Customers keep asking whether the {entity(_i)} widget is heavy."


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


DF = Counter(w for text in KB.values() for w in words(text))


def retrieve(question: str, k: int) -> list[str]:
    """Documents by the summed inverse document frequency of the words they share with the
    question (ties by id), best first."""
    q = words(question)
    return sorted(KB, key=lambda d: (-sum(1 / DF[w] for w in q & words(KB[d])), d))[:k]


def generate(question: str, contexts: list[str]) -> str:
    name = re.search(r"zorb\d+", question).group(0)
    for text in contexts:
        found = re.search(rf"The {name} widget weighs (\d+) kilograms", text)
        if found:
            return f"The {name} widget weighs {found.group(1)} kilograms."
    return "I do not know."


def question(i: int) -> str:
    return f"Is the {entity(i)} widget heavy?"


TESTSET = [{"user_input": question(i), "reference": KB[f"fact-{i:02d}"], "reference_context_ids": [f"fact-{i:02d}"]} for i in range(N)]


def build(config: dict) -> object:
    """The config-dict adapter: a sync pipeline returning a dict."""
    k = config["top_k"]

    def pipeline(q: str) -> dict:
        ids = retrieve(q, k)
        contexts = [KB[i] for i in ids]
        return {"contexts": contexts, "answer": generate(q, contexts), "context_ids": ids, "retriever": f"keyword@{k}"}

    return pipeline


def test_the_toy_retriever_plants_the_difference():
    assert retrieve(question(1), 3)[:2] == ["note-01", "fact-01"]
    assert retrieve(question(3), 1) == ["fact-03"]
    assert generate(question(1), [KB[d] for d in retrieve(question(1), 1)]) == "I do not know."


def test_a_config_experiment_finds_the_better_top_k_and_writes_both_runs_and_the_comparison(tmp_path):
    a = pipeline_from_config(build, {"top_k": 1})
    b = pipeline_from_config(build, {"top_k": 3})
    assert isinstance(a, ConfiguredPipeline) and a.name == "top_k=1" and a.config == {"top_k": 1}
    experiment = run_experiment(a, b, TESTSET, METRICS, out_dir=tmp_path / "ab")

    assert experiment.names == ("top_k=1", "top_k=3")
    comparison = experiment.comparison
    assert comparison.label_a == "top_k=1" and comparison.label_b == "top_k=3"
    assert comparison.matching.to_dict()["n_matched"] == N
    f1 = comparison.metric("token_f1")
    assert f1.verdict == B_BETTER and f1.p_holm < 0.001 and f1.n_pairs == N
    assert f1.mean_a == pytest.approx(20 / 60, abs=0.02) and f1.mean_b == pytest.approx(1.0)
    assert f1.ci_low > 0.5  # 40 of 60 samples gain about 1
    hit = comparison.metric("hit_rate")
    assert hit.verdict == B_BETTER and hit.mean_a == pytest.approx(1 / 3) and hit.mean_b == 1.0
    assert experiment.means()["retrieval_recall"] == (pytest.approx(1 / 3), 1.0)

    root = tmp_path / "ab"
    for side, k in (("top_k=1", 1), ("top_k=3", 3)):
        side_dir = root / side
        for name in ("results.jsonl", "summary.json", "report.md", "report.html"):
            assert (side_dir / name).is_file(), f"{side}/{name}"
        loaded = Result.load(side_dir)
        assert len(loaded.samples) == N
        assert loaded.run["pipeline"]["config"] == {"top_k": k}
        first = loaded.samples[1].sample
        assert first.retrieved_context_ids == retrieve(question(1), k) and first.metadata["retriever"] == f"keyword@{k}"
    document = json.loads((root / "experiment.json").read_text())
    assert document["a"]["config"] == {"top_k": 1} and document["b"]["config"] == {"top_k": 3}
    assert document["a"]["n_errors"] == 0 and document["means"]["hit_rate"]["b"] == 1.0
    token_f1 = next(m for m in document["comparison"]["metrics"] if m["metric"] == "token_f1")
    assert token_f1["verdict"] == B_BETTER
    assert json.loads((root / "compare.json").read_text())["a"]["label"] == "top_k=1"
    assert "token_f1" in (root / "compare.md").read_text() and (root / "compare.html").is_file()
    # The two run directories compare the same way later on (the samples got ids).
    again = compare_runs(root / "top_k=1", root / "top_k=3")
    assert again.metric("token_f1").verdict == B_BETTER and again.matching.to_dict()["n_matched"] == N


def test_identical_pipelines_show_no_significant_difference():
    same = build({"top_k": 2})
    experiment = run_experiment(same, same, TESTSET[:30], ["token_f1", "hit_rate"])
    assert experiment.names == ("A", "B")
    assert {m.metric: m.verdict for m in experiment.comparison.metrics} == {"token_f1": NO_DIFFERENCE, "hit_rate": NO_DIFFERENCE}
    assert experiment.comparison.metric("token_f1").mean_diff == 0


def test_the_worse_side_as_b_is_found_worse():
    experiment = run_experiment(build({"top_k": 3}), build({"top_k": 1}), TESTSET, ["token_f1"], names=("three", "one"))
    assert experiment.comparison.metric("token_f1").verdict == A_BETTER


def test_async_pipelines_run_concurrently_up_to_the_limit_and_return_tuples():
    in_flight, peak = 0, 0

    def make(k: int):
        async def pipeline(q: str):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.005)
            in_flight -= 1
            contexts = [KB[i] for i in retrieve(q, k)]
            return contexts, generate(q, contexts)  # no ids: the id metrics cannot score

        return pipeline

    experiment = asyncio.run(
        arun_experiment(make(1), make(3), TESTSET, ["token_f1", "hit_rate"], names=("one", "three"), pipeline_concurrency=5)
    )
    assert peak == 5
    assert experiment.comparison.metric("token_f1").verdict == B_BETTER
    hit = experiment.result_b.aggregates["hit_rate"]
    assert hit["n_scored"] == 0 and "retrieved_context_ids" in hit["unscored_reasons"][0]["reason"]


def test_async_pipelines_built_from_a_config_and_run_from_inside_an_event_loop():
    def build_async(config):
        async def pipeline(q):
            await asyncio.sleep(0)
            ids = retrieve(q, config["top_k"])
            return {"retrieved_contexts": [KB[i] for i in ids], "response": generate(q, [KB[i] for i in ids]), "retrieved_context_ids": ids}

        return pipeline

    a, b = pipeline_from_config(build_async, {"top_k": 1}, name="narrow"), pipeline_from_config(build_async, {"top_k": 3}, name="wide")
    assert a.is_async

    async def notebook_cell():
        return run_experiment(a, b, TESTSET, ["hit_rate"])  # blocking call inside a running loop

    experiment = asyncio.run(notebook_cell())
    assert experiment.names == ("narrow", "wide")
    assert experiment.comparison.metric("hit_rate").verdict == B_BETTER


def test_sync_pipelines_respect_the_concurrency_limit():
    lock, in_flight, peak = threading.Lock(), [0], [0]

    def pipeline(q):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.005)
        with lock:
            in_flight[0] -= 1
        return build({"top_k": 3})(q)

    run_experiment(pipeline, pipeline, TESTSET[:24], ["hit_rate"], pipeline_concurrency=3)
    assert 1 < peak[0] <= 3


def flaky(config):
    """top_k=3, but raises for zorb5 and zorb7 and returns malformed outputs for zorb8 and zorb9."""
    good = build(config)

    def pipeline(q):
        if "zorb5 " in q:
            raise RuntimeError("index shard 5 is offline")
        if "zorb7 " in q:
            return next(d for d in KB if d == "missing")  # StopIteration, which no future can carry
        if "zorb8 " in q:
            return "The zorb8 widget weighs 59 kilograms."  # no contexts
        if "zorb9 " in q:
            return {"contexts": [KB["fact-09"]], "answer": 59}
        return good(q)

    return pipeline


def test_a_failing_or_malformed_sample_is_unscored_with_the_error_and_the_others_are_scored(tmp_path):
    experiment = run_experiment(
        build({"top_k": 3}), flaky({"top_k": 3}), TESTSET, METRICS, out_dir=tmp_path / "ab", names=("good", "flaky")
    )
    samples = {s.sample.user_input: s for s in experiment.result_b.samples}
    assert len(samples) == N
    expected = {
        5: "RuntimeError: index shard 5 is offline",
        7: "RuntimeError: the pipeline raised StopIteration",
        8: "PipelineOutputError: a pipeline must return (contexts, answer) or a dict with contexts and answer, got str",
        9: "PipelineOutputError: the answer must be a string, got int",
    }
    for i, error in expected.items():
        failed = samples[question(i)]
        assert failed.sample.metadata["pipeline_error"] == error
        assert failed.sample.response is None and failed.sample.retrieved_contexts is None
        for metric in METRICS:
            score = failed.scores[metric]
            assert score.value is None and score.failed and score.reason == f"pipeline error: {error}"
    assert "index shard 5" in samples[question(5)].sample.metadata["pipeline_traceback"]
    scored = [s for q, s in samples.items() if q not in {question(i) for i in expected}]
    assert len(scored) == N - 4 and all(s.scores["token_f1"].value == 1.0 for s in scored)
    aggregate = experiment.result_b.aggregates["token_f1"]
    assert aggregate["n_scored"] == N - 4 and aggregate["n_failed"] == 4 and aggregate["mean"] == 1.0
    # Test-set order is kept, the run's record lists the errors, and the comparison leaves them out.
    assert [s.sample.user_input for s in experiment.result_b.samples] == [question(i) for i in range(N)]
    assert experiment.b.run.errors == {f"<list>:{i + 1}": error for i, error in expected.items()}
    assert len([i for i in experiment.result_b.issues if "pipeline error" in i.message]) == 4
    excluded = experiment.comparison.metric("token_f1").excluded
    assert excluded["unscored_in_b"] == 4 and experiment.comparison.metric("token_f1").n_pairs == N - 4
    saved = Result.load(tmp_path / "ab" / "flaky")
    assert saved.samples[5].scores["hit_rate"].reason == f"pipeline error: {expected[5]}"
    assert json.loads((tmp_path / "ab" / "experiment.json").read_text())["b"]["n_errors"] == 4


def test_a_hung_sync_call_times_out_alone_and_does_not_hold_up_the_others():
    release = threading.Event()

    def slow_on_two(q):
        if "zorb2 " in q:
            release.wait(10)
        return build({"top_k": 3})(q)

    started = time.perf_counter()
    try:
        experiment = run_experiment(build({"top_k": 3}), slow_on_two, TESTSET[:12], ["token_f1"], timeout=0.5, pipeline_concurrency=1)
    finally:
        release.set()
    assert time.perf_counter() - started < 5, "the hung thread neither blocked the queue nor the end of the run"
    errors = experiment.b.run.errors
    assert errors == {"<list>:3": "TimeoutError: no answer within 0.5 s"}
    assert experiment.result_b.samples[2].scores["token_f1"].reason == "pipeline error: TimeoutError: no answer within 0.5 s"
    assert experiment.result_b.aggregates["token_f1"]["n_scored"] == 11


def test_an_async_call_that_times_out_is_cancelled_and_a_timeout_the_pipeline_raises_is_reported_as_such():
    cancelled = []

    async def stuck_on_four(q):
        if "zorb4 " in q:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(q)
                raise
        return build({"top_k": 3})(q)

    def upstream_timeout(q):
        if "zorb1 " in q:
            raise TimeoutError("the vector store did not answer")
        return build({"top_k": 3})(q)

    experiment = run_experiment(stuck_on_four, upstream_timeout, TESTSET[:6], ["token_f1"], timeout=0.3)
    assert experiment.a.run.errors == {"<list>:5": "TimeoutError: no answer within 0.3 s"} and cancelled == [question(4)]
    assert experiment.b.run.errors == {"<list>:2": "TimeoutError: the vector store did not answer"}


def test_latency_is_recorded_per_sample():
    def timed(q):
        if "zorb0 " in q:
            time.sleep(0.05)
        out = build({"top_k": 3})(q)
        return {**out, "latency_ms": 7} if "zorb1 " in q else out

    experiment = run_experiment(timed, flaky({"top_k": 3}), TESTSET[:10], ["token_f1", "latency_ms"])
    a = experiment.result_a.samples
    assert (
        a[0].sample.metadata["pipeline_latency_ms"] >= 50
        and a[0].sample.metadata["latency_ms"] == a[0].sample.metadata["pipeline_latency_ms"]
    )
    assert a[1].sample.metadata["latency_ms"] == 7 and a[1].scores["latency_ms"].value == 7.0  # the pipeline's own figure wins
    assert all(s.scores["latency_ms"].value is not None for s in a)
    assert experiment.a.run.describe()["latency_ms"]["max"] >= 50
    failed = experiment.result_b.samples[5].sample.metadata
    assert "latency_ms" not in failed and failed["pipeline_latency_ms"] >= 0


def test_normalise_output_accepts_pairs_and_dicts_and_names_what_is_wrong():
    out = normalise_output((["c1", "c2"], "answer"))
    assert out.contexts == ["c1", "c2"] and out.answer == "answer" and out.context_ids is None
    out = normalise_output(
        {"retrieved_contexts": ("c",), "response": "r", "retrieved_context_ids": [1], "tokens": 12, "model": "m", "doc": object()}
    )
    assert out.contexts == ["c"] and out.context_ids == ["1"] and out.tokens == 12
    assert out.extra["model"] == "m" and out.extra["doc"].startswith("<object object")  # kept as text: results stay writable
    problems = {
        "contexts and answer": ("just text",),
        "lacks answer": ({"contexts": []},),
        "twice": ({"contexts": [], "retrieved_contexts": [], "answer": "a"},),
        "contexts must be a list": ({"contexts": "one", "answer": "a"},),
        "strings only": (([1], "a"),),
        "latency_ms must be a number": ({"contexts": [], "answer": "a", "latency_ms": "fast"},),
        "non-negative finite": ({"contexts": [], "answer": "a", "latency_ms": math.nan},),
        "got an integer of about 400 digits": ({"contexts": [], "answer": "a", "latency_ms": 10**400},),  # no OverflowError
        "context_ids must be a list": ({"contexts": [], "answer": "a", "context_ids": "d1"},),
    }
    for message, (value,) in problems.items():
        with pytest.raises(PipelineOutputError, match=message):
            normalise_output(value)


def test_bad_options_fail_before_any_pipeline_runs():
    calls = []

    def counting(q):
        calls.append(q)
        return [], "a"

    for options in ({"timeout": 0}, {"alpha": 1.5}, {"pipeline_concurrency": 0}, {"names": ("x", "")}):
        with pytest.raises(ValueError):
            run_experiment(counting, counting, TESTSET[:3], ["token_f1"], **options)
    with pytest.raises(TypeError):
        run_experiment(counting, "not a pipeline", TESTSET[:3], ["token_f1"])
    with pytest.raises(ValueError, match="asked for twice"):
        run_experiment(counting, counting, TESTSET[:3], ["token_f1", "token_f1"])
    with pytest.raises(ragmeter.InputError):
        run_experiment(counting, counting, [], ["token_f1"])
    assert calls == []


def test_repeated_questions_without_ids_are_still_paired_one_to_one(tmp_path):
    path = tmp_path / "questions.jsonl"
    rows = [TESTSET[1], TESTSET[1], TESTSET[2]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    experiment = run_experiment(build({"top_k": 1}), build({"top_k": 3}), str(path), ["hit_rate"])
    matching = experiment.comparison.matching.to_dict()
    assert matching["n_matched"] == 3 and matching["duplicates_a"] == []
    assert [s.sample.id for s in experiment.result_a.samples] == [f"{path}:1", f"{path}:2", f"{path}:3"]


def test_metrics_default_to_the_model_free_ones_the_answers_support():
    experiment = run_experiment(build({"top_k": 1}), build({"top_k": 3}), TESTSET[:9])
    ids = experiment.result_a.metric_ids
    assert {"token_f1", "hit_rate", "latency_ms"} <= set(ids)
    assert not any(m["needs"] == "llm" for m in experiment.result_a.metrics)


def test_the_experiment_api_is_public():
    assert ragmeter.run_experiment is run_experiment and ragmeter.pipeline_from_config is pipeline_from_config
    assert "run_experiment" in ragmeter.__all__ and "arun_experiment" not in ragmeter.__all__
