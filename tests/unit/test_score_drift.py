"""Score drift: control limits from the bootstrap intervals, on stored runs and on the
monitor's daily scores; ``ragmeter drift scores`` exits 1 when the latest point is out of control."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import runner
from sqlalchemy import insert

from ragmeter.cli import app
from ragmeter.data.schema import Sample
from ragmeter.metrics import create_metric
from ragmeter.metrics.base import Score
from ragmeter.monitor.control import Point, control_chart, window_point
from ragmeter.observe import SpanRecord
from ragmeter.results import Result, SampleResult
from ragmeter.store import RunStore
from ragmeter.store.schema import trace_scores


def point(label: str, mean: float, half_width: float = 0.02, n: int = 100) -> Point:
    return Point(label, f"2026-11-{int(label[1:]) + 1:02d}", mean, mean - half_width, mean + half_width, n)


def test_a_point_beyond_three_standard_errors_is_out_of_control():
    base = [point(f"r{i}", m) for i, m in enumerate([0.80, 0.81, 0.79, 0.80, 0.80])]
    chart = control_chart("faithfulness", [*base, point("r5", 0.795), point("r6", 0.70)], baseline=5)
    assert chart.centre == pytest.approx(0.80)
    checked = chart.points[5:]
    se = 0.04 / 3.919928
    assert checked[0].lower == pytest.approx(0.80 - 3 * se) and not checked[0].out_of_control
    assert checked[1].out_of_control and chart.alarm
    assert all(p.lower is None for p in chart.points[:5])
    calm = control_chart("faithfulness", [*base, point("r5", 0.70), point("r6", 0.80)], baseline=5)
    assert calm.points[5].out_of_control and not calm.alarm  # only the latest point raises the alarm


def test_spread_between_baseline_runs_widens_the_limits():
    base = [point(f"r{i}", m, half_width=0.005) for i, m in enumerate([0.70, 0.90, 0.75, 0.85, 0.80])]
    chart = control_chart("m", [*base, point("r5", 0.72, half_width=0.005)], baseline=5)
    assert not chart.alarm and chart.points[-1].lower < 0.72


def test_window_points_take_the_bootstrap_interval_of_their_scores():
    values = list(np.linspace(0.5, 1.0, 50))
    made = window_point("2026-11-02", "2026-11-02", values)
    assert made.mean == pytest.approx(0.75) and made.ci_low < 0.75 < made.ci_high and made.n == 50
    assert window_point("d", "d", []) is None
    with pytest.raises(ValueError, match="at least one point"):
        control_chart("m", [made], baseline=0)


def stored_run(store: RunStore, day: int, mean: float, settings: dict | None = None) -> None:
    """A run of token_f1 scores around ``mean``; ``settings`` replace the metric's recorded parameters."""
    values = np.clip(np.random.default_rng(day).normal(mean, 0.05, 60), 0, 1)
    samples = [
        SampleResult(key=f"s{i}", sample=Sample(id=f"s{i}"), source="d", location=f"line {i}", scores={"token_f1": Score(float(v))})
        for i, v in enumerate(values)
    ]
    info = create_metric("token_f1").info()
    if settings is not None:
        info["config"] = settings
    store.save(Result(samples=samples, metrics=[info], run={"started_at": f"2026-11-{day:02d}T00:00:00+00:00"}), tags=["nightly"])


def test_the_drift_scores_command_on_stored_runs(tmp_path):
    path = str(tmp_path / "runs.db")
    store = RunStore.open(path)
    for day in range(1, 7):
        stored_run(store, day, 0.8)
    args = ["drift", "scores", "-m", "token_f1", "--store", path, "--baseline", "5", "--json", str(tmp_path / "d.json")]
    calm = runner.invoke(app, args)
    assert calm.exit_code == 0, calm.output
    stored_run(store, 7, 0.6)
    store.close()
    alarm = runner.invoke(app, args)
    assert alarm.exit_code == 1 and "the latest point is out of control" in alarm.output
    chart = json.loads((tmp_path / "d.json").read_text())["charts"][0]
    assert chart["alarm"] is True and len(chart["points"]) == 7
    few = runner.invoke(app, [*args[:-2], "--baseline", "10"])
    assert few.exit_code == 0 and "too few points" in few.output
    assert runner.invoke(app, [*args, "--source", "logs"]).exit_code == 2
    # A misspelt metric or store was "no point", exit 0: a CI drift check with a typo passed.
    typo = runner.invoke(app, ["drift", "scores", "-m", "token_f2", "--store", path])
    assert typo.exit_code == 2 and "token_f2: no stored run scored it: is the name right?" in typo.output
    nowhere = tmp_path / "runs_typo.db"
    missing = runner.invoke(app, ["drift", "scores", "-m", "token_f1", "--store", str(nowhere)])
    assert missing.exit_code == 2 and f"--store {nowhere}: no such store" in missing.output and not nowhere.exists()


