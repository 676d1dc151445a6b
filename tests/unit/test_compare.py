"""Comparing two runs: paired statistics, matching of samples, verdicts and the reports."""

from __future__ import annotations

import itertools
import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.cli import console as console_module
from ragmeter.data.schema import Sample
from ragmeter.decide.compare import (
    A_BETTER,
    B_BETTER,
    NO_DIFFERENCE,
    NOT_COMPARED,
    compare_results,
    compare_runs,
    match_samples,
)
from ragmeter.metrics.base import Score
from ragmeter.report import write_reports
from ragmeter.report.compare import render_html, render_markdown, write_comparison
from ragmeter.results import Result, SampleResult
from ragmeter.results.inference import holm, paired_bootstrap_ci, paired_permutation_pvalue, wilcoxon_pvalue

runner = CliRunner()

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> How long do refunds take?'


def info(metric_id: str, unit: str | None = None, higher_is_better: bool = True, family: str = "lexical") -> dict:
    return {
        "id": metric_id,
        "name": metric_id.split("@")[0],
        "family": family,
        "needs": "nothing",
        "required": [],
        "unit": unit,
        "higher_is_better": higher_is_better,
        "description": f"What {metric_id} measures.",
        "config": {},
    }


def make_result(samples: list[Sample], columns: dict[str, list], infos: list[dict] | None = None) -> Result:
    """A run: ``columns`` maps a metric id to one value per sample (None: unscored)."""
    infos = infos or [info(m) for m in columns]
    results = []
    for i, sample in enumerate(samples):
        scores = {}
        for metric_id, values in columns.items():
            v = values[i]
            scores[metric_id] = Score.unscored("reference is missing") if v is None else Score(float(v), explanation="ok")
        key = sample.id if sample.id is not None else f"data.jsonl:{i + 1}"
        results.append(SampleResult(key, sample, "data.jsonl", f"line {i + 1}", scores))
    return Result(results, infos, run={"n_samples": len(samples), "sources": ["data.jsonl"]})


def numbered(n: int, with_id: bool = True) -> list[Sample]:
    return [Sample(id=f"s{i}" if with_id else None, user_input=f"Question number {i}?", response="r", reference="r") for i in range(n)]


# Statistics --------------------------------------------------------------------------------


def test_holm_matches_the_textbook_example():
    # Sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, 2*0.03, max(1*0.04, 0.06).
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.3, 0.2]) == pytest.approx([0.4, 0.4])  # 2 * 0.2, then max(0.3, 0.4)
    assert holm([0.6, 0.7, 0.01]) == pytest.approx([1.0, 1.0, 0.03])
    assert holm([]) == []
    with pytest.raises(ValueError):
        holm([0.1, float("nan")])


def test_exact_permutation_p_value_equals_brute_force_enumeration():
    d = np.array([0.3, -0.1, 0.25, 0.4, 0.0, 0.05, -0.2, 0.15])
    nonzero = d[d != 0]
    observed = abs(nonzero.sum())
    sums = [abs(sum(s * x for s, x in zip(signs, nonzero, strict=True))) for signs in itertools.product((-1, 1), repeat=len(nonzero))]
    expected = sum(1 for s in sums if s >= observed - 1e-12) / len(sums)
    assert paired_permutation_pvalue(d) == pytest.approx(expected)


def test_random_sign_flips_approach_the_exact_p_value_and_are_seeded():
    rng = np.random.default_rng(3)
    d = rng.normal(0.05, 0.2, 14)
    exact = paired_permutation_pvalue(d)
    drawn = paired_permutation_pvalue(d, n_permutations=40_000, exact_max_n=0, seed=1)
    assert drawn == pytest.approx(exact, abs=0.01)
    assert drawn == paired_permutation_pvalue(d, n_permutations=40_000, exact_max_n=0, seed=1)
    # Never 0: the observed assignment counts.
    assert paired_permutation_pvalue(np.full(100, 0.5), n_permutations=999) == pytest.approx(1 / 1000)


