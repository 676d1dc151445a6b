"""The run journal on its own: every record reaches the operating system as it is written,
a torn last line never swallows the record appended after it, and ``--fresh`` reuses nothing.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from ragmeter import Metric, Sample, Score, evaluate
from ragmeter.cli import app
from ragmeter.judges.metering import Usage
from ragmeter.run.journal import JOURNAL_FILE, Journal, make_record


def record(key: str, value: float = 0.5, metric: str = "m") -> dict:
    return make_record(key, f"fp-{key}", metric, "cfg", Score(value, "why"), 0.25, Usage(calls=1))


def test_a_record_reaches_the_file_before_the_journal_is_closed(tmp_path):
    journal = Journal(tmp_path)
    try:
        journal.append(record("s0"))
        # Another handle (as a resumed run after a kill would) sees the whole line now,
        # not when the journal's buffer happens to fill or the journal is closed.
        lines = (tmp_path / JOURNAL_FILE).read_text(encoding="utf-8").splitlines()
        assert [json.loads(line)["sample"] for line in lines] == ["s0"]
        journal.append(record("s1"))
        assert Journal(tmp_path).read().keys() == {("s0", "m"), ("s1", "m")}
    finally:
        journal.close()


def test_a_record_appended_after_a_torn_line_is_read_back(tmp_path):
    journal = Journal(tmp_path)
    journal.append(record("s0"))
    journal.append(record("s1"))
    journal.close()
    path = tmp_path / JOURNAL_FILE
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 20])  # a kill in the middle of writing s1's line
    assert set(Journal(tmp_path).read()) == {("s0", "m")}, "the torn record is ignored"

    resumed = Journal(tmp_path)
    resumed.append(record("s1", 0.75))
    resumed.append(record("s2"))
    resumed.close()
    records = Journal(tmp_path).read()
    assert set(records) == {("s0", "m"), ("s1", "m"), ("s2", "m")}
    assert records["s1", "m"]["score"]["value"] == 0.75
    # The torn text stays on a line of its own: the first record after it starts a new line.
    lines = path.read_text(encoding="utf-8").split("\n")
    assert json.loads(lines[2])["sample"] == "s1" and lines[-1] == ""


def test_appending_to_an_intact_journal_adds_no_blank_line(tmp_path):
    for key in ("s0", "s1"):
        journal = Journal(tmp_path)
        journal.append(record(key))
        journal.close()
    assert (tmp_path / JOURNAL_FILE).read_text(encoding="utf-8").count("\n") == 2


def test_a_later_record_replaces_an_earlier_one_and_is_reused_only_when_unchanged(tmp_path):
    journal = Journal(tmp_path)
    journal.append(record("s0", 0.25))
    journal.append(record("s0", 0.5))
    journal.append(make_record("s1", "fp-s1", "m", "cfg", Score.unscored("error", failed=True), 0.1, Usage()))
    journal.close()
    records = Journal(tmp_path).read()
    reused = journal.reusable(records, "s0", "fp-s0", "m", "cfg")
    assert reused is not None
    score, seconds, usage = reused
    assert (score.value, score.explanation, seconds, usage.calls) == (0.5, "why", 0.25, 1)
    assert journal.reusable(records, "s0", "other content", "m", "cfg") is None
    assert journal.reusable(records, "s0", "fp-s0", "m", "other settings") is None
    assert journal.reusable(records, "s1", "fp-s1", "m", "cfg") is None, "a failed score is computed again"
    assert journal.reusable(records, "s9", "fp-s9", "m", "cfg") is None


def test_lines_that_are_no_record_are_passed_over_and_their_pairs_computed_again(tmp_path):
    # A line nested past the parser's depth raised RecursionError, and a score or usage that is
    # no object raised AttributeError: either ended the resumed run.
    bad_score, bad_usage = record("s1"), record("s2")
    bad_score["score"], bad_usage["usage"] = "NaN", [1]
    lines = ["[" * 100_000, json.dumps(["s0", "m"]), json.dumps(bad_score), json.dumps(bad_usage), json.dumps(record("s3"))]
    (tmp_path / JOURNAL_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    journal = Journal(tmp_path)
    records = journal.read()
    assert set(records) == {("s1", "m"), ("s2", "m"), ("s3", "m")}
    assert [journal.reusable(records, key, f"fp-{key}", "m", "cfg") is None for key in ("s1", "s2", "s3")] == [True, True, False]


def test_a_torn_line_of_a_single_byte_is_closed_too(tmp_path):
    (tmp_path / JOURNAL_FILE).write_bytes(b"{")
    journal = Journal(tmp_path)
    journal.append(record("s0"))
    journal.close()
    assert set(Journal(tmp_path).read()) == {("s0", "m")}


def test_the_journal_creates_its_directory_and_an_empty_one_reads_as_nothing(tmp_path):
    directory = tmp_path / "runs" / "today"
    journal = Journal(directory)
    assert directory.is_dir() and journal.read() == {}
    journal.append(record("s0"))
    handle = journal._file
    journal.close()
    assert handle is not None and handle.closed, "close() closes the file"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((directory / JOURNAL_FILE).stat().st_mode) == 0o644 & ~umask


def test_a_link_planted_at_the_journal_is_never_read_or_written_through(tmp_path):
    target = tmp_path / "elsewhere.jsonl"
    target.write_text(json.dumps(record("planted")) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    run.mkdir()
    (run / JOURNAL_FILE).symlink_to(target)
    with pytest.raises(OSError, match="ragmeter does not write through links"):
        Journal(run).read()
    with pytest.raises(OSError, match="ragmeter does not write through links"):
        Journal(run).append(record("s0"))
    assert target.read_text(encoding="utf-8").count("\n") == 1, "nothing written through the link"


def test_a_record_without_seconds_or_usage_is_reused_with_none(tmp_path):
    bare = {"sample": "s0", "fingerprint": "fp", "metric": "m", "config": "cfg", "score": Score(0.5).to_dict()}
    journal = Journal(tmp_path)
    journal.append(bare)
    journal.close()
    reused = journal.reusable(Journal(tmp_path).read(), "s0", "fp", "m", "cfg")
    assert reused is not None
    assert reused[1] == 0.0 and reused[2] == Usage()


@dataclass(frozen=True)
class Counting(Metric):
    """Always 1.0; appends each sample id it scores to ``calls``; raises KeyboardInterrupt
    (a Ctrl-C) on the sample named ``stop_at``."""

    name = "counting_journal"
    family = "lexical"
    required = ("response",)
    calls: list = None  # type: ignore[assignment]
    stop_at: str = ""

    def config(self):
        return {}  # where it stops is no setting of the score: runs that differ in it share scores

    async def score(self, sample, judges):
        if sample.id == self.stop_at:
            raise KeyboardInterrupt
        self.calls.append(sample.id)
        return Score(1.0)


def samples(n: int) -> list[Sample]:
    return [Sample(id=f"s{i}", user_input=f"question {i}", response=f"answer {i}") for i in range(n)]


def test_a_fresh_run_forgets_an_interrupted_run_even_when_it_is_interrupted_too(tmp_path):
    calls: list = []
    with pytest.raises(KeyboardInterrupt):
        evaluate(samples(6), [Counting(calls=calls, stop_at="s3")], out_dir=tmp_path, progress=False, concurrency=1)
    assert calls == ["s0", "s1", "s2"]
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        evaluate(samples(6), [Counting(calls=calls, stop_at="s1")], out_dir=tmp_path, progress=False, concurrency=1, resume=False)
    assert calls == ["s0"], "a fresh run computes everything again"
    calls.clear()
    result = evaluate(samples(6), [Counting(calls=calls)], out_dir=tmp_path, progress=False, concurrency=1)
    assert calls == ["s1", "s2", "s3", "s4", "s5"], "only the fresh run's own score is resumed"
    assert result.run["pairs_resumed"] == 1


def test_a_fresh_run_forgets_a_finished_run_even_when_it_is_interrupted(tmp_path):
    calls: list = []
    evaluate(samples(3), [Counting(calls=calls)], out_dir=tmp_path, progress=False, concurrency=1)
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        evaluate(samples(3), [Counting(calls=calls, stop_at="s1")], out_dir=tmp_path, progress=False, concurrency=1, resume=False)
    calls.clear()
    result = evaluate(samples(3), [Counting(calls=calls)], out_dir=tmp_path, progress=False, concurrency=1)
    assert calls == ["s1", "s2"] and result.run["pairs_resumed"] == 1


def test_eval_fresh_resumes_nothing_and_a_plain_rerun_resumes_everything(tmp_path):
    rows = [{"id": f"q{i}", "response": f"answer {i}", "reference": f"answer {i % 2}"} for i in range(4)]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "run"
    runner = CliRunner()

    def eval_run(*extra: str) -> dict:
        result = runner.invoke(app, ["eval", str(data), "-m", "token_f1,exact_match", "-o", str(out), *extra])
        assert result.exit_code == 0, result.output
        return json.loads((out / "run.json").read_text(encoding="utf-8"))["run"]

    first = eval_run()
    assert (first["pairs_computed"], first["pairs_resumed"]) == (8, 0)
    again = eval_run()
    assert (again["pairs_computed"], again["pairs_resumed"]) == (0, 8)
    fresh = eval_run("--fresh")
    assert (fresh["pairs_computed"], fresh["pairs_resumed"]) == (8, 0)
