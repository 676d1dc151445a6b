"""Sweeps on a grid with a planted best (see sweep_pipeline.py): the best is found, the Pareto
front is the hand-worked one, the others are significantly worse by the paired test with
Holm's correction, a configuration as good as the best is not, and a failing question is
recorded without stopping the sweep; plus the sweep file and the command line."""

from __future__ import annotations

import json

import pytest
import sweep_pipeline
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.decide.sweep import NOT_COMPARED, NOT_WORSE, WORSE, grid_configs, import_pipeline, load_sweep_file, run_sweep

GRID = {"chunk_size": [256, 512], "top_k": [1, 5]}


@pytest.fixture
def testset():
    return [{"id": f"q{i:02d}", "user_input": f"question {i}", "reference": f"w{i}a w{i}b w{i}c w{i}d"} for i in range(12)]


def test_a_grid_gives_every_combination_last_key_fastest():
    assert grid_configs(GRID) == [
        {"chunk_size": 256, "top_k": 1},
        {"chunk_size": 256, "top_k": 5},
        {"chunk_size": 512, "top_k": 1},
        {"chunk_size": 512, "top_k": 5},
    ]
    with pytest.raises(ValueError, match=r"grid\.top_k: expected a non-empty list"):
        grid_configs({"top_k": []})


def test_a_grid_or_list_past_the_limit_is_refused_before_it_is_built(tmp_path):
    # Eight settings of ten values (YAML aliases make that a short file) filled the memory.
    grid = {f"s{i}": list(range(10)) for i in range(8)}
    with pytest.raises(
        ValueError, match=r"grid: 100,000,000 configurations \(10 x 10 x 10 x 10 x 10 x 10 x 10 x 10\); a sweep runs at most 1,000"
    ):
        grid_configs(grid)
    assert len(grid_configs({"a": list(range(10)), "b": list(range(10)), "c": list(range(10))})) == 1000  # the limit itself runs
    listed = tmp_path / "listed.yaml"
    listed.write_text("configs:\n" + "".join(f"  - {{top_k: {i}}}\n" for i in range(1001)))
    with pytest.raises(ValueError, match=r"listed\.yaml: configs: 1,001 configurations \(listed\)"):
        load_sweep_file(listed)


def test_the_planted_best_wins_and_the_others_are_significantly_worse(testset, tmp_path):
    sweep = run_sweep(sweep_pipeline.answer, grid_configs(GRID), testset, ["token_f1"], out_dir=tmp_path)
    assert sweep.best == "chunk_size=512, top_k=5"
    quality = {p.name: p.quality for p in sweep.points}
    assert quality == pytest.approx(
        {"chunk_size=256, top_k=1": 0.4, "chunk_size=256, top_k=5": 2 / 3, "chunk_size=512, top_k=1": 2 / 3, "chunk_size=512, top_k=5": 1.0}
    )
    assert sweep.point("chunk_size=256, top_k=1").latency_ms == 10.0 and sweep.point("chunk_size=512, top_k=5").cost_usd == pytest.approx(
        0.003
    )
    # (256, 5) has (512, 1)'s quality at twice its latency and cost: dominated.
    assert {p.name for p in sweep.points if p.pareto} == {"chunk_size=256, top_k=1", "chunk_size=512, top_k=1", "chunk_size=512, top_k=5"}
    for point in sweep.points:
        if point.name == sweep.best:
            assert point.versus_best is None
            continue
        versus = point.versus_best
        # 12 pairs, all of one sign: exact permutation p = 2 / 2^12; Holm over 3 comparisons.
        assert versus["p_permutation"] == pytest.approx(2 / 4096) and versus["p_holm"] == pytest.approx(3 * 2 / 4096)
        assert versus["mean_diff"] == pytest.approx(point.quality - 1.0) and versus["ci_high"] < 0
        assert versus["verdict"] == WORSE
    document = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    assert document["best"] == sweep.best and len(document["significantly_worse"]) == 3
    assert (tmp_path / "chunk_size=512_top_k=5" / "results.jsonl").exists()
    assert "| `chunk_size=512, top_k=5` | 1.000 |" in (tmp_path / "sweep.md").read_text(encoding="utf-8")


def test_a_configuration_as_good_as_the_best_is_not_worse_and_a_failing_question_is_recorded(testset):
    configs = [
        {"chunk_size": 512, "top_k": 5},
        {"chunk_size": 512, "top_k": 5, "slow_best": True},
        {"chunk_size": 256, "top_k": 1, "flaky": True},
    ]
    sweep = run_sweep(sweep_pipeline.answer, configs, testset, ["token_f1"])
    twin = sweep.point("chunk_size=512, top_k=5, slow_best=True")
    assert twin.quality == 1.0 and twin.versus_best["verdict"] == NOT_WORSE and not twin.pareto  # as good, but slower
    flaky = sweep.point("chunk_size=256, top_k=1, flaky=True")
    assert flaky.errors == 1 and flaky.versus_best["n_pairs"] == 11  # q00 failed: unscored, not paired
    assert flaky.versus_best["verdict"] == WORSE and flaky.pareto  # the fastest and cheapest


def _broken(config, sample):
    """Fails on every question when ``broken`` is set, else answers like ``sweep_pipeline.answer``."""
    if config.get("broken"):
        raise RuntimeError("index unavailable")
    return sweep_pipeline.answer(config, sample)


