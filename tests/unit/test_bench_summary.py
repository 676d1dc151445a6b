"""The one-table summary of the meta-evaluation and its leave-one-set-out line."""

from __future__ import annotations

import pytest

from ragmeter.bench.runner import TaskResult
from ragmeter.bench.suites import Task
from ragmeter.bench.summary import best_threshold, fitted_sets, leave_one_set_out, llm_metric_names, summary_lines, task_set
from ragmeter.data import load_dataset


def units(pairs, group_size=1):
    """Units from (score, label) pairs; ``group_size`` consecutive units share a group."""
    return [{"score": s, "label": y, "decision": int(s >= 0.5), "group": n // group_size} for n, (s, y) in enumerate(pairs)]


def task(name, metric, pairs, kind="binary", statistics=None, params=None, seconds=1.5, rating=""):
    return {
        "rating": rating,
        "task": name,
        "metric": metric,
        "kind": kind,
        "n_units": len(pairs),
        "n_unscored": 0,
        "statistics": statistics or {},
        "cost_per_sample": {"seconds": seconds},
        "units": units(pairs),
        "params": params or {},
    }


def test_sets_are_suites_and_summedits_domains():
    assert task_set({"task": "qags/faithfulness", "metric": "faithfulness"}) == "qags"
    assert task_set({"task": "summedits/sales_email_faithfulness", "metric": "faithfulness"}) == "summedits/sales_email"
    assert task_set({"task": "clapnq/context_precision_without_reference", "metric": "context_precision_without_reference"}) == "clapnq"
    assert task_set({"task": "rgb/faithfulness_edits", "metric": "faithfulness"}) == "rgb/edits"


def test_a_line_for_an_edit_set_is_never_fitted_on_its_own_file():
    # rgb/edits shares RGB's questions and passages: its line is fitted on QAGS only, and
    # RGB's line on QAGS only, although each is a set of its own in the table.
    tasks = [
        task("qags/faithfulness", "faithfulness", [(0.2, 0), (0.3, 0), (0.6, 1), (0.7, 1)]),
        task("rgb/faithfulness", "faithfulness", [(0.1, 0), (0.9, 1)]),
        task("rgb/faithfulness_edits", "faithfulness", [(0.4, 0), (0.8, 1)]),
    ]
    lines = leave_one_set_out(tasks)
    assert lines["rgb/faithfulness_edits"]["fitted_on"] == ["qags"]
    assert lines["rgb/faithfulness"]["fitted_on"] == ["qags"]
    assert lines["qags/faithfulness"]["fitted_on"] == ["rgb", "rgb/edits"]


def test_the_shipped_faithfulness_head_names_the_sets_it_saw():
    seen = fitted_sets()["faithfulness"]
    assert "qags" in seen and "summedits/news" in seen and "summedits/sales_email" in seen
    assert not any(name.startswith(("msmarco", "rgb", "clapnq")) for name in seen)


def test_answer_relevancy_rows_on_the_sets_its_line_was_fitted_on_are_marked_as_seen():
    rows = [task("clapnq/answer_relevancy", "answer_relevancy", [(0.9, 1), (0.2, 0)])]
    (row,) = [line for line in summary_lines(rows, ["answer_relevancy"]) if line.startswith("| answer_relevancy")]
    assert "| clapnq * |" in row


def test_the_threshold_maximises_the_mean_balanced_accuracy_over_sets():
    # No line is perfect for both sets. A line in (0.70, 0.72] is perfect for a and gets b's
    # positives and one negative right (mean 0.875); one in (0.75, 0.85] is perfect for b and
    # misses a positive of a (also 0.875); anything else is worse. Of equals the lowest is kept.
    a = units([(0.6, 0), (0.65, 0), (0.72, 1), (0.9, 1)])
    b = units([(0.7, 0), (0.75, 0), (0.85, 1), (0.95, 1)])
    threshold = best_threshold([a, b])
    assert 0.70 < threshold <= 0.72
    assert best_threshold([units([(0.3, 1), (0.4, 1)])]) is None


def test_leave_one_set_out_fits_on_the_other_sets_only():
    tasks = [
        task("summedits/news_faithfulness", "faithfulness", [(0.2, 0), (0.3, 0), (0.6, 1), (0.7, 1)]),
        task("summedits/podcast_faithfulness", "faithfulness", [(0.25, 0), (0.35, 0), (0.55, 1), (0.8, 1)]),
        # The held-out set sits higher: a line fitted on the others (about 0.4-0.55) calls
        # every unit supported, balanced accuracy 0.5, although its own ranking is perfect.
        task("qags/faithfulness", "faithfulness", [(0.8, 0), (0.85, 0), (0.9, 1), (0.95, 1)]),
        task("msmarco/context_relevance", "context_relevance", [(0.1, 0), (0.9, 1)]),
    ]
    out = leave_one_set_out(tasks)
    assert out["qags/faithfulness"]["fitted_on"] == ["summedits/news", "summedits/podcast"]
    assert 0.35 < out["qags/faithfulness"]["threshold"] <= 0.55
    assert out["qags/faithfulness"]["balanced_accuracy"]["value"] == pytest.approx(0.5)
    assert out["summedits/news_faithfulness"]["fitted_on"] == ["qags", "summedits/podcast"]
    assert "msmarco/context_relevance" not in out, "no other set measures context relevance"


def test_variants_with_parameters_are_not_fitted_on_or_shown():
    tasks = [
        task("ragchecker/answer_correctness", "answer_correctness", [(0.1, 1)], kind="preference", statistics={"pearson": {"value": 0.5}}),
        task(
            "ragchecker/answer_correctness[decided]",
            "answer_correctness",
            [(0.1, 1)],
            kind="preference",
            statistics={"pearson": {"value": 0.3}},
            params={"counting": "decided"},
        ),
    ]
    text = "\n".join(summary_lines(tasks, ["answer_correctness", "faithfulness"]))
    # The results file says which tasks ran with parameters.
    assert TaskResult(
        Task("t", "m", load_dataset([{"id": "a"}]), [], "binary", params={"counting": "decided"}), {}, 0, 0, {}, {}, 1
    ).to_dict()["params"] == {"counting": "decided"}
    assert "[decided]" not in text and "0.300" not in text
    assert "| answer_correctness | ragchecker | 1 | Pearson 0.500 | – | – | 1.5 |" in text


def test_each_rating_of_a_set_is_a_row_named_by_the_metric_id_that_measures_it():
    tasks = [
        task("ragchecker/factual_correctness(recall)", "factual_correctness", [(0.1, 1)], kind="preference",
             statistics={"pearson": {"value": 0.4}}, params={"mode": "recall"}, rating="completeness"),
        task("ragchecker/factual_correctness", "factual_correctness", [(0.1, 1)], kind="preference",
             statistics={"pearson": {"value": 0.6}}, rating="overall"),
    ]  # fmt: skip
    text = "\n".join(summary_lines(tasks, ["factual_correctness"]))
    assert "| factual_correctness | ragchecker/overall | 1 | Pearson 0.600 |" in text
    assert "| factual_correctness(recall) | ragchecker/completeness | 1 | Pearson 0.400 |" in text
    assert task_set({"task": "ragchecker/answer_correctness", "metric": "answer_correctness"}) == "ragchecker", (
        "results written before ratings"
    )


def test_the_table_marks_sets_a_default_fit_saw_and_names_unmeasured_llm_metrics():
    tasks = [
        task(
            "qags/faithfulness",
            "faithfulness",
            [(0.2, 0), (0.9, 1)],
            statistics={"roc_auc": {"value": 1.0, "ci_low": 0.9, "ci_high": 1.0}, "balanced_accuracy": {"value": 0.75}},
        ),
        task("rgb/context_relevance", "context_relevance", [(0.2, 0), (0.9, 1)], statistics={"roc_auc": {"value": 0.8}}),
        task("clapnq/answer_correctness", "answer_correctness", [(0.2, 0), (0.9, 1)], statistics={"roc_auc": {"value": 0.8}}),
        task("qags/embedding_groundedness", "embedding_groundedness", [(0.2, 0), (0.9, 1)], statistics={"roc_auc": {"value": 0.7}}),
    ]
    lines = summary_lines(tasks, ["faithfulness", "context_relevance", "answer_correctness", "answer_relevancy", "rubric_score"])
    text = "\n".join(lines)
    assert "| faithfulness | qags * | 2 | ROC-AUC 1.000 [0.900, 1.000] | 0.750 |" in text
    assert "| context_relevance | rgb * | 2 | ROC-AUC 0.800 | – | – |" in text  # its default line was fitted on RGB
    assert "| answer_correctness | clapnq | 2 | ROC-AUC 0.800 | – | – |" in text
    assert "embedding_groundedness" not in text, "only LLM metrics are in the table"
    assert "not a held-out figure" in text
    assert "LLM metrics no labelled set here measures: answer_relevancy, rubric_score." in text


def test_a_task_answered_from_the_cache_says_so_instead_of_costing_nothing():
    cached = task("clapnq/context_precision_without_reference", "context_precision_without_reference", [(0.2, 0), (0.9, 1)])
    cached["cost_per_sample"] = {"calls": 0.0, "cached_calls": 13.0, "seconds": 0.0}
    assert "| 0 (cached) |" in "\n".join(summary_lines([cached], ["context_precision_without_reference"]))


def test_the_registry_knows_which_metrics_need_an_llm():
    names = llm_metric_names()
    assert {"faithfulness", "context_relevance", "answer_correctness", "rubric_score"} <= set(names)
    assert "token_f1" not in names and "embedding_groundedness" not in names
