"""The README's main job on the bundled examples, through the installed `ragmeter` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_examples_evaluate_and_the_diagnosis_finds_the_planted_problems(tmp_path):
    out = tmp_path / "example"
    command = [sys.executable, "-m", "ragmeter", "eval", "examples/dev_platform_en.jsonl", "examples/dev_platform_zh.jsonl", "--out", str(out)]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["run"]["n_samples"] == 40
    aggregates = {m["id"]: m["aggregate"] for m in summary["metrics"]}
    assert all(a["n_failed"] == 0 for a in aggregates.values())
    # Chinese samples score like English ones on lexical overlap: segmentation works.
    results = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    zh_rouge = [r["scores"]["rouge1"]["value"] for r in results if r["key"].startswith("zh")]
    assert sum(zh_rouge) / len(zh_rouge) > 0.3
    # The planted parametric answers (right answer, retrieval missed) are diagnosed as such.
    categories = {r["key"]: r["sample"]["metadata"]["category"] for r in results}
    patterns = {p["name"]: p["samples"] for p in summary["diagnosis"]["patterns"]}
    diagnosed = patterns.get("parametric_answer", [])
    assert diagnosed and all(categories[k] == "parametric" for k in diagnosed)
    answered = patterns.get("answered_unanswerable", [])
    assert answered and all(categories[k] in ("unanswerable_hallucinated",) for k in answered)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<script>alert" not in html, "the injected script in the examples is escaped"
