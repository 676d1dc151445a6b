"""Hostile labels files for `calibrate` and `pairwise`: each is refused or reported by name,
never taken silently. Only model-free paths: pairwise fails before any judge is built."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app

runner = CliRunner()
#: Should pairwise ever get past its inputs, an endpoint nothing listens on: never the local model.
NO_LOCAL_JUDGE = ["--judge", "openai", "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "x", "--judge-timeout", "1"]


def _run(tmp_path):
    data = tmp_path / "data.jsonl"
    rows = [{"id": k, "user_input": f"Question {k}?", "response": "It opens at nine.", "reference": "It opens at nine."} for k in "abcd"]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = runner.invoke(app, ["eval", str(data), "-m", "token_f1", "-o", str(tmp_path / "run")])
    assert done.exit_code == 0, done.output
    return data, tmp_path / "run"


def _commands(data, run, labels):
    return {
        "calibrate": ["calibrate", str(run), "--labels", str(labels), "--metric", "token_f1", "-o", str(run.parent / "cal")],
        "pairwise": ["pairwise", str(data), str(data), "--labels", str(labels), "-o", str(run.parent / "pw"), *NO_LOCAL_JUDGE],
    }


@pytest.mark.parametrize("command", ["calibrate", "pairwise"])
def test_a_folder_or_an_empty_file_as_labels_is_named_and_refused(tmp_path, command):
    """A folder gave "error: [Errno 21] Is a directory: 'labels.jsonl'"; an empty file was taken
    as labels matching nothing (pairwise went on to judge with no reference, without a word)."""
    data, run = _run(tmp_path)
    folder = tmp_path / "labels.jsonl"
    folder.mkdir()
    done = runner.invoke(app, _commands(data, run, folder)[command])
    assert done.exit_code == 2 and f"{folder}: cannot read the labels file: Is a directory" in " ".join(done.output.split()), done.output
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\xef\xbb\xbf \n\n")
    done = runner.invoke(app, _commands(data, run, empty)[command])
    assert done.exit_code == 2 and f"{empty}: the labels file is empty" in " ".join(done.output.split()), done.output
    assert "Traceback" not in done.output


def test_pairwise_labels_naming_no_pair_are_listed(tmp_path):
    """A label whose id is in neither side (a typo, an id with a control character) gave no
    reference and was dropped without a word; it is now listed, as are unusable label lines."""
    from ragmeter.decide.pairs import load_side, match_samples, read_preferences
    from ragmeter.report.pairwise import _leftovers

    data, _ = _run(tmp_path)
    labels = tmp_path / "labels.jsonl"
    rows = [{"id": "a", "better": "A"}, {"id": "zz", "better": "B"}, {"id": "c\x1b[2J", "better": "tie"}, {"id": "d", "better": 1}]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    found = read_preferences(labels)
    side = load_side(data)
    _, matching = match_samples(side, side, labels=found.by_id)
    assert matching["labels_unmatched"] == ["zz", "c\x1b[2J"] and matching["n_with_reference"] == 1
    matching["label_issues"] = found.problems
    markdown = "\n".join(_leftovers(matching))
    assert "- 2 label(s) naming no pair: `zz`, `c\\x1b[2J`" in markdown
    assert "- label line not used: " in markdown and "\x1b" not in markdown


def test_calibrate_names_the_first_bad_label_line_and_the_labels_not_in_the_run(tmp_path):
    """The console said "1 label line(s) could not be used" and "1 label(s) name samples that
    are not in the run", naming neither the line, the reason nor the id."""
    data, run = _run(tmp_path)
    labels = tmp_path / "labels.jsonl"
    rows = [{"id": k, "label": 1} for k in "abc"] + [{"id": "ghost\x1b[2J", "label": 0}, {"id": "d", "label": 10**400}]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    done = runner.invoke(app, _commands(data, run, labels)["calibrate"])
    said = " ".join(done.output.split())
    assert done.exit_code == 0, done.output
    assert f"1 label line(s) could not be used; the first: {labels}, line 5: 'label' of 'd' must be a number in [0, 1]" in said
    assert "1 label(s) name samples that are not in the run: 'ghost\\x1b[2J'" in said and "\x1b" not in done.output


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_labels_file_in_utf16_or_utf32_with_its_mark_is_read(tmp_path, encoding):
    """Windows' "Unicode" text: the samples reader reads it, the labels reader called every
    line invalid UTF-8 and used no label."""
    from ragmeter.decide.labels import read_labels, score

    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "a", "label": 1}\n{"id": "审", "label": 0.5}\n', encoding=encoding)
    found = read_labels(labels, "label", score)
    assert found.by_id == {"a": 1.0, "审": 0.5} and found.problems == []


def test_pairwise_says_the_rows_of_a_side_it_skipped(tmp_path):
    """A side's row skipped for a duplicate id was kept in pairwise.json only: the console and
    pairwise.md said nothing, so a side silently lost samples."""
    from ragmeter.decide.pairs import load_side, match_samples
    from ragmeter.report.pairwise import _leftovers

    data, _ = _run(tmp_path)
    side = tmp_path / "dup.jsonl"
    rows = [{"id": "x", "user_input": "Q?", "response": "r"}, {"id": "x", "user_input": "Q2?", "response": "s"}]
    side.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    said = f"{side}, line 2, field 'id': duplicate id 'x' (first seen at {side}, line 1)"
    done = runner.invoke(app, ["pairwise", str(side), str(data), "-o", str(tmp_path / "pw"), *NO_LOCAL_JUDGE])
    assert done.exit_code == 2 and f"{said} (row skipped)" in " ".join(done.output.split()), done.output
    _, matching = match_samples(load_side(side), load_side(data))
    assert any(line.startswith("- input issue: ") and "duplicate id" in line for line in _leftovers(matching))