def test_runs_scored_with_other_settings_than_the_latest_run_are_left_out_and_named(tmp_path):
    path = str(tmp_path / "runs.db")
    store = RunStore.open(path)
    for day in range(1, 7):
        stored_run(store, day, 0.8, settings={"threshold": 0.5})
    for day in range(7, 10):
        stored_run(store, day, 0.6)  # a changed default moves every score: not drift
    store.close()
    args = ["drift", "scores", "-m", "token_f1", "--store", path, "--baseline", "2", "--json", str(tmp_path / "d.json")]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output
    assert "settings changed" in done.output and "6 earlier run(s) were scored with other settings" in done.output
    chart = json.loads((tmp_path / "d.json").read_text())["charts"][0]
    assert len(chart["points"]) == 3 and len(chart["left_out"]) == 6 and chart["alarm"] is False
    assert chart["centre"] == pytest.approx(0.6, abs=0.03)
    store = RunStore.open(path)
    stored_run(store, 10, 0.8, settings={"threshold": 0.5})  # back to the old settings: the newest runs are left out
    store.close()
    assert runner.invoke(app, args).exit_code == 0
    back = json.loads((tmp_path / "d.json").read_text())["charts"][0]
    assert len(back["points"]) == 7 and len(back["left_out"]) == 3


def _monitor_scores(path: str, metric_id: str, days: dict[int, tuple[float, dict | None]], per_day: int) -> None:
    """Store ``per_day`` monitor scores of ``metric_id`` for each November day: day -> (mean of
    the scores, the settings they were made with), each request started on its day."""
    store = RunStore.open(path)
    spans, rows = [], []
    generator = np.random.default_rng(0)
    for day, (mean, settings) in days.items():
        for i in range(per_day):
            trace_id = f"{day:04d}{i:028x}"
            started = f"2026-11-{day:02d}T10:00:00+00:00"
            spans.append(SpanRecord(trace_id=trace_id, span_id="0" * 16, name="rag", started_at=started, question="q"))
            value = float(np.clip(generator.normal(mean, 0.05), 0, 1))
            row = {"trace_id": trace_id, "metric_id": metric_id, "value": value, "explanation": "", "failed": False, "details": {}}
            rows.append({**row, "scored_at": f"2026-11-{day:02d}T11:00:00+00:00", "settings": settings})
    store.add_spans(spans)
    with store.engine.begin() as connection:
        connection.execute(insert(trace_scores), rows)
    store.close()


def test_the_drift_scores_command_on_the_monitor_s_daily_scores(tmp_path):
    path = str(tmp_path / "runs.db")
    _monitor_scores(path, "faithfulness", {day: (0.5 if day == 7 else 0.85, None) for day in range(1, 8)}, per_day=40)
    done = runner.invoke(app, ["drift", "scores", "-m", "faithfulness", "--source", "traces", "--store", path, "--baseline", "5"])
    assert done.exit_code == 1, done.output
    assert "2026-11-06 (2026-11-06)" in done.output and "2026-11-07 (2026-11-07)" in done.output


def test_monitor_scores_made_with_other_settings_are_left_out_of_the_daily_chart(tmp_path):
    path = str(tmp_path / "runs.db")
    # Days 1-6 scored at the old threshold; from day 7 a stricter one scores lower: not a drop in quality.
    days = {day: (0.85, {"threshold": 0.5}) if day <= 6 else (0.5, {"threshold": 0.8}) for day in range(1, 9)}
    _monitor_scores(path, "context_relevance", days, per_day=20)
    args = [
        "drift",
        "scores",
        "-m",
        "context_relevance",
        "--source",
        "traces",
        "--store",
        path,
        "--baseline",
        "1",
        "--json",
        str(tmp_path / "d.json"),
    ]
    done = runner.invoke(app, args)
    assert done.exit_code == 0, done.output  # without the settings, day 7 was out of control
    assert "120 earlier trace(s) were scored with other settings than the latest trace" in done.output
    chart = json.loads((tmp_path / "d.json").read_text())["charts"][0]
    assert [p["point"]["label"] for p in chart["points"]] == ["2026-11-07", "2026-11-08"]
    assert len(chart["left_out"]) == 120 and chart["left_out_of"] == "trace"
