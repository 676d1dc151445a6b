"""An ensemble of two prompt variants of one real server (llama-cpp-python, packaged model),
configured in a config file and run by `ragmeter eval`: each claim's P(yes) is the members'
mean, and the members' P(yes) and their spread are in the details and the run's description."""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from llama_server import MODEL, N_CTX

from ragmeter.judges.openai_compat import OpenAIJudge

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

# Written for this test.
SAMPLES = [
    {
        "id": "bakery",
        "user_input": "When does the bakery open?",
        "retrieved_contexts": ["The bakery opens at 7:00 on weekdays and at 8:00 on Saturdays. It is closed on Sundays."],
        "response": "The bakery opens at 7:00 on weekdays. It opens on Sundays at 9:00.",
    },
    {
        "id": "pool",
        "user_input": "How long is the pool?",
        "retrieved_contexts": ["The town's indoor pool is 25 metres long and has six lanes."],
        "response": "The pool is 25 metres long.",
    },
]

# A second prompt for claim support: stricter wording, no examples.
STRICT = {
    "tasks": {
        "supported": {
            "system": (
                "You check facts with great care. Say Yes only when the premise states every detail of the statement "
                "word for word or in plain other words; when anything in the statement is missing from the premise or "
                "differs from it, say No."
            ),
            "shared": ["premise"],
            "item": "statement",
            "asks": "Does the premise state everything the statement says?",
        }
    }
}


def test_an_ensemble_of_two_prompt_variants_keeps_each_members_p_yes_and_their_spread(llama_server, tmp_path):
    (tmp_path / "strict.yaml").write_text(yaml.safe_dump(STRICT), encoding="utf-8")
    config = {
        "judge": {
            "base_url": f"{llama_server}/v1",
            "model": MODEL,
            "context_window": N_CTX,
            "verdict_mode": "single",
            "ensemble": [{}, {"prompts": "strict.yaml"}],
            "combine": "mean",
        }
    }
    (tmp_path / "ragmeter.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    data = tmp_path / "samples.jsonl"
    data.write_text("\n".join(json.dumps(s) for s in SAMPLES) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "ragmeter", "eval", str(data), "-m", "faithfulness", "--config", str(tmp_path / "ragmeter.yaml"),
        "--out", str(out), "--no-cache", "--no-progress",
    ]  # fmt: skip
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]

    results = {r["key"]: r for r in map(json.loads, (out / "results.jsonl").read_text(encoding="utf-8").splitlines())}
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))["run"]
    judge = run["judge"]
    assert judge["backend"] == "ensemble" and judge["combine"] == "mean" and len(judge["members"]) == 2
    assert "prompts" not in judge["members"][0] and set(judge["members"][1]["prompts"]) == {"en"}
    assert judge["p_yes_spread"]["supported"]["n"] == 3

    # Each member alone, on the same claims against the same premise, gives the P(yes) the ensemble kept.
    claims = {key: row["scores"]["faithfulness"]["details"]["claims"] for key, row in results.items()}
    alone = asyncio.run(_members_alone(f"{llama_server}/v1", tmp_path / "strict.yaml", claims))
    spreads = []
    for key, entries in claims.items():
        for entry, plain, strict in zip(entries, *alone[key], strict=True):
            # Asked again, the server may answer a P(yes) about 0.01 apart (its prompt-prefix
            # reuse; see test_repeatability.py).
            assert entry["p_yes_members"] == pytest.approx([plain, strict], abs=0.02)
            assert entry["p_yes"] == pytest.approx(statistics.fmean(entry["p_yes_members"]), abs=1e-3)
            assert entry["p_yes_spread"] == pytest.approx(statistics.pstdev(entry["p_yes_members"]), abs=1e-3)
            spreads.append(entry["p_yes_spread"])
    assert max(spreads) > 0  # the two prompts do not answer alike
    report = (out / "report.md").read_text(encoding="utf-8").replace("\\", "").replace("`", "")  # escapes and code spans off
    assert "ensemble (mean of 2 members)" in report and "Mean spread" in report


async def _members_alone(url: str, strict: Path, claims: dict[str, list[dict]]) -> dict[str, tuple[list[float], list[float]]]:
    plain = OpenAIJudge(url, MODEL, verdict_mode="single", context_window=N_CTX, concurrency=1)
    varied = OpenAIJudge(url, MODEL, verdict_mode="single", context_window=N_CTX, concurrency=1, prompts={"en": strict})
    found = {}
    try:
        for sample in SAMPLES:
            texts = [c["claim"] for c in claims[sample["id"]]]
            shared = {"premise": sample["retrieved_contexts"]}
            a = await plain.verdicts("supported", shared, texts, "en")
            b = await varied.verdicts("supported", shared, texts, "en")
            found[sample["id"]] = ([v.p_yes for v in a], [v.p_yes for v in b])
    finally:
        await plain.aclose()
        await varied.aclose()
    return found
