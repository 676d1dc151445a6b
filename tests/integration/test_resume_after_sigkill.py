"""A real `ragmeter eval` process killed with SIGKILL resumes to the uninterrupted result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
METRICS = "token_f1,rougeL,bleu,chrf,levenshtein_similarity,ndcg@3,embedding_groundedness,refusal_accuracy"
COPIES = 60  # 40 examples x 60 = 2,400 samples, 19,200 scores: long enough to kill midway


def _dataset(path: Path) -> Path:
    rows = [json.loads(line) for f in ("dev_platform_en.jsonl", "dev_platform_zh.jsonl") for line in (EXAMPLES / f).open(encoding="utf-8")]
    with path.open("w", encoding="utf-8") as out:
        for copy in range(COPIES):
            for row in rows:
                out.write(json.dumps({**row, "id": f"{row['id']}-{copy}"}, ensure_ascii=False) + "\n")
    return path


def _eval(data: Path, out: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "ragmeter", "eval", str(data), "--metrics", METRICS, "--out", str(out), "--no-progress"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _scores(out: Path) -> dict:
    table = {}
    for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for metric, score in record["scores"].items():
            table[(record["key"], metric)] = (score["value"], score["reason"], score["details"], score["failed"])
    return table


def _journal_lines(out: Path) -> int:
    journal = out / "journal.jsonl"
    return journal.read_bytes().count(b"\n") if journal.exists() else 0


def test_sigkill_then_rerun_equals_an_uninterrupted_run(tmp_path):
    data = _dataset(tmp_path / "data.jsonl")
    total = 40 * COPIES * len(METRICS.split(","))

    reference = _eval(data, tmp_path / "uninterrupted")
    _, stderr = reference.communicate(timeout=600)
    assert reference.returncode == 0, stderr.decode()

    killed_dir = tmp_path / "killed"
    victim = _eval(data, killed_dir)
    deadline = time.monotonic() + 300
    while _journal_lines(killed_dir) < total // 4:
        assert victim.poll() is None, "the run finished before it could be killed; make the data set bigger"
        assert time.monotonic() < deadline, "the run journalled too slowly"
        time.sleep(0.05)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    journalled = _journal_lines(killed_dir)
    assert total // 4 <= journalled < total, "killed midway"
    assert not (killed_dir / "results.jsonl").exists()

    resumed = _eval(data, killed_dir)
    _, stderr = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, stderr.decode()
    summary = json.loads((killed_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["run"]["pairs_resumed"] >= journalled - 1, "every complete journal line was reused"
    assert summary["run"]["pairs_resumed"] + summary["run"]["pairs_computed"] == total

    assert _scores(killed_dir) == _scores(tmp_path / "uninterrupted")
    uninterrupted = json.loads((tmp_path / "uninterrupted" / "summary.json").read_text(encoding="utf-8"))
    assert _statistics(summary) == _statistics(uninterrupted)


def _statistics(summary: dict) -> list[dict]:
    """Each metric's aggregate without its usage block: usage holds wall-clock seconds, which
    differ between any two runs; the scores and statistics must not."""
    return [{k: v for k, v in m["aggregate"].items() if k != "usage"} for m in summary["metrics"]]
