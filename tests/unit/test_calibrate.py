"""Calibration with human labels: PPI coverage by simulation, agreement numbers, missing ids, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.data.schema import Sample
from ragmeter.decide.calibrate import calibrate, calibrate_run
from ragmeter.decide.labels import preference, read_labels, score
from ragmeter.metrics.base import Score
from ragmeter.report.calibration import render_markdown
from ragmeter.results import Result, SampleResult
from ragmeter.results.inference import classical_mean_ci, ppi_mean_ci
from ragmeter.results.stats import accuracy, cohens_kappa, confusion_matrix

REPS, BIG_N, SMALL_N = 1000, 2000, 100


def _simulate(seed, judge_draw, human_of):
    """REPS datasets of BIG_N judge scores, the first SMALL_N of each labelled (a random
    subset, as the draws are independent); returns the PPI and classical intervals."""
    rng = np.random.default_rng(seed)
    judge = judge_draw(rng, (REPS, BIG_N))
    human = human_of(rng, judge[:, :SMALL_N])
    return ppi_mean_ci(judge, judge[:, :SMALL_N], human), classical_mean_ci(human)


def _covers(interval, truth):
    return float(((interval.low <= truth) & (truth <= interval.high)).mean())


def _width(interval):
    return float((interval.high - interval.low).mean())


def test_ppi_covers_the_true_mean_and_is_narrower_than_the_labels_alone():
    # An informative judge with a small bias: human = judge + 0.03 + noise. E[judge] = 0.5.
    ppi, classical = _simulate(1, lambda rng, shape: rng.beta(2, 2, shape), lambda rng, f: f + 0.03 + rng.normal(0, 0.1, f.shape))
    truth = 0.53
    assert ppi.estimate.shape == (REPS,)
    assert _covers(ppi, truth) >= 0.93
    assert _covers(classical, truth) >= 0.93
    assert _width(ppi) < 0.6 * _width(classical)
    print(
        f"informative: PPI coverage {_covers(ppi, truth):.3f} width {_width(ppi):.4f}; "
        f"classical coverage {_covers(classical, truth):.3f} width {_width(classical):.4f}"
    )


def test_ppi_still_covers_when_the_judge_is_biased():
    # The judge overrates by 0.2 on average: its own mean (0.5) is far off the truth (0.3).
    ppi, classical = _simulate(2, lambda rng, shape: rng.beta(2, 2, shape), lambda rng, f: f - 0.2 + rng.normal(0, 0.1, f.shape))
    truth = 0.3
    assert _covers(ppi, truth) >= 0.93
    assert abs(float(ppi.estimate.mean()) - truth) < 0.005
    assert _width(ppi) < _width(classical)
    print(
        f"biased: PPI coverage {_covers(ppi, truth):.3f} width {_width(ppi):.4f}; "
        f"classical coverage {_covers(classical, truth):.3f} width {_width(classical):.4f}"
    )


def test_ppi_covers_with_binary_labels():
    # Labels are 0/1 with P(1) = judge + 0.05; truth = E[judge] + 0.05 = 0.55.
    ppi, classical = _simulate(
        3, lambda rng, shape: rng.uniform(0.1, 0.9, shape), lambda rng, f: (rng.uniform(size=f.shape) < f + 0.05).astype(float)
    )
    truth = 0.55
    assert _covers(ppi, truth) >= 0.93
    assert _width(ppi) < _width(classical)
    print(
        f"binary: PPI coverage {_covers(ppi, truth):.3f} width {_width(ppi):.4f}; "
        f"classical coverage {_covers(classical, truth):.3f} width {_width(classical):.4f}"
    )


def test_ppi_and_classical_formulas_on_a_small_example():
    judge_all = [0.9, 0.8, 0.2, 0.6, 0.4, 0.1]
    judge_l, human_l = [0.9, 0.2, 0.6], [1.0, 0.0, 0.0]
    ppi = ppi_mean_ci(judge_all, judge_l, human_l)
    rectifier = np.array(judge_l) - np.array(human_l)  # [-0.1, 0.2, 0.6]
    assert ppi.estimate == pytest.approx(np.mean(judge_all) - rectifier.mean())  # 0.5 - 0.2333
    se = np.sqrt(np.var(judge_all, ddof=1) / 6 + np.var(rectifier, ddof=1) / 3)
    assert ppi.se == pytest.approx(se)
    assert (ppi.low, ppi.high) == pytest.approx((ppi.estimate - 1.959964 * se, ppi.estimate + 1.959964 * se))
    classical = classical_mean_ci(human_l, confidence=0.9)
    assert classical.estimate == pytest.approx(1 / 3)
    assert classical.high - classical.estimate == pytest.approx(1.644854 * np.std(human_l, ddof=1) / np.sqrt(3))
    with pytest.raises(ValueError):
        ppi_mean_ci(judge_all, [0.1, 0.2], [0.1])
    with pytest.raises(ValueError):
        classical_mean_ci([0.5])


def test_cohens_kappa_on_a_known_confusion_matrix():
    # Rater a: rows, rater b: columns; yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    categories, matrix = confusion_matrix(a, b)
    assert categories == [0, 1] and matrix.tolist() == [[15, 10], [5, 20]]
    # p_o = 35/50 = 0.7; p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    assert cohens_kappa(a, b) == pytest.approx(0.4)
    assert accuracy(a, b) == pytest.approx(0.7)
    assert cohens_kappa(a, a) == pytest.approx(1.0)
    assert np.isnan(cohens_kappa([1, 1, 1], [1, 1, 1]))
    sklearn = pytest.importorskip("sklearn.metrics")
    three_a, three_b = [0, 1, 2, 2, 1, 0, 2, 1], [0, 2, 2, 2, 1, 1, 2, 0]
    assert cohens_kappa(three_a, three_b) == pytest.approx(sklearn.cohen_kappa_score(three_a, three_b))


def _result(values, metric="faithfulness"):
    """A run whose samples s0, s1... have these scores (None: unscored)."""
    samples = []
    for i, value in enumerate(values):
        score = Score(value) if value is not None else Score.unscored("missing required field(s): retrieved_contexts")
        samples.append(SampleResult(f"s{i}", Sample(id=f"s{i}", user_input="q"), "data.jsonl", f"line {i + 1}", scores={metric: score}))
    return Result(samples=samples, metrics=[{"id": metric, "unit": None, "higher_is_better": True}])


def test_calibrate_reports_agreement_the_means_and_every_missing_id():
    judge = [0.9, 0.8, 0.3, 0.7, 0.2, 0.6, None, 0.1, 0.95, 0.4]
    result = _result(judge)
    labels = {"s0": 1, "s1": 1, "s2": 0, "s3": 0, "s4": 0, "s5": 1, "s6": 1, "s7": 0, "zz": 1}
    report = calibrate(result, "faithfulness", labels, n_resamples=300)
    assert report.labels_not_in_run == ["zz"]
    assert report.labelled_unscored == [{"id": "s6", "reason": "missing required field(s): retrieved_contexts"}]
    assert report.unscored_reasons == {"missing required field(s): retrieved_contexts": 1}
    assert (report.n_samples, report.n_scored, report.n_labels, report.n_used) == (10, 9, 9, 7)
    assert report.binary_labels
    f = np.array([0.9, 0.8, 0.3, 0.7, 0.2, 0.6, 0.1])  # s0..s5 and s7
    y = np.array([1, 1, 0, 0, 0, 1, 0])
    # Thresholded judge [1,1,0,1,0,1,0] against the labels [1,1,0,0,0,1,0]: 6 of 7 agree.
    assert report.agreement["accuracy"]["value"] == pytest.approx(6 / 7)
    assert report.agreement["pearson"]["value"] == pytest.approx(stats.pearsonr(f, y).statistic)
    assert report.agreement["kendall_tau"]["value"] == pytest.approx(stats.kendalltau(f, y).statistic)
    assert report.agreement["spearman"]["value"] == pytest.approx(stats.spearmanr(f, y).statistic)
    # kappa: p_o = 6/7; judge passes 4/7, labels 3/7; p_e = 4/7*3/7 + 3/7*4/7 = 24/49
    assert report.agreement["cohens_kappa"]["value"] == pytest.approx((6 / 7 - 24 / 49) / (1 - 24 / 49))
    for entry in report.agreement.values():
        assert entry["ci_low"] <= entry["value"] <= entry["ci_high"]
    scored = [v for v in judge if v is not None]
    assert report.ppi.estimate == pytest.approx(np.mean(scored) - (f - y).mean())
    assert report.classical.estimate == pytest.approx(y.mean())
    assert report.variance_ratio == pytest.approx(report.classical.se**2 / report.ppi.se**2)
    assert any("not in the run" in w for w in report.warnings)
    text = render_markdown(report.to_dict())
    assert "zz" in text and "s6" in text and "Unscored samples" in text


def test_calibrate_refuses_too_few_labels_and_measurements():
    with pytest.raises(ValueError, match="at least 2"):
        calibrate(_result([0.5, 0.6]), "faithfulness", {"s0": 1, "nope": 0})
    # Labels written as "yes"/"no" all fail to parse: the refusal says why, not only how many.
    issues = [f"h.jsonl, line {n}: 'label' of 's{n}' must be a number in [0, 1], got 'yes'" for n in range(1, 6)]
    with pytest.raises(
        ValueError, match=r"at least 2 are needed; 5 label line\(s\) could not be used: h\.jsonl, line 1: .*line 3: [^;]*'yes'$"
    ):
        calibrate(_result([0.5, 0.6]), "faithfulness", {"s0": 1}, label_issues=issues)
    result = Result(
        samples=[SampleResult("s0", Sample(id="s0"), "d", "line 1", scores={"latency_ms": Score(120.0)})],
        metrics=[{"id": "latency_ms", "unit": "ms", "higher_is_better": False}],
    )
    with pytest.raises(ValueError, match="not a score in"):
        calibrate(result, "latency_ms", {"s0": 1})
    with pytest.raises(KeyError):
        calibrate(_result([0.5, 0.6]), "rougeL", {"s0": 1, "s1": 0})


def test_read_labels_reports_bad_lines(tmp_path):
    path = tmp_path / "human.jsonl"
    path.write_text(
        '{"id": 1, "label": 1}\n{"id": "b", "label": 1.5}\nnot json\n{"id": "c"}\n{"id": 1, "label": 0}\n{"id": "d", "label": 0.25}\n'
    )
    found = read_labels(path, "label", score)
    labels, problems = found.by_id, found.problems
    assert labels == {"1": 1.0, "d": 0.25}
    assert [p.split(": ")[0].rsplit(", ", 1)[1] for p in problems] == ["line 2", "line 3", "line 4", "line 5"]


def test_an_id_that_is_not_text_or_a_number_is_a_bad_line_and_a_whole_float_is_the_sample_s_id(tmp_path):
    """A null id was read as the id "None" (true as "True", a list as its repr), and 7.0 as "7.0"
    while a sample's id 7.0 is "7"."""
    path = tmp_path / "human.jsonl"
    path.write_text("\n".join(f'{{"id": {key}, "label": 1}}' for key in ("null", "true", '["a"]', '{"x": 1}', '" "', "7.0")) + "\n")
    found = read_labels(path, "label", score)
    assert found.by_id == {"7": 1.0}
    assert found.problems[0] == f"{path}, line 1: 'id' must be text or a number, got None"
    assert [p.split(": ")[0].rsplit(", ", 1)[1] for p in found.problems] == ["line 1", "line 2", "line 3", "line 4", "line 5"]