def test_a_configuration_whose_every_question_failed_is_not_compared_and_its_failures_are_shown(testset, tmp_path):
    """It read "not significantly worse" than the best, and nothing said that it had failed."""
    configs = [{"chunk_size": 512, "top_k": 5}, {"chunk_size": 512, "top_k": 5, "broken": True}]
    sweep = run_sweep(_broken, configs, testset, ["token_f1"], out_dir=tmp_path)
    broken = sweep.point("chunk_size=512, top_k=5, broken=True")
    assert broken.quality is None and broken.errors == 12 and broken.versus_best["verdict"] == NOT_COMPARED
    assert f"| {NOT_COMPARED}; 12 question(s) failed in the pipeline |" in (tmp_path / "sweep.md").read_text(encoding="utf-8")


def test_sweep_options_are_checked(testset):
    with pytest.raises(ValueError, match="at least two configurations"):
        run_sweep(sweep_pipeline.answer, [{"chunk_size": 512, "top_k": 5}], testset, ["token_f1"])
    with pytest.raises(ValueError, match="quality metric 'rougeL' is not among the metrics"):
        run_sweep(sweep_pipeline.answer, grid_configs(GRID), testset, ["token_f1"], quality="rougeL")


def _by_variant(config, sample):
    """Answers the sample's reference when ``variant`` is "a/b", something else otherwise."""
    return {"contexts": [sample.reference], "answer": sample.reference if config["variant"] == "a/b" else "red"}


def test_configurations_whose_folder_names_collide_each_keep_their_run(testset, tmp_path):
    long = "x" * 90
    configs = [{"variant": "a/b"}, {"variant": "a:b"}, {"variant": "A/B"}, {"variant": long + "1"}, {"variant": long + "2"}]
    sweep = run_sweep(_by_variant, configs, testset, ["token_f1"], out_dir=tmp_path)
    folders = [point.folder for point in sweep.points]
    assert len(set(folders)) == 5 and len({f.casefold() for f in folders}) == 5
    assert all(f.startswith("variant=a_b_") for f in folders[:2]) and folders[2].startswith("variant=A_B_")
    for point in sweep.points:
        answers = {json.loads(line)["sample"]["response"] for line in (tmp_path / point.folder / "results.jsonl").open(encoding="utf-8")}
        assert answers == ({s["reference"] for s in testset} if point.name == "variant=a/b" else {"red"})
    assert sweep.best == "variant=a/b"
    document = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    assert [p["folder"] for p in document["points"]] == folders
    assert f"| `{folders[0]}` |" in (tmp_path / "sweep.md").read_text(encoding="utf-8")
    # The same names give the same folders again: a resumed sweep finds its runs.
    again = run_sweep(_by_variant, configs, testset, ["token_f1"], out_dir=tmp_path)
    assert [point.folder for point in again.points] == folders


def test_two_configurations_of_one_name_are_refused(testset):
    with pytest.raises(ValueError, match="configurations 1 and 2 are both named 'top_k=1'"):
        run_sweep(sweep_pipeline.answer, [{"top_k": 1}, {"top_k": "1"}], testset, ["token_f1"])


def test_sweep_files_and_pipeline_names_give_clear_errors(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("pipeline: sweep_pipeline:answer\nconfigs:\n  - {top_k: 1}\n  - {top_k: 5}\n", encoding="utf-8")
    assert load_sweep_file(path) == ("sweep_pipeline:answer", [{"top_k": 1}, {"top_k": 5}])
    path.write_text("grid: {top_k: 3}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"sweep.yaml: grid.top_k: expected a non-empty list"):
        load_sweep_file(path)
    path.write_text("pipeline: x:y\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"either grid: .* or configs:"):
        load_sweep_file(path)
    with pytest.raises(ValueError, match="give module:function"):
        import_pipeline("sweep_pipeline")
    with pytest.raises(ValueError, match="cannot import no_such_module_here"):
        import_pipeline("no_such_module_here:f")
    with pytest.raises(ValueError, match="has no function 'nothing'"):
        import_pipeline("sweep_pipeline:nothing")
    with pytest.raises(ValueError, match="an HTTP endpoint cannot be called"):
        import_pipeline("http://127.0.0.1:9/answer")
    assert import_pipeline("sweep_pipeline:answer") is sweep_pipeline.answer


def test_the_sweep_command_reports_the_front_and_the_worse(testset, tmp_path):
    data = tmp_path / "testset.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in testset), encoding="utf-8")
    grid = tmp_path / "sweep.yaml"
    grid.write_text("pipeline: sweep_pipeline:answer\ngrid:\n  chunk_size: [256, 512]\n  top_k: [1, 5]\n", encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["sweep", str(data), "--grid", str(grid), "-m", "token_f1,rougeL", "-o", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Best: chunk_size=512, top_k=5." in result.output and "3 configuration(s) significantly worse than the best" in result.output
    assert json.loads((out / "sweep.json").read_text(encoding="utf-8"))["quality_metric"] == "token_f1"
    missing = CliRunner().invoke(app, ["sweep", str(data), "--grid", str(grid), "-m", "token_f1", "--pipeline", "nope:f", "-o", str(out)])
    assert missing.exit_code == 2 and "cannot import nope" in missing.output and "Traceback" not in missing.output