def test_no_difference_at_all_gives_p_1_and_no_wilcoxon():
    assert paired_permutation_pvalue([0.0, 0.0, 0.0]) == 1.0
    assert paired_permutation_pvalue([]) == 1.0
    assert wilcoxon_pvalue([0.0, 0.0]) is None
    assert 0 < wilcoxon_pvalue([0.1, 0.2, -0.05, 0.3, 0.2, 0.1]) < 1


# Tied differences: sums that are equal in exact arithmetic can differ in floating point, and
# the test must count them as ties. Expected values from exact rational arithmetic.

TIED_DIFFS = ["0.1", "0.2", "0.3", "-0.6", "0.7", "0.4", "-0.2"]


def exact_permutation_p(decimals: list[str]) -> float:
    from fractions import Fraction

    d = [Fraction(x) for x in decimals if Fraction(x) != 0]
    observed = abs(sum(d))
    hits = sum(
        1 for signs in itertools.product((-1, 1), repeat=len(d)) if abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed
    )
    return hits / 2 ** len(d)


def test_permutation_p_value_counts_sums_equal_up_to_rounding_as_ties():
    expected = exact_permutation_p(TIED_DIFFS)
    assert expected == pytest.approx(31 / 64)  # 62 of the 128 sign assignments reach |sum| = 0.9, in exact arithmetic
    d = [float(x) for x in TIED_DIFFS]
    assert paired_permutation_pvalue(d) == pytest.approx(expected)
    # The random sign flips count the same ties (40,000 draws: standard error 0.0025; without
    # the tolerance the share would be near 0.4375).
    drawn = paired_permutation_pvalue(d, n_permutations=40_000, exact_max_n=0, seed=2)
    assert drawn == pytest.approx(expected, abs=0.015)


def test_permutation_ties_are_found_at_the_scale_of_milliseconds():
    # The same differences times 123456.789 (latencies in ms): rounding errors grow with the
    # values, so the tolerance must too.
    scaled = ["12345.6789", "24691.3578", "37037.0367", "-74074.0734", "86419.7523", "49382.7156", "-24691.3578"]
    assert exact_permutation_p(scaled) == pytest.approx(31 / 64)
    assert paired_permutation_pvalue([float(x) for x in scaled]) == pytest.approx(31 / 64)


def test_permutation_p_value_of_differences_of_zero_one_scores():
    # Exact match: differences in {-1, 0, 1}. Five +1, one -1, two 0: T = 4; of the 2^6 sign
    # assignments of the six non-zero ones, |sum| = |2k - 6| >= 4 for k = 0, 1, 5, 6 plus
    # signs: 1 + 6 + 6 + 1 = 14 of 64.
    d = [1.0, 1.0, 1.0, -1.0, 1.0, 0.0, 0.0, 1.0]
    assert exact_permutation_p([str(x) for x in d]) == pytest.approx(14 / 64)
    assert paired_permutation_pvalue(d) == pytest.approx(14 / 64)


def test_permutation_test_is_exact_up_to_exact_max_n_and_counts_every_draw_beyond():
    # Four non-zero differences, all positive, exact up to 4: only all-plus and all-minus
    # reach |sum| = 1.0, so exactly 2 / 16 (random flips would give (hits + 1) / 10001).
    assert paired_permutation_pvalue([0.1, 0.2, 0.3, 0.4], exact_max_n=4) == 0.125
    # One non-zero difference, drawn at random: every draw reaches |d|, so (99 + 1) / (99 + 1).
    assert paired_permutation_pvalue([0.3], n_permutations=99, exact_max_n=0) == 1.0
    assert paired_permutation_pvalue([0.3, 0.0], n_permutations=7, exact_max_n=0) == 1.0


def test_random_sign_flips_drawn_in_blocks_are_counted_once(monkeypatch):
    from ragmeter.results import inference

    monkeypatch.setattr(inference, "MAX_DRAWS_PER_BLOCK", 3)  # blocks of 3, 3 and 1 draws
    assert paired_permutation_pvalue([0.3], n_permutations=7, exact_max_n=0) == 1.0


def test_holm_accepts_p_values_of_0_and_1_and_refuses_others():
    assert holm([0.0, 1.0]) == [0.0, 1.0]
    for bad in ([-0.01], [1.5], [float("inf")]):
        with pytest.raises(ValueError):
            holm(bad)