def test_a_labels_file_that_starts_with_a_byte_order_mark_keeps_its_first_label(tmp_path):
    path = tmp_path / "human.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "label": 1}\n{"id": "b", "label": 0}\n')  # as Windows editors save UTF-8
    found = read_labels(path, "label", score)
    assert found.by_id == {"a": 1.0, "b": 0.0} and found.problems == []


def test_a_huge_value_or_id_is_quoted_briefly_in_a_label_line_s_problem(tmp_path):
    """A bad 'better' value was quoted whole, so a megabyte pasted into it flooded the message;
    so did a long id in "'label' of ..." and "labelled again"."""
    with pytest.raises(ValueError, match="must be A, B or tie, got 'xxx") as bad:
        preference("x" * 1_000_000)
    assert len(str(bad.value)) < 100
    path = tmp_path / "human.jsonl"
    long_id = "q" * 100_000
    _write_rows(path, [{"id": long_id, "better": "C"}, {"id": long_id, "better": "A"}, {"id": long_id, "better": "B"}])
    found = read_labels(path, "better", preference)
    assert found.by_id == {long_id: "a"} and len(found.problems) == 2
    assert found.problems[0].startswith(f"{path}, line 1: 'better' of 'qqq") and found.problems[0].endswith("got 'C'")
    assert found.problems[1].startswith(f"{path}, line 3: id 'qqq") and found.problems[1].endswith(
        "labelled again; the first label is kept"
    )
    assert all(len(problem) < len(str(path)) + 150 for problem in found.problems)


