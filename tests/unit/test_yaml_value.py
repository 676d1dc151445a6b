"""YAML read from users' files (config, prices, thresholds, probes, sweeps, prompts): an alias
bomb ("billion laughs": a few hundred bytes, billions of values) is refused before it is built;
printing one of its values in an error message filled the memory ("unexpected error: MemoryError")."""

from __future__ import annotations

import pytest
import yaml
from cli_helpers import one_line_error, run_eval, runner, write_jsonl

from ragmeter.cli import app
from ragmeter.data.files import YAML_VALUES, yaml_value
from ragmeter.decide.probe_files import ProbeFileError, load_probe_file

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)  # 9^9 values once expanded


def test_an_alias_bomb_is_refused_and_ordinary_anchors_still_read():
    with pytest.raises(yaml.YAMLError, match=f"expand past {YAML_VALUES:,} values"):
        yaml_value(BOMB)
    with pytest.raises(yaml.YAMLError, match="refers to the value that holds it"):
        yaml_value("a: &a [1, *a]\n")
    shared = yaml_value("base: &base {model: m, temperature: 0}\njudge:\n  <<: *base\n  model: n\nlist: [*base, *base]\n")
    assert shared["judge"] == {"model": "n", "temperature": 0} and shared["list"] == [{"model": "m", "temperature": 0}] * 2
    assert yaml_value("") is None and yaml_value("- 1\n- 2\n") == [1, 2]


def test_every_command_that_reads_a_users_yaml_refuses_a_bomb_in_one_line(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB + "metrics: [*i]\n", encoding="utf-8")
    data = write_jsonl(
        tmp_path / "d.jsonl", [{"id": "a", "response": "x", "reference": "x"}, {"id": "b", "response": "y", "reference": "x"}]
    )
    run = tmp_path / "run"
    assert run_eval(data, "-m", "token_f1", "-o", run, "--no-progress").exit_code == 0
    for result in (
        run_eval(data, "--config", bomb, "-o", tmp_path / "out"),
        runner.invoke(app, ["gate", str(run), "-t", str(bomb)]),
        runner.invoke(app, ["sweep", str(data), "-g", str(bomb), "-m", "token_f1", "-o", str(tmp_path / "sw")]),
    ):
        one_line_error(result, f"{bomb}", "expand past 100,000 values")


def test_a_repeated_key_is_refused_and_a_yaml_error_is_one_line_with_its_place(tmp_path):
    """`judge: {model: x, model: y}` silently used y (gate alone refused repeats), and a YAML
    error spanned lines, shown on the console as escapes."""
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "response": "x", "reference": "x"}])
    config = tmp_path / "c.yaml"
    config.write_text("judge: {model: x, model: y}\n", encoding="utf-8")
    one_line_error(
        run_eval(data, "--config", config, "-o", tmp_path / "o"),
        f"{config}: cannot read the config file: line 1, column 19: key 'model' is repeated (first on line 1)",
    )
    config.write_text("metrics:\n  - [token_f1\n", encoding="utf-8")
    line = one_line_error(
        run_eval(data, "--config", config, "-o", tmp_path / "o"),
        f"{config}: cannot read the config file: line 3, column 1: expected ',' or ']'",
    )
    assert "\\n" not in line


def test_a_huge_value_in_a_users_file_is_cut_short_in_the_error_message(tmp_path):
    """An error message shows only the start of a bad value: a 20,000-item list once filled a
    message (and, from an alias bomb, the memory)."""
    huge = "[" + ", ".join(["12345"] * 20_000) + "]"
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "response": "x", "reference": "x"}])
    cases = {
        "prices": (f"prices: {huge}\n", ["--config"], "prices: expected the path"),
        "model": (f"judge:\n  model: {huge}\n", ["--config"], "judge.model"),
        "grid": (f"pipeline: m:f\ngrid:\n  top_k: {{a: {huge}}}\n", ["sweep", "-g"], "grid.top_k"),
        "question": (f"- id: p1\n  question: {huge}\n  forbidden: [x]\n", ["redteam", "--probes"], "question"),
        "forbidden": (f"- id: p1\n  question: q\n  forbidden: [{huge}]\n", ["redteam", "--probes"], "forbidden"),
    }
    for name, (text, option, fragment) in cases.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        if option == ["--config"]:
            result = run_eval(data, "--config", path, "-o", tmp_path / f"out_{name}")
        elif option[0] == "sweep":
            result = runner.invoke(app, ["sweep", str(data), "-g", str(path), "-m", "token_f1", "-o", str(tmp_path / f"sw_{name}")])
        else:
            result = runner.invoke(
                app, ["redteam", "--app", "x:y", "--no-builtin", "--probes", str(path), "-o", str(tmp_path / f"rt_{name}")]
            )
        line = one_line_error(result, str(path), fragment)
        assert len(line) < 300 + len(str(path)), (name, len(line))


def test_gate_says_an_alias_bomb_as_the_other_yaml_readers_do(tmp_path):
    """gate -t called an alias bomb (valid YAML, refused) "not valid YAML", unlike the config,
    sweep, price and prompt files; it now says it as they do."""
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "response": "x", "reference": "x"}])
    run = tmp_path / "run"
    assert run_eval(data, "-m", "token_f1", "-o", run, "--no-progress").exit_code == 0
    for text, problem in ((BOMB + "token_f1: [*i]\n", "its aliases expand past 100,000 values"), ("a: &a [1, *a]\n", "an alias refers")):
        path = tmp_path / "t.yaml"
        path.write_text(text, encoding="utf-8")
        config = one_line_error(run_eval(data, "--config", path, "-o", tmp_path / "out"), f"{path}: cannot read the config file: {problem}")
        gate = one_line_error(
            runner.invoke(app, ["gate", str(run), "-t", str(path)]), f"{path}: cannot read the thresholds file: {problem}"
        )
        assert "not valid YAML" not in gate and config.split("file: ")[1] == gate.split("file: ")[1]


def test_redteam_probes_say_an_alias_bomb_as_the_other_yaml_readers_do(tmp_path):
    """A probes file that is valid YAML, refused by yaml_value, was called "not valid YAML"."""
    path = tmp_path / "probes.yaml"
    for text, problem in ((BOMB + "probes: [*i]\n", "its aliases expand past 100,000 values"), ("a: &a [1, *a]\n", "an alias refers")):
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ProbeFileError, match=f"probes.yaml: cannot read the probes file: {problem}"):
            load_probe_file(path)
    path.write_text("- id: a\n  question: q\n  forbidden: [x\n", encoding="utf-8")  # a syntax error is one still
    with pytest.raises(ProbeFileError, match=r"probes.yaml:4: not valid YAML: expected ',' or ']'"):
        load_probe_file(path)