def test_permutation_p_value_is_two_sided_and_ignores_zero_differences():
    d = [0.3, -0.1, 0.25, 0.4, 0.05, -0.2, 0.15]
    assert paired_permutation_pvalue(d) == paired_permutation_pvalue([-x for x in d])
    assert paired_permutation_pvalue([*d, 0.0, 0.0]) == paired_permutation_pvalue(d)
    # All five positive: only all-plus and all-minus reach |sum|: 2 / 32.
    assert paired_permutation_pvalue([0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(2 / 32)


def test_wilcoxon_p_value_is_two_sided():
    from scipy.stats import wilcoxon

    # By hand: d = 1, 2, 3, -4, 5, 6 (no ties): W- = 4 (the rank of |-4|). Subsets of the
    # ranks 1..6 with a sum <= 4: {}, {1}, {2}, {3}, {4}, {1,2}, {1,3}: 7 of 64. Two-sided
    # exact p = 2 * 7 / 64 = 0.21875 (one-sided would be 0.109).
    d = [1.0, 2.0, 3.0, -4.0, 5.0, 6.0]
    assert wilcoxon_pvalue(d) == pytest.approx(14 / 64)
    assert wilcoxon_pvalue([-x for x in d]) == pytest.approx(14 / 64)
    # With ties and a zero: scipy's two-sided value (by whichever method scipy chooses for ties).
    tied = [0.5, 0.5, 1.0, -0.25, 2.0, 2.0, 3.0, -1.0, 0.0]
    expected = float(wilcoxon(tied, alternative="two-sided").pvalue)
    assert wilcoxon_pvalue(tied) == pytest.approx(expected)
    assert wilcoxon_pvalue([-x for x in tied]) == pytest.approx(expected)
    assert 0.05 < expected < 0.5


def test_paired_bootstrap_interval_is_reproducible_and_brackets_the_mean():
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 0.2, 150)
    low, high = paired_bootstrap_ci(d)
    assert low < d.mean() < high
    assert (low, high) == paired_bootstrap_ci(d)
    assert paired_bootstrap_ci([0.2]) is None


# Verdicts ----------------------------------------------------------------------------------


def planted(seed: int = 0, n: int = 200, effect: float = 0.1):
    """Per-sample scores in [0, 1] (Beta difficulty plus noise); B = A + effect, clipped,
    plus its own per-sample noise."""
    rng = np.random.default_rng(seed)
    a = np.clip(rng.beta(2, 2, n) + rng.normal(0, 0.05, n), 0, 1)
    b = np.clip(a + effect + rng.normal(0, 0.1, n), 0, 1)
    return a, b


def test_a_planted_improvement_of_0_1_is_significant_and_b_wins():
    a, b = planted()
    samples = numbered(200)
    comparison = compare_results(make_result(samples, {"token_f1": a}), make_result(samples, {"token_f1": b}))
    m = comparison.metric("token_f1")
    assert m.n_pairs == 200
    assert m.mean_diff == pytest.approx(float((b - a).mean()))
    assert 0.07 < m.mean_diff < 0.11
    assert m.ci_low > 0 and m.ci_low < m.mean_diff < m.ci_high
    assert m.p_permutation < 0.001 and m.p_holm < 0.001 and m.p_wilcoxon < 0.001
    assert m.verdict == B_BETTER and m.significant
    print(f"planted +0.1: mean diff {m.mean_diff:.4f}, p {m.p_permutation:.2g}, Holm p {m.p_holm:.2g}, Wilcoxon p {m.p_wilcoxon:.2g}")
    # The other way round, A wins.
    swapped = compare_results(make_result(samples, {"token_f1": b}), make_result(samples, {"token_f1": a}))
    assert swapped.metric("token_f1").verdict == A_BETTER
    assert swapped.metric("token_f1").mean_diff == pytest.approx(-m.mean_diff)


def test_lower_is_better_metrics_win_by_going_down():
    rng = np.random.default_rng(1)
    latency_a = rng.normal(1200, 150, 120)
    latency_b = latency_a - 100 + rng.normal(0, 30, 120)
    samples = numbered(120)
    infos = [info("latency_ms", unit="ms", higher_is_better=False, family="efficiency")]
    comparison = compare_results(
        make_result(samples, {"latency_ms": latency_a}, infos), make_result(samples, {"latency_ms": latency_b}, infos)
    )
    m = comparison.metric("latency_ms")
    assert m.mean_diff < 0 and m.verdict == B_BETTER
    # Its regressions are the samples that got slower.
    assert all(r["diff"] > 0 for r in m.top_regressions)


def _null_runs(rng: np.random.Generator, samples: list[Sample], n: int = 200):
    """Two runs of the same system: same per-sample difficulty, independent run noise; four
    metrics like a real set (two correlated overlap scores, an independent one, a binary)."""
    q, r = rng.beta(2, 2, n), rng.beta(5, 2, n)
    runs = []
    for _ in range(2):
        noise = rng.normal(0, 0.1, n)
        runs.append(
            make_result(
                samples,
                {
                    "token_f1": np.clip(q + noise, 0, 1),
                    "rougeL": np.clip(q + 0.7 * noise + rng.normal(0, 0.07, n), 0, 1),
                    "semantic_similarity": np.clip(r + rng.normal(0, 0.1, n), 0, 1),
                    "exact_match": (rng.random(n) < q).astype(float),
                },
            )
        )
    return runs


def test_two_runs_of_the_same_system_show_no_difference_in_at_least_95_percent_of_repetitions():
    rng = np.random.default_rng(0)
    samples = numbered(200)
    repetitions, declared, unadjusted = 200, 0, 0
    for rep in range(repetitions):
        a, b = _null_runs(rng, samples)
        comparison = compare_results(a, b, n_permutations=2000, n_resamples=100, seed=rep)
        declared += any(m.significant for m in comparison.metrics)
        unadjusted += any(m.p_permutation < 0.05 for m in comparison.metrics)
    rate = 1 - declared / repetitions
    print(f"null: no difference declared in {rate:.1%} of {repetitions} repetitions; without Holm {1 - unadjusted / repetitions:.1%}")
    assert rate >= 0.95
    # With four metrics and no correction, some metric would be "significant" far more often.
    assert unadjusted / repetitions > 0.08


def test_a_metric_no_sample_is_scored_in_both_runs_is_not_compared():
    samples = numbered(4)
    a = make_result(samples, {"token_f1": [0.1, 0.2, 0.3, 0.4], "bleu": [None, None, 0.5, 0.5]})
    b = make_result(samples, {"token_f1": [0.2, 0.2, 0.3, 0.5], "bleu": [0.4, 0.3, None, None]})
    comparison = compare_results(a, b)
    bleu = comparison.metric("bleu")
    assert bleu.verdict == NOT_COMPARED and bleu.p_permutation is None and bleu.n_pairs == 0
    assert bleu.excluded == {"unscored_in_a": 2, "unscored_in_b": 2, "unscored_in_both": 0, "keys": ["s0", "s1", "s2", "s3"], "count": 4}
    assert "no matched sample is scored in both runs" in bleu.note
    # Small samples use the exact test; 2 non-zero differences cannot be significant.
    f1 = comparison.metric("token_f1")
    assert f1.permutation.startswith("exact") and f1.verdict == NO_DIFFERENCE and f1.p_permutation == pytest.approx(0.5)


# Matching ----------------------------------------------------------------------------------


def test_samples_are_matched_by_id_and_unmatched_ones_are_reported():
    a = make_result(numbered(5), {"token_f1": [0.1, 0.2, 0.3, 0.4, 0.5]})
    b_samples = [numbered(5)[i] for i in (4, 2, 0, 1)] + [Sample(id="new", user_input="A new question?")]
    b = make_result(b_samples, {"token_f1": [0.6, 0.4, 0.2, 0.3, 0.9]})
    matching = match_samples(a, b)
    assert matching.by == "id"
    assert sorted((x.key, y.key) for x, y in matching.pairs) == [("s0", "s0"), ("s1", "s1"), ("s2", "s2"), ("s4", "s4")]
    assert matching.unmatched_a == [{"key": "s3", "question": "Question number 3?", "reason": "no sample with this id in B"}]
    assert matching.unmatched_b == [{"key": "new", "question": "A new question?", "reason": "no sample with this id in A"}]
    m = compare_results(a, b).metric("token_f1")
    assert m.n_pairs == 4 and m.mean_diff == pytest.approx(0.1)


def test_without_ids_samples_are_matched_by_question_with_whitespace_normalised():
    questions = ["What is the refund window?", "Who approves database changes?", "数据库变更需要谁审批？", "How long is the timeout?"]
    a = make_result([Sample(user_input=q) for q in questions], {"token_f1": [0.1, 0.2, 0.3, 0.4]})
    reordered = [
        "  How long is the\ttimeout? ",
        "What is the refund   window?",
        "数据库变更需要谁审批？",
        "Who approves\ndatabase changes?",
    ]
    b = make_result([Sample(user_input=q) for q in reordered], {"token_f1": [0.5, 0.2, 0.4, 0.3]})
    matching = match_samples(a, b)
    assert matching.by == "question" and len(matching.pairs) == 4
    assert not matching.unmatched_a and not matching.unmatched_b
    by_question = {" ".join(x.sample.user_input.split()): (x.key, y.key) for x, y in matching.pairs}
    assert by_question["How long is the timeout?"] == ("data.jsonl:4", "data.jsonl:1")
    comparison = compare_results(a, b)
    assert comparison.metric("token_f1").mean_diff == pytest.approx(0.1)


def test_duplicates_are_left_out_and_reported_never_silently_dropped():
    a_samples = [
        Sample(user_input="Same question?"),
        Sample(user_input="Same  question?"),
        Sample(user_input="Other?"),
        Sample(response="no question"),
    ]
    b_samples = [Sample(user_input="Same question?"), Sample(user_input="Other?"), Sample(user_input="Third?"), Sample(user_input="Third?")]
    a = make_result(a_samples, {"token_f1": [0.1, 0.2, 0.3, 0.4]})
    b = make_result(b_samples, {"token_f1": [0.5, 0.6, 0.7, 0.8]})
    comparison = compare_results(a, b)
    match = comparison.to_dict()["matching"]
    assert match["n_matched"] == 1
    assert match["duplicates_a"] == [
        {
            "by": "question",
            "value": "Same question?",
            "keys": ["data.jsonl:1", "data.jsonl:2"],
            "reason": "ambiguous match: left out of the comparison",
        }
    ]
    assert match["duplicates_b"][0]["keys"] == ["data.jsonl:3", "data.jsonl:4"]
    assert match["n_duplicate_samples_a"] == 2 and match["n_duplicate_samples_b"] == 2
    reasons_a = {u["key"]: u["reason"] for u in match["unmatched_a"]}
    reasons_b = {u["key"]: u["reason"] for u in match["unmatched_b"]}
    assert reasons_a == {"data.jsonl:4": "no id and no question to match by"}
    assert reasons_b == {"data.jsonl:1": "its question occurs 2 times in A (ambiguous)"}
    # Every sample of both runs is accounted for: matched, unmatched or duplicate.
    assert match["n_matched"] + match["n_unmatched_a"] + match["n_duplicate_samples_a"] == match["n_a"] == 4
    assert match["n_matched"] + match["n_unmatched_b"] + match["n_duplicate_samples_b"] == match["n_b"] == 4
    markdown = render_markdown(comparison.to_dict())
    assert "Duplicates in A, left out (2 samples)" in markdown and "`data.jsonl:2`" in markdown
    assert "Unmatched samples of B (1)" in markdown and "ambiguous" in markdown


def test_unscored_pairs_are_excluded_per_metric_and_counted():
    samples = numbered(6)
    a = make_result(samples, {"token_f1": [0.1, None, 0.3, 0.4, None, 0.6], "rougeL": [0.5] * 6})
    b = make_result(samples, {"token_f1": [0.2, 0.2, None, 0.5, None, 0.7], "rougeL": [0.6] * 6})
    comparison = compare_results(a, b)
    f1 = comparison.metric("token_f1")
    assert f1.n_pairs == 3 and f1.mean_diff == pytest.approx(0.1)
    assert f1.excluded == {"unscored_in_a": 1, "unscored_in_b": 1, "unscored_in_both": 1, "keys": ["s1", "s2", "s4"], "count": 3}
    assert comparison.metric("rougeL").n_pairs == 6
    assert "Pairs left out because a side is unscored" in render_markdown(comparison.to_dict())


def test_metrics_in_one_run_only_are_listed():
    samples = numbered(3)
    comparison = compare_results(
        make_result(samples, {"token_f1": [0.1] * 3, "bleu": [0.2] * 3}), make_result(samples, {"token_f1": [0.1] * 3, "chrf": [0.3] * 3})
    )
    assert [m.metric for m in comparison.metrics] == ["token_f1"]
    assert comparison.metrics_only_in_a == ["bleu"] and comparison.metrics_only_in_b == ["chrf"]


def test_largest_regressions_are_the_worst_five_with_their_question():
    samples = numbered(10)
    a = make_result(samples, {"token_f1": [0.5] * 10})
    b = make_result(samples, {"token_f1": [0.4, 0.9, 0.1, 0.45, 0.2, 0.3, 0.5, 0.6, 0.0, 0.35]})
    regressions = compare_results(a, b).metric("token_f1").top_regressions
    assert [r["key"] for r in regressions] == ["s8", "s2", "s4", "s5", "s9"]
    assert regressions[0] == {"key": "s8", "key_a": "s8", "question": "Question number 8?", "a": 0.5, "b": 0.0, "diff": -0.5}


# Reports -----------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def hostile_comparison():
    samples = [Sample(id=f'"><svg onload=alert({i})>' if i == 0 else f"h{i}", user_input=HOSTILE + f" {i}") for i in range(8)]
    a = make_result(
        samples,
        {"token_f1": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2], "latency_ms": [100] * 8},
        [info("token_f1"), info("latency_ms", "ms", False)],
    )
    b_samples = [*samples[:7], Sample(id="only-b", user_input="</script><script>alert(2)</script>")]
    b = make_result(
        b_samples,
        {"token_f1": [0.1, 0.8, 0.6, 0.6, 0.5, 0.4, 0.3, 0.2], "latency_ms": [120] * 8},
        [info("token_f1"), info("latency_ms", "ms", False)],
    )
    return compare_results(a, b, label_a="<b>runs/a</b>", label_b="runs/b")


