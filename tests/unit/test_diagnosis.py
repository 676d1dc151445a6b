"""The diagnosis reads retrieval / correctness / groundedness patterns correctly."""

from __future__ import annotations

import pytest

from ragmeter import Result, Sample, SampleResult, Score
from ragmeter.report.diagnosis import classify, diagnose


@pytest.mark.parametrize(
    ("retrieval", "correctness", "groundedness", "expected"),
    [
        ("low", "high", "low", "parametric_answer"),
        ("low", "high", None, "parametric_answer"),
        ("low", "low", "low", "retrieval_miss"),
        ("low", "low", "high", "wrong_context"),
        ("high", "high", "low", "unfaithful"),
        ("high", "low", "low", "unfaithful"),
        ("high", "low", "high", "grounded_but_wrong"),
        ("high", "high", "high", "healthy"),
        ("mid", "high", "high", "inconclusive"),
        (None, None, None, "inconclusive"),
    ],
)
def test_patterns(retrieval, correctness, groundedness, expected):
    levels = {"retrieval": retrieval, "correctness": correctness, "groundedness": groundedness}
    assert classify(levels, answerable=True, refused=False) == expected


def test_refusals_come_first():
    healthy = {"retrieval": "high", "correctness": "high", "groundedness": "high"}
    assert classify(healthy, answerable=False, refused=True) == "correct_refusal"
    assert classify(healthy, answerable=False, refused=False) == "answered_unanswerable"
    assert classify(healthy, answerable=True, refused=True) == "refused_answerable"
    missed = {"retrieval": "low", "correctness": "low", "groundedness": "low"}
    assert classify(missed, answerable=True, refused=True) == "retrieval_miss", "declining after a miss is the miss's fault"


def _result(rows):
    metrics = [
        {"id": m, "family": "retrieval", "unit": None, "higher_is_better": True}
        for m in ("retrieval_recall", "token_f1", "embedding_groundedness", "embedding_context_recall")
    ]
    samples = [
        SampleResult(
            key, Sample(id=key), "<list>", f"row {i}", {m: Score(v) if v is not None else Score.unscored("n/a") for m, v in values.items()}
        )
        for i, (key, values) in enumerate(rows, start=1)
    ]
    return Result(samples=samples, metrics=metrics)


def test_diagnose_prefers_id_recall_and_counts_patterns():
    result = _result(
        [
            ("a", {"retrieval_recall": 0.0, "token_f1": 0.8, "embedding_groundedness": 0.2, "embedding_context_recall": 0.9}),
            ("b", {"retrieval_recall": 1.0, "token_f1": 0.9, "embedding_groundedness": 0.9, "embedding_context_recall": 0.1}),
            ("c", {"retrieval_recall": 0.0, "token_f1": 0.7, "embedding_groundedness": 0.3, "embedding_context_recall": 0.9}),
            ("d", {"retrieval_recall": None, "token_f1": 0.7, "embedding_groundedness": 0.3, "embedding_context_recall": 0.9}),
        ]
    )
    diagnosis = diagnose(result)
    assert diagnosis["signals"]["retrieval"]["metric"] == "retrieval_recall"
    assert diagnosis["signals"]["correctness"]["metric"] == "token_f1"
    patterns = {p["name"]: p for p in diagnosis["patterns"]}
    assert patterns["parametric_answer"]["samples"] == ["a", "c"]
    assert patterns["healthy"]["samples"] == ["b"]
    assert patterns["inconclusive"]["samples"] == ["d"], "an unscored signal is not read as low"
    assert diagnosis["patterns"][0]["name"] == "parametric_answer", "problems first, most frequent first"
    assert patterns["parametric_answer"]["share"] == 0.5


def test_no_signal_metric_means_no_signals():
    result = Result(samples=[], metrics=[{"id": "latency_ms", "family": "efficiency", "unit": "ms", "higher_is_better": False}])
    assert diagnose(result)["signals"] == {}