def test_a_label_line_that_is_no_utf8_is_an_encoding_problem_naming_its_line(tmp_path):
    """Invalid bytes were replaced by U+FFFD: the id matched no sample and was reported only
    as "not in the run"."""
    path = tmp_path / "human.jsonl"
    path.write_bytes('{"id": "a", "label": 1}\n{"id": "café", "label": 0}\n'.encode() + '{"id": "café", "label": 1}\n'.encode("cp1252"))
    found = read_labels(path, "label", score)
    assert found.by_id == {"a": 1.0, "café": 0.0}
    assert found.problems == [
        f"{path}, line 3: invalid UTF-8 (byte 0xe9 at column 12); the file may be in Windows-1252: "
        "convert it to UTF-8, e.g. iconv -f CP1252 -t UTF-8 in > out"
    ]


def _write_rows(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cli_calibrate_writes_outputs(tmp_path):
    rows = [
        {"id": f"r{i}", "response": response, "reference": "Loans last three weeks."}
        for i, response in enumerate(
            ["Loans last three weeks.", "Three weeks.", "Two months.", "Loans last three weeks and renew twice.", "No idea.", "Weeks."]
        )
    ]
    run = tmp_path / "run"
    runner = CliRunner()
    evaluated = runner.invoke(app, ["eval", str(_write_rows(tmp_path / "data.jsonl", rows)), "-m", "token_f1", "-o", str(run)])
    assert evaluated.exit_code == 0, evaluated.output
    labels = _write_rows(
        tmp_path / "human.jsonl",
        [
            {"id": "r0", "label": 1},
            {"id": "r1", "label": 1},
            {"id": "r2", "label": 0},
            {"id": "r4", "label": 0},
            {"id": "ghost", "label": 1},
        ],
    )
    out = tmp_path / "cal"
    result = runner.invoke(app, ["calibrate", str(run), "--labels", str(labels), "--metric", "token_f1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads((out / "calibration.json").read_text())
    assert document["n_used"] == 4 and document["missing"]["labels_not_in_run"] == ["ghost"]
    assert set(document["agreement"]) == {"accuracy", "cohens_kappa", "pearson", "spearman", "kendall_tau"}
    assert document["mean"]["ppi"]["ci_low"] < document["mean"]["ppi"]["estimate"] < document["mean"]["ppi"]["ci_high"]
    assert "Calibration of `token_f1`" in (out / "calibration.md").read_text()
    assert "mean by PPI" in result.output and "not in the run" in result.output
    report = calibrate_run(run, labels, "token_f1")
    assert report.n_scored == 6
    default = runner.invoke(app, ["calibrate", str(run), "--labels", str(labels), "--metric", "token_f1"])
    assert default.exit_code == 0 and (run / "calibration_token_f1" / "calibration.json").exists()
    missing = runner.invoke(app, ["calibrate", str(run), "--labels", str(labels), "--metric", "faithfulness"])
    assert missing.exit_code == 2 and "faithfulness" in missing.output


def test_calibrate_keeps_the_means_and_their_intervals_within_the_labels_range():
    # Two labels, 0 and 1: the classical normal interval is 0.5 -/+ 0.98, past both ends.
    report = calibrate(_result([0.9, 0.95, 0.9, 0.92]), "faithfulness", {"s0": 0, "s1": 1}, n_resamples=50)
    for ci in (report.classical, report.ppi):
        assert 0.0 <= ci.low <= ci.estimate <= ci.high <= 1.0
    assert (report.classical.low, report.classical.high) == (0.0, 1.0)
    assert report.classical.estimate == pytest.approx(0.5)
