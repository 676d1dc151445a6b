"""Drift: the nearest-neighbour scan test on vectors with a planted new topic and without one,
the grown topics it reports, knowledge-base snapshots, and the ``drift kb`` command."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from cli_helpers import runner

from ragmeter.cli import app
from ragmeter.monitor.drift import query_drift, scan_test
from ragmeter.monitor.kb import SnapshotError, compare_snapshots, read_snapshot, snapshot, write_snapshot


def unit_rows(generator: np.random.Generator, n: int, dim: int = 32) -> np.ndarray:
    vectors = generator.normal(size=(n, dim))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def planted(generator: np.random.Generator, n: int, dim: int = 32) -> np.ndarray:
    """A tight topic: vectors close to one direction."""
    centre = unit_rows(generator, 1, dim)[0]
    vectors = centre + 0.15 * generator.normal(size=(n, dim)) / np.sqrt(dim)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_windows_of_one_distribution_rarely_alarm_and_a_new_topic_at_ten_percent_does():
    generator = np.random.default_rng(7)
    false_alarms = detections = 0
    for trial in range(20):
        reference, same = unit_rows(generator, 150), unit_rows(generator, 150)
        shifted = np.vstack([unit_rows(generator, 135), planted(generator, 15)])
        false_alarms += scan_test(reference, same, permutations=199, seed=trial)[1] < 0.01
        detections += scan_test(reference, shifted, permutations=199, seed=trial)[1] < 0.01
    assert false_alarms <= 1 and detections == 20


def test_query_drift_names_the_topic_that_grew():
    generator = np.random.default_rng(3)
    reference = [f"old question {i}" for i in range(150)]
    current = [f"old question {i}" for i in range(150, 285)] + [f"new topic {i}" for i in range(15)]
    vectors = dict(zip(reference + current[:135], unit_rows(generator, 285), strict=True))
    vectors.update(zip(current[135:], planted(generator, 15), strict=True))
    found = query_drift(reference, current, lambda texts: np.array([vectors[t] for t in texts]), permutations=199)
    assert found.drift and found.p_value < 0.01 and (found.n_reference, found.n_current) == (150, 150)
    top = found.grown_topics[0]
    assert top.current_share >= 0.1 > top.reference_share and all(e.startswith("new topic") for e in top.examples)
    assert json.loads(json.dumps(found.to_dict()))["grown_topics"][0]["examples"] == top.examples
    with pytest.raises(ValueError, match="at least 10 questions per window"):
        query_drift(reference[:9], current, lambda texts: np.zeros((len(texts), 2)))


def test_knowledge_base_snapshots_show_added_removed_and_edited_documents(tmp_path):
    kb = tmp_path / "kb"
    (kb / "sub").mkdir(parents=True)
    (kb / "a.md").write_text("A")
    (kb / "sub" / "b.md").write_text("B")
    (kb / "c.md").write_text("C")
    (kb / ".hidden").write_text("x")
    baseline = snapshot(kb)
    assert sorted(baseline) == ["a.md", "c.md", "sub/b.md"]
    write_snapshot(tmp_path / "base.json", baseline)
    (kb / "a.md").write_text("A, edited")
    (kb / "c.md").unlink()
    (kb / "sub" / "d.md").write_text("D")
    change = compare_snapshots(read_snapshot(tmp_path / "base.json"), snapshot(kb))
    assert (change.added, change.removed, change.edited, change.unchanged) == (["sub/d.md"], ["c.md"], ["a.md"], 1)
    assert change.changed and not compare_snapshots(baseline, baseline).changed
    (tmp_path / "bad.json").write_text('{"documents": [1]}')
    with pytest.raises(SnapshotError, match=r"bad\.json: expected an object with 'documents'"):
        read_snapshot(tmp_path / "bad.json")
    (tmp_path / "cut.json").write_text('{\n "documents": {\n  "a.md": \n}\n}')  # a whole file: the line is named
    with pytest.raises(SnapshotError, match=r"cut\.json: invalid JSON: Expecting value at line 4, column 1$"):
        read_snapshot(tmp_path / "cut.json")
    with pytest.raises(SnapshotError, match="is not a folder"):
        snapshot(tmp_path / "missing")


def test_a_large_file_is_hashed_a_block_at_a_time_to_the_same_sha256(tmp_path):
    # Read whole, a knowledge base's videos took their size in memory; snapshots written
    # before must still compare equal.
    data = bytes(range(256)) * 10_000 + b"tail"  # 2.5 MB: three blocks, the last short
    (tmp_path / "talk.mp4").write_bytes(data)
    assert snapshot(tmp_path) == {"talk.mp4": hashlib.sha256(data).hexdigest()}


def test_names_that_are_no_utf8_and_a_baseline_inside_the_folder_raise_no_alarm(tmp_path):
    """A name that is no UTF-8 was written to the snapshot with U+FFFD, so every later run saw it
    removed and added again (exit 1), and two such names were one; a baseline kept inside the
    folder was itself an added, then an edited, document on every run."""
    kb = tmp_path / "kb"
    kb.mkdir()
    for raw in (b"bad\xff.md", b"bad\xfe.md", "中文.md".encode()):
        (kb / raw.decode("utf-8", "surrogateescape")).write_text(raw.hex())
    baseline = kb / "snapshot.json"
    args = ["drift", "kb", str(kb), "--baseline", str(baseline), "--update"]
    assert runner.invoke(app, args).exit_code == 0
    assert sorted(read_snapshot(baseline)) == ["bad\\xfe.md", "bad\\xff.md", "中文.md"]
    for _ in range(2):
        again = runner.invoke(app, args)
        assert again.exit_code == 0 and "0 added, 0 removed, 0 edited, 3 unchanged." in again.output, again.output


def test_the_drift_kb_command_exits_1_on_change_and_writes_json(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("A")
    args = ["drift", "kb", str(kb), "--baseline", str(tmp_path / "base.json"), "--json", str(tmp_path / "out.json")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0 and "No baseline yet" in first.output
    assert runner.invoke(app, args).exit_code == 0
    assert json.loads((tmp_path / "out.json").read_text())["changed"] is False
    (kb / "b.md").write_text("B")
    changed = runner.invoke(app, [*args, "--update"])
    assert changed.exit_code == 1 and "1 added, 0 removed, 0 edited, 1 unchanged." in changed.output
    assert json.loads((tmp_path / "out.json").read_text())["added"] == ["b.md"]
    assert runner.invoke(app, args).exit_code == 0  # --update made the new state the baseline
    missing = runner.invoke(app, ["drift", "kb", str(tmp_path / "nope"), "--baseline", str(tmp_path / "base.json")])
    assert missing.exit_code == 2 and "is not a folder" in missing.output


def test_json_naming_an_input_is_refused_and_the_input_is_kept(tmp_path):
    """``--json`` naming the baseline snapshot, a samples file or the SQLite store replaced it
    with the findings: the next run found no baseline, the questions or every stored run gone."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("A")
    baseline, questions, store = tmp_path / "base.json", tmp_path / "q.jsonl", tmp_path / "runs.db"
    assert runner.invoke(app, ["drift", "kb", str(kb), "--baseline", str(baseline)]).exit_code == 0
    questions.write_text('{"user_input": "how?"}\n')
    store.write_bytes(b"SQLite format 3\x00")
    kept = {path: path.read_bytes() for path in (baseline, questions, store)}
    for args, given in (
        (["kb", str(kb), "--baseline", str(baseline), "--update"], baseline),
        (["queries", str(questions), str(tmp_path / "other.jsonl")], questions),
        (["scores", "-m", "token_f1", "--store", str(store)], store),
    ):
        refused = runner.invoke(app, ["drift", *args, "--json", str(given)])
        assert refused.exit_code == 2 and f"--json {given} is the input" in refused.output, refused.output
    assert {path: path.read_bytes() for path in kept} == kept


