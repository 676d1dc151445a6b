"""The same run twice gives the same scores: `ragmeter eval` run twice without the disk cache
with the in-process local judge (identical), and against llama-cpp-python's server on the
packaged model (within 0.02: the server's prompt-prefix reuse moves P(yes) slightly);
and the verdict probe of ``verdict_mode: auto`` against the real model, run once and then
answered from the disk cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from llama_server import MODEL

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
#: How far a value or P(yes) may move between two runs through the server (see the test).
SERVER_TOLERANCE = 0.02

# Written for this test: each response has a claim its context supports and one it does not.
SAMPLES = [
    {
        "id": "museum",
        "user_input": "When is the museum open?",
        "retrieved_contexts": ["The city museum opens at 10:00 and closes at 18:00, Tuesday to Sunday. It is closed on Mondays."],
        "response": "The museum is closed on Mondays. It opens at 8:00 on weekdays.",
    },
    {
        "id": "ferry",
        "user_input": "How often does the ferry run?",
        "retrieved_contexts": ["The ferry to the island leaves every 40 minutes from pier 2. The crossing takes 25 minutes."],
        "response": "The ferry leaves from pier 2. The crossing takes two hours.",
    },
    {
        "id": "library-zh",
        "user_input": "图书馆每次最多可以借几本书？",
        "retrieved_contexts": ["市图书馆的读者每次最多可以借十本书，借期为三周。"],
        "response": "每次最多可以借十本书。借期为两个月。",
    },
]


def write_samples(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(s, ensure_ascii=False) for s in SAMPLES) + "\n", encoding="utf-8")
    return path


def evaluate(data: Path, out: Path, *options: str, env: dict[str, str] | None = None) -> tuple[list[dict], dict]:
    """Run `ragmeter eval` on ``data`` (faithfulness); its results and run.json."""
    command = [sys.executable, "-m", "ragmeter", "eval", str(data), "-m", "faithfulness", "--out", str(out), "--no-progress", *options]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=2400, env={**os.environ, **(env or {})})
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    results = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    return sorted(results, key=lambda r: r["key"]), json.loads((out / "run.json").read_text(encoding="utf-8"))["run"]


def scores(results: list[dict]) -> dict[str, tuple]:
    """Each sample's faithfulness and its claims' P(yes), as the run wrote them."""
    found = {}
    for row in results:
        score = row["scores"]["faithfulness"]
        claims = tuple((c["claim"], c["p_yes"]) for c in (score.get("details") or {}).get("claims") or [])
        found[row["key"]] = (score["value"], claims)
    return found


def test_two_runs_against_the_server_without_the_cache_agree_closely(llama_server, tmp_path):
    data = write_samples(tmp_path / "samples.jsonl")
    judge = ["--judge-base-url", f"{llama_server}/v1", "--judge-model", MODEL, "--verdict-mode", "single", "--no-cache"]
    first, run_one = evaluate(data, tmp_path / "one", *judge)
    second, run_two = evaluate(data, tmp_path / "two", *judge)
    # The server reuses whatever prompt prefix it holds from the request before, so the same
    # prompt is not always evaluated in the same batches: a P(yes) may move by about 0.01 (seen:
    # 0.3996 against 0.3999; a faithfulness of 0.329 against 0.334). The same claims, nearly the
    # same values, the same order of claims (asserted below).
    one, two = scores(first), scores(second)
    assert one.keys() == two.keys()
    for key, (value, claims) in one.items():
        other_value, other_claims = two[key]
        assert value is not None and claims and value == pytest.approx(other_value, abs=SERVER_TOLERANCE)
        assert [c for c, _ in claims] == [c for c, _ in other_claims]
        for (_, p), (_, q) in zip(claims, other_claims, strict=True):
            assert p == pytest.approx(q, abs=SERVER_TOLERANCE)
    # Every verdict was asked again the second time: nothing came from a cache.
    assert run_two["judge"]["verdict_methods"] == run_one["judge"]["verdict_methods"] == {"logprobs": 6}
    # In both runs, the supported claim of each sample is ranked above the unsupported one.
    for _, ((_, p_supported), (_, p_unsupported)) in [*one.values(), *two.values()]:
        assert p_supported > p_unsupported


def test_two_runs_of_the_local_judge_without_the_cache_give_the_same_scores(tmp_path):
    data = write_samples(tmp_path / "samples.jsonl")
    config = tmp_path / "local.yaml"
    config.write_text("judge:\n  backend: local\n  threads: 1\n", encoding="utf-8")  # one core: the machine may be shared
    first, run_one = evaluate(data, tmp_path / "one", "--config", str(config), "--no-cache")
    second, _ = evaluate(data, tmp_path / "two", "--config", str(config), "--no-cache")
    assert scores(first) == scores(second)
    assert run_one["judge"]["backend"] == "local"
    assert all(value is not None for value, _ in scores(first).values())


def test_auto_mode_probes_the_real_model_once_and_says_which_mode_it_used(llama_server, tmp_path):
    data = write_samples(tmp_path / "samples.jsonl")
    cache = {"RAGMETER_CACHE_DIR": str(tmp_path / "cache")}
    # The probe's batch requests waited over 60 s (the default timeout) on a loaded 2-core
    # machine, and five timeouts in a row left batch mode untried: a slow server must not fail this.
    judge = ["--judge-base-url", f"{llama_server}/v1", "--judge-model", MODEL, "--judge-timeout", "600"]
    first, run_one = evaluate(data, tmp_path / "one", *judge, env=cache)
    described = run_one["judge"]
    print(json.dumps(described["probe"], indent=1, ensure_ascii=False))
    assert described["verdict_mode"] == "auto" and described["verdict_mode_used"] in ("batch", "single")
    probe = described["probe"]
    assert probe["chosen"] == described["verdict_mode_used"] and probe["usage"]["calls"] > 0
    tried = probe["tried"]
    assert [t["mode"] for t in tried] == ["batch", "single"][: len(tried)]
    assert all(t["n"] == 24 and t["error"] is None and t["method"] == "logprobs" for t in tried)  # this server gives log-probabilities
    assert tried[-1]["passed"] or probe["warning"]  # a mode passed, or the run says loudly that none did
    if probe["warning"]:
        assert probe["warning"] in described["warnings"]
        assert "> **Warning**" in (tmp_path / "one" / "report.md").read_text(encoding="utf-8")

    # Again, with the same cache: no request at all (probe included), the same scores, the same mode.
    second, run_two = evaluate(data, tmp_path / "two", *judge, env=cache)
    assert scores(first) == scores(second)
    assert run_two["judge"]["probe"] == probe and run_two["judge"]["verdict_mode_used"] == described["verdict_mode_used"]
    summary = json.loads((tmp_path / "two" / "summary.json").read_text(encoding="utf-8"))
    usage = next(m["aggregate"]["usage"]["total"] for m in summary["metrics"] if m["id"] == "faithfulness")
    assert usage["calls"] == 0 and usage["cached_calls"] > 0