def test_the_html_page_escapes_hostile_text_and_loads_nothing():
    page = render_html(hostile_comparison().to_dict())
    lowered = page.lower()
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;" in page
    assert "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert "&#34;&gt;&lt;svg onload=alert(0)&gt;" in page
    assert "&lt;b&gt;runs/a&lt;/b&gt;" in page
    assert "<script" not in lowered and "<img" not in lowered and "<svg" not in lowered
    parser = _Tags()
    parser.feed(page)
    for tag, attrs in parser.tags:
        assert tag not in ("script", "img", "iframe", "object", "embed", "link", "base", "form", "svg"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("src", "href", "action", "poster", "data", "srcset", "background", "xlink:href"):
                assert value and value.startswith("#"), (tag, name, value)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", lowered)
    assert "@import" not in lowered and "url(" not in lowered
    policy = next(a["content"] for t, a in parser.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in policy and "script-src" not in policy
    # The content is there.
    assert "<code>token_f1</code>" in page and "no significant difference" in page
    assert "A better" in page  # latency went up by 20 ms on all 7 pairs
    assert "Unmatched samples of A (1)" in page and "Unmatched samples of B (1)" in page


def test_markdown_and_json_hold_every_number_and_escape_text(tmp_path):
    comparison = hostile_comparison()
    paths = write_comparison(comparison, tmp_path / "out")
    assert [p.name for p in paths] == ["compare.md", "compare.json", "compare.html"]
    markdown = paths[0].read_text()
    assert "<script" not in markdown.lower() and "&lt;script&gt;" in markdown
    assert "| `token_f1` | 7 |" in markdown
    assert "`latency_ms` (ms, lower is better)" in markdown
    document = json.loads(paths[1].read_text())
    metric = document["metrics"][0]
    assert metric["metric"] == "token_f1" and metric["n_pairs"] == 7
    assert metric["mean_diff"] == pytest.approx(-0.9 / 7)
    assert document["matching"]["unmatched_b"][0]["key"] == "only-b"
    assert document["settings"]["correction"] == "holm" and document["settings"]["seed"] == 0


# Command line ------------------------------------------------------------------------------


def _run_dir(tmp_path, name, result: Result):
    directory = tmp_path / name
    result.save(directory)
    write_reports(result, directory)
    return directory


def test_compare_command_writes_three_reports_and_exits_0(tmp_path):
    a, b = planted(seed=5, n=60)
    samples = numbered(60)
    dir_a = _run_dir(tmp_path, "a", make_result(samples, {"token_f1": a}))
    dir_b = _run_dir(tmp_path, "b", make_result(samples, {"token_f1": b}))
    out = tmp_path / "cmp"
    result = runner.invoke(app, ["compare", str(dir_a), str(dir_b), "--out", str(out)])
    assert result.exit_code == 0, result.output
    for name in ("compare.md", "compare.json", "compare.html"):
        assert (out / name).exists()
    assert "token_f1" in result.output and "B better" in result.output
    assert "60 samples matched by id" in result.output
    # Deterministic: the same runs give the same numbers.
    again = compare_runs(dir_a, dir_b).to_dict()
    assert again["metrics"] == json.loads((out / "compare.json").read_text())["metrics"]


def test_compare_command_on_a_missing_run_exits_2(tmp_path):
    samples = numbered(3)
    dir_a = _run_dir(tmp_path, "a", make_result(samples, {"token_f1": [0.1, 0.2, 0.3]}))
    result = runner.invoke(app, ["compare", str(dir_a), str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "nope" in result.output


def test_compare_command_on_runs_that_share_no_sample_exits_2(tmp_path):
    # It wrote three reports of empty rows and said "0 samples matched by nothing".
    dir_a = _run_dir(tmp_path, "a", make_result(numbered(3), {"token_f1": [0.1, 0.2, 0.3]}))
    others = [Sample(id=f"other-{i}", user_input=f"another question {i}") for i in range(3)]
    dir_b = _run_dir(tmp_path, "b", make_result(others, {"token_f1": [0.1, 0.2, 0.3]}))
    result = runner.invoke(app, ["compare", str(dir_a), str(dir_b), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no sample of one matches a sample of the other (by id or question)" in result.output
    assert not (tmp_path / "o").exists()


def test_compare_command_on_runs_that_share_no_metric_exits_2(tmp_path):
    # It wrote three reports with an empty table and exited 0, as if nothing had changed.
    samples = numbered(3)
    dir_a = _run_dir(tmp_path, "a", make_result(samples, {"token_f1": [0.1, 0.2, 0.3]}))
    dir_b = _run_dir(tmp_path, "b", make_result(samples, {"rougeL": [0.1, 0.2, 0.3]}))
    result = runner.invoke(app, ["compare", str(dir_a), str(dir_b), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert (
        result.output == f"error: cannot compare {dir_a} and {dir_b}: no metric was evaluated in both runs (A has token_f1; B has rougeL)\n"
    )
    assert not (tmp_path / "o").exists()


def test_compare_table_in_output_that_is_not_a_terminal_shows_every_number_whole(tmp_path, monkeypatch):
    # A CI log is not a terminal: Rich took 80 columns and cut the numbers of a wide table to "0.…".
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(console_module.console, "_width", None)  # Rich fixes the width of COLUMNS set at import
    a, b = planted(seed=5, n=60)
    samples = numbered(60)
    name = "context_precision_of_a_rather_long_metric_name"
    dir_a = _run_dir(tmp_path, "a", make_result(samples, {name: a}))
    dir_b = _run_dir(tmp_path, "b", make_result(samples, {name: b}))
    result = runner.invoke(app, ["compare", str(dir_a), str(dir_b), "--out", str(tmp_path / "cmp")])
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    row = next(line for line in result.output.splitlines() if name in line)
    (metric,) = json.loads((tmp_path / "cmp" / "compare.json").read_text())["metrics"]
    for value in (metric["mean_a"], metric["mean_b"]):
        assert f"{value:.3f}" in row, row
