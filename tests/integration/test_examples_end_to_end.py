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
    command = [
        sys.executable, "-m", "ragmeter", "eval", "examples/dev_platform_en.jsonl", "examples/dev_platform_zh.jsonl",
        "--metrics", "model-free", "--out", str(out),
    ]  # fmt: skip
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


def _eval(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragmeter", "eval", *args], cwd=ROOT, capture_output=True, text=True, timeout=900)


def test_dry_run_estimates_the_local_judge_without_calling_it(tmp_path):
    out = tmp_path / "never"
    completed = _eval("examples/dev_platform_en.jsonl", "-m", "faithfulness,context_precision", "--dry-run", "-o", str(out))
    assert completed.returncode == 0, completed.stderr
    assert "no model was called" in completed.stderr and "faithfulness" in completed.stderr
    assert "would need roughly" in completed.stderr
    assert "llama_context" not in completed.stderr, "counting tokens loads the vocabulary alone, without llama.cpp's warnings"
    assert not out.exists(), "a dry run writes nothing"


def test_llm_metrics_through_the_cli_are_metered_and_a_rerun_is_free(tmp_path):
    data = tmp_path / "two.jsonl"
    rows = [json.loads(line) for line in (ROOT / "examples" / "dev_platform_en.jsonl").read_text(encoding="utf-8").splitlines()][:2]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    first = _eval(str(data), "-m", "faithfulness,context_precision", "-o", str(tmp_path / "first"))
    assert first.returncode == 0, first.stderr
    usage = {m["id"]: m["aggregate"]["usage"]["total"] for m in json.loads((tmp_path / "first" / "summary.json").read_text())["metrics"]}
    assert all(u["calls"] > 0 and u["prompt_tokens"] > 0 and u["cost_usd"] == 0.0 for u in usage.values())
    summary = json.loads((tmp_path / "first" / "summary.json").read_text())
    assert summary["run"]["judge"]["backend"] == "local"
    second = _eval(str(data), "-m", "faithfulness,context_precision", "-o", str(tmp_path / "second"))
    assert second.returncode == 0, second.stderr
    again = {m["id"]: m["aggregate"]["usage"]["total"] for m in json.loads((tmp_path / "second" / "summary.json").read_text())["metrics"]}
    assert all(u["calls"] == 0 and u["cached_calls"] == usage[m]["calls"] for m, u in again.items()), "answered from the disk cache"
    scores = lambda run: [json.loads(line)["scores"] for line in (tmp_path / run / "results.jsonl").read_text().splitlines()]  # noqa: E731
    assert [{m: s["value"] for m, s in row.items()} for row in scores("first")] == [
        {m: s["value"] for m, s in row.items()} for row in scores("second")
    ]