@pytest.mark.parametrize("option", ["--permutations", "--limit"])
def test_a_huge_permutations_or_limit_is_a_usage_error(tmp_path, option):
    """A 29-digit --permutations relabelled for ever; such a --limit ended in an OverflowError
    from SQLite ("unexpected error")."""
    found = runner.invoke(app, ["drift", "queries", "--store", str(tmp_path / "runs.db"), option, "9" * 29])
    assert found.exit_code == 2 and f"Invalid value for '{option}'" in found.output, found.output
    assert not (tmp_path / "runs.db").exists()


def test_drift_queries_refuses_a_store_that_does_not_exist(tmp_path):
    """A misspelt --store made an empty SQLite database there and reported on nothing."""
    nowhere = tmp_path / "runs_typo.db"
    found = runner.invoke(app, ["drift", "queries", "--store", str(nowhere)])
    assert found.exit_code == 2 and f"--store {nowhere}: no such store" in found.output, found.output
    assert not nowhere.exists()


def test_the_json_report_kept_inside_the_knowledge_base_is_no_document(tmp_path):
    """Only the baseline was left out of the snapshot: a --json report written inside the folder
    was an added document on the next run, then an edited one on every run after (exit 1)."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.md").write_text("A")
    report = kb / "report.json"
    args = ["drift", "kb", str(kb), "--baseline", str(kb / "base.json"), "--json", str(report)]
    assert runner.invoke(app, args).exit_code == 0
    for _ in range(3):
        again = runner.invoke(app, [*args, "--update"])
        assert again.exit_code == 0 and "0 added, 0 removed, 0 edited, 1 unchanged." in again.output, again.output
    assert json.loads(report.read_text())["changed"] is False
