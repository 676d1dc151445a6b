"""The engine: isolation of each (sample, metric), explicit unscored reasons, journal and resume."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass

import pytest

from ragmeter import Evaluator, InputError, Metric, Result, Sample, Score, evaluate, load_dataset
from ragmeter.run.journal import JOURNAL_FILE


@dataclass(frozen=True)
class ResponseLength(Metric):
    """Length of the response in characters, divided by 100 and capped at 1."""

    name = "response_length"
    family = "lexical"
    required = ("response",)

    async def score(self, sample, judges):
        return Score(min(len(sample.response) / 100, 1.0), "length / 100")


@dataclass(frozen=True)
class Exploding(Metric):
    """Raises on responses that contain 'boom'."""

    name = "exploding"
    family = "lexical"
    required = ("response",)

    async def score(self, sample, judges):
        if "boom" in sample.response:
            raise RuntimeError("the judge fell over")
        return Score(1.0)


@dataclass(frozen=True)
class Misbehaving(Metric):
    """Returns what the response asks for: NaN is refused by Score, 1.7 is out of range."""

    name = "misbehaving"
    family = "lexical"
    required = ("response",)

    async def score(self, sample, judges):
        if sample.response == "nan":
            return Score(math.nan)
        if sample.response == "big":
            return Score(1.7)
        if sample.response == "none":
            return None
        return Score(0.5)


@dataclass(frozen=True)
class Counting(Metric):
    """Counts its calls in a shared list; scores 1."""

    name = "counting"
    family = "lexical"
    required = ("response",)
    calls: list = None  # type: ignore[assignment]

    def config(self):
        return {}

    async def score(self, sample, judges):
        self.calls.append(sample.id)
        await asyncio.sleep(0)
        return Score(1.0)


def samples(n, response="short answer"):
    return [Sample(id=f"s{i}", user_input=f"question {i}", response=response) for i in range(n)]


def test_an_exception_becomes_a_failed_unscored_entry_and_others_run():
    data = [*samples(3), Sample(id="bad", response="boom")]
    result = evaluate(data, [Exploding(), ResponseLength()], progress=False)
    bad = result.samples[-1].scores
    assert bad["exploding"].value is None and bad["exploding"].failed
    assert bad["exploding"].reason == "error: RuntimeError: the judge fell over"
    assert "RuntimeError" in bad["exploding"].details["traceback"]
    assert bad["response_length"].value == pytest.approx(0.04)
    assert all(s.scores["exploding"].value == 1.0 for s in result.samples[:3])
    aggregate = result.aggregates["exploding"]
    assert (aggregate["n_scored"], aggregate["n_unscored"], aggregate["n_failed"]) == (3, 1, 1)


def test_nan_out_of_range_and_non_score_returns_are_explicit_failures():
    data = [Sample(id=r, response=r) for r in ("nan", "big", "none", "ok")]
    scores = {s.key: s.scores["misbehaving"] for s in evaluate(data, [Misbehaving()], progress=False).samples}
    assert scores["nan"].failed and "finite number" in scores["nan"].reason
    assert scores["big"].failed and "outside [0, 1]" in scores["big"].reason
    assert scores["none"].failed and "not a Score" in scores["none"].reason
    assert scores["ok"].value == 0.5


def test_score_without_value_requires_a_reason():
    with pytest.raises(ValueError, match="must say why"):
        Score(None)
    with pytest.raises(ValueError, match="finite"):
        Score(float("inf"))


def test_missing_required_field_is_unscored_with_reason_and_reported():
    data = [Sample(id="a", response="x"), Sample(id="b", user_input="no response here")]
    result = evaluate(data, [ResponseLength()], progress=False)
    b = result.samples[1].scores["response_length"]
    assert b.value is None and b.reason == "missing required field(s): response" and not b.failed
    (issue,) = result.issues
    assert (issue.location, issue.field, issue.skipped) == ("row 2", "response", False)
    assert "required by response_length" in issue.message


def test_strict_mode_makes_a_missing_field_fatal():
    data = [Sample(id="a", response="x"), Sample(id="b")]
    with pytest.raises(InputError, match="row 2, field 'response'"):
        evaluate(data, [ResponseLength()], progress=False, strict=True)


def test_results_keep_dataset_and_metric_order_under_concurrency():
    result = evaluate(samples(50), [ResponseLength(), Exploding()], concurrency=7, progress=False)
    assert [s.key for s in result.samples] == [f"s{i}" for i in range(50)]
    assert result.metric_ids == ["response_length", "exploding"]
    assert all(list(s.scores) == ["response_length", "exploding"] for s in result.samples)


def test_duplicate_and_unknown_metrics_are_rejected():
    with pytest.raises(ValueError, match="asked for twice"):
        Evaluator(["token_f1", "token_f1"])
    with pytest.raises(ValueError, match="unknown metric 'tokn_f1'; did you mean token_f1"):
        Evaluator(["tokn_f1"])
    with pytest.raises(ValueError, match="takes no @k"):
        Evaluator(["token_f1@3"])


def test_auto_selection_picks_metrics_whose_fields_exist():
    result = evaluate([Sample(id="a", response="Paris", reference="Paris")], progress=False)
    assert "exact_match" in result.metric_ids
    assert "ndcg" not in result.metric_ids, "no sample has context ids"
    assert result.samples[0].scores["exact_match"].value == 1.0


def test_a_finished_run_is_reused_from_its_results_and_leaves_no_journal(tmp_path):
    calls: list = []
    metric = Counting(calls=calls)
    first = evaluate(samples(5), [metric, ResponseLength()], out_dir=tmp_path, progress=False)
    assert len(calls) == 5
    assert not (tmp_path / JOURNAL_FILE).exists(), "results.jsonl holds every journalled score"
    second = evaluate(samples(5), [metric, ResponseLength()], out_dir=tmp_path, progress=False)
    assert len(calls) == 5, "nothing recomputed"
    assert second.run["pairs_resumed"] == 10 and second.run["pairs_computed"] == 0
    assert _values(first) == _values(second)


@dataclass(frozen=True)
class Interrupting(Counting):
    """Like Counting, but the sample named ``stop_at`` interrupts the whole run (Ctrl-C)."""

    name = "interrupting"
    stop_at: str = ""

    async def score(self, sample, judges):
        if sample.id == self.stop_at:
            raise KeyboardInterrupt
        return await super().score(sample, judges)


def _interrupted(data, calls, stop_at, out):
    with pytest.raises(KeyboardInterrupt):
        evaluate(data, [Interrupting(calls=calls, stop_at=stop_at)], out_dir=out, progress=False, concurrency=1)


def test_an_interrupted_run_resumes_from_its_journal_even_after_a_torn_line(tmp_path):
    calls: list = []
    _interrupted(samples(6), calls, "s3", tmp_path)
    journal = tmp_path / JOURNAL_FILE
    lines = journal.read_text().splitlines()
    assert [json.loads(line)["sample"] for line in lines] == ["s0", "s1", "s2"]
    assert not (tmp_path / "results.jsonl").exists()
    # Tear the last record in half, as a kill during a write would.
    journal.write_text(lines[0] + "\n" + lines[1] + "\n" + lines[2][: len(lines[2]) // 2])
    calls.clear()
    _interrupted(samples(6), calls, "s4", tmp_path)
    assert calls == ["s2", "s3"], "the torn record is computed again"
    calls.clear()
    result = evaluate(samples(6), [Interrupting(calls=calls)], out_dir=tmp_path, progress=False)
    assert calls == ["s4", "s5"], "records appended after the torn line were kept"
    assert result.run["pairs_resumed"] == 4
    assert [s.scores["interrupting"].value for s in result.samples] == [1.0] * 6


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        ({"score": {"value": 5.0}}, "journal"),  # outside [0, 1]: reused, it made the run's max 5.0
        ({"score": {"value": "abc"}}, "journal"),
        ({"score": {"value": 1.0, "details": [1, 2]}}, "journal"),
        ({"seconds": "slow"}, "journal"),
        ({"usage": {"calls": "x"}}, "journal"),
        ({"scores": {"interrupting": {"value": 5.0}}}, "results"),
        ({"seconds": {"interrupting": "slow"}}, "results"),
        ({"seconds": "slow"}, "results"),
    ],
)
def test_a_record_edited_by_hand_is_computed_again_not_reused_or_the_end_of_the_run(tmp_path, edit, where):
    """The journal promises that a record this version cannot read is computed again; a value of
    the wrong type or out of range was reused (5.0 for a [0, 1] metric), or ended the resumed run
    with an unexpected TypeError."""
    calls: list = []
    if where == "journal":
        _interrupted(samples(3), calls, "s2", tmp_path)
        path = tmp_path / JOURNAL_FILE
    else:
        evaluate(samples(3), [Interrupting(calls=calls)], out_dir=tmp_path, progress=False)
        path = tmp_path / "results.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[0].update(edit)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    calls.clear()
    result = evaluate(samples(3), [Interrupting(calls=calls)], out_dir=tmp_path, progress=False)
    assert calls == (["s0", "s2"] if where == "journal" else ["s0"])
    assert [s.scores["interrupting"].value for s in result.samples] == [1.0, 1.0, 1.0]


def test_changed_sample_or_settings_are_recomputed(tmp_path):
    calls: list = []
    evaluate(samples(3), [Counting(calls=calls)], out_dir=tmp_path, progress=False)
    changed = samples(3)
    changed[1] = Sample(id="s1", user_input="question 1", response="a different answer")
    calls.clear()
    evaluate(changed, [Counting(calls=calls)], out_dir=tmp_path, progress=False)
    assert calls == ["s1"]
    evaluate(samples(3), ["nonllm_context_recall"], out_dir=tmp_path, progress=False)
    from ragmeter.metrics.retrieval import NonLLMContextRecall

    first = evaluate(
        [Sample(id="x", retrieved_contexts=["abc"], reference_contexts=["abd"])], [NonLLMContextRecall()], out_dir=tmp_path, progress=False
    )
    second = evaluate(
        [Sample(id="x", retrieved_contexts=["abc"], reference_contexts=["abd"])],
        [NonLLMContextRecall(threshold=0.9)],
        out_dir=tmp_path,
        progress=False,
    )
    assert first.samples[0].scores["nonllm_context_recall"].value == 1.0
    assert second.samples[0].scores["nonllm_context_recall"].value == 0.0, "new threshold, new score"


def test_failed_scores_are_retried_on_resume(tmp_path):
    data = [Sample(id="a", response="boom")]
    evaluate(data, [Exploding()], out_dir=tmp_path, progress=False)
    result = evaluate(data, [Exploding()], out_dir=tmp_path, progress=False)
    assert result.run["pairs_computed"] == 1 and result.run["pairs_resumed"] == 0


def test_fresh_run_ignores_the_journal(tmp_path):
    calls: list = []
    evaluate(samples(2), [Counting(calls=calls)], out_dir=tmp_path, progress=False)
    evaluate(samples(2), [Counting(calls=calls)], out_dir=tmp_path, progress=False, resume=False)
    assert len(calls) == 4


def test_evaluate_works_inside_a_running_event_loop():
    async def notebook_cell():
        return evaluate(samples(2), [ResponseLength()], progress=False)

    result = asyncio.run(notebook_cell())
    assert len(result.samples) == 2


def test_result_round_trips_through_a_run_directory(tmp_path):
    from ragmeter.report import write_reports

    data = load_dataset([{"id": "a", "response": "boom"}, {"id": "b", "response": "fine"}, {"id": "c", "user_input": 3}])
    result = evaluate(data, [Exploding(), ResponseLength()], progress=False)
    result.save(tmp_path)
    write_reports(result, tmp_path)
    loaded = Result.load(tmp_path)
    assert _values(loaded) == _values(result)
    assert loaded.samples[0].scores["exploding"].failed
    assert loaded.aggregates == result.aggregates
    assert loaded.issues == result.issues and loaded.issues[0].location == "row 3"
    frame = loaded.to_pandas()
    assert list(frame["key"]) == ["a", "b"]
    assert frame.loc[0, "exploding.reason"].startswith("error: RuntimeError")
    assert frame.loc[1, "response_length"] == pytest.approx(0.04)


def test_to_json_holds_aggregates_and_samples(tmp_path):
    result = evaluate(samples(4), [ResponseLength()], progress=False)
    result.to_json(tmp_path / "r.json")
    document = json.loads((tmp_path / "r.json").read_text())
    aggregate = document["metrics"][0]["aggregate"]
    assert aggregate["mean"] == pytest.approx(0.12) and aggregate["n_scored"] == 4
    assert len(document["samples"]) == 4


def _values(result):
    return {(s.key, m): (v.value, v.reason, v.details) for s in result.samples for m, v in s.scores.items()}


def test_a_run_whose_scoring_never_waits_is_cancelled_within_a_few_pairs():
    """A model-free metric never waits, so the workers never let the event loop run: Ctrl-C's
    cancel (or SIGTERM's) came only after every pair was scored, 40 s later on 200,000 samples."""
    from ragmeter.run.executor import LocalExecutor

    scored: list[int] = []

    async def main() -> None:
        async def job(item: int) -> None:
            scored.append(item)
            if item == 10:
                asyncio.get_running_loop().call_soon(run.cancel)  # what the signal handler does

        run = asyncio.ensure_future(LocalExecutor(4, False).run(iter(range(100_000)), 100_000, job))
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    assert len(scored) < 100, len(scored)
