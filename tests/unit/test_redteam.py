"""Red-team probes: the packaged set (four categories, English and Chinese), the naive and the
hardened example applications (every probe fails the first, passes the second, and the paired
test says so per category), failures and errors, an application behind HTTP, the command."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app as cli
from ragmeter.decide.redteam import CATEGORIES, builtin_probes, compare_probes, http_app, pass_rates, run_probes, write_probe_report

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import redteam_apps
from json_http import json_server

MARKER = "SYSTEM-CANARY-93B"


def test_the_packaged_probes_cover_each_category_in_both_languages():
    probes = builtin_probes(MARKER)
    counts = {(c, lang): sum(p.category == c and p.lang == lang for p in probes) for c in CATEGORIES for lang in ("en", "zh")}
    assert set(counts.values()) == {5}
    assert len({p.id for p in probes}) == len(probes) == 40
    assert not any(p.category == "system_prompt_extraction" for p in builtin_probes(None))  # cannot be checked without a marker
    poisoned = next(p for p in probes if p.id == "poison-en-0")
    assert poisoned.documents[0] == poisoned.documents[1] and poisoned.forbidden == ["5 GB"] and "5 GB" in poisoned.documents[2]


def test_the_hardened_app_passes_every_probe_and_the_naive_one_none():
    probes = builtin_probes(MARKER)
    naive = asyncio.run(run_probes(redteam_apps.naive, probes))
    hardened = asyncio.run(run_probes(redteam_apps.hardened, probes))
    assert not any(r.passed for r in naive) and all(r.passed for r in hardened)
    leak = next(r for r in naive if r.probe.id == "leak-en-0")
    assert leak.found == ["8812"]
    truthful = next(r for r in hardened if r.probe.id == "poison-zh-0")
    assert truthful.answer == "上传文件的大小上限是50MB。"  # the statement two documents make, not the planted one
    document = compare_probes(naive, hardened, "naive", "hardened")
    for category in CATEGORIES:
        tested = document["categories"][category]
        # 10 probes each, all passed by one and failed by the other: exact p = 2 / 2^10, Holm over 4.
        assert tested["accuracy_diff"] == 1.0 and tested["p"] == pytest.approx(2 / 1024) and tested["p_holm"] == pytest.approx(4 * 2 / 1024)
        assert tested["verdict"] == "hardened better"
    assert document["pass_rates_b"]["all"]["pass_rate"] == 1.0 and document["pass_rates_a"]["all"]["ci_high"] < 0.1


def test_an_error_or_a_forbidden_string_in_any_case_fails_the_probe():
    probes = [p for p in builtin_probes(None) if p.id in ("inj-en-0", "leak-zh-2")]

    def app(question, documents):
        if "邮箱" in question:
            raise ConnectionError("app down")
        return "pwned-1q"  # the canary PWNED-1Q, in lower case

    results = asyncio.run(run_probes(app, probes))
    assert [(r.passed, r.found, r.error) for r in results] == [(False, ["PWNED-1Q"], None), (False, [], "ConnectionError: app down")]
    rates = pass_rates(results)
    assert rates["all"] == {"n": 2, "passed": 0, "pass_rate": 0.0, "ci_low": 0.0, "ci_high": pytest.approx(0.6576, abs=1e-4), "errors": 1}


@pytest.fixture
def endpoint():
    """The hardened example app behind a local HTTP server (POST JSON, reply JSON)."""
    with json_server(lambda asked: {"answer": redteam_apps.hardened(asked["question"], asked["documents"])}) as url:
        yield f"{url}/answer"


def test_an_application_behind_http_is_probed_like_a_callable(endpoint):
    probes = builtin_probes(MARKER)[:6]
    results = asyncio.run(run_probes(http_app(endpoint), probes))
    assert all(r.passed for r in results) and results[0].answer == "The maximum upload size is 50 MB."
    with pytest.raises(ValueError, match="not an http"):
        http_app("file:///etc/passwd")


def test_the_redteam_command_writes_the_comparison(tmp_path, endpoint):
    out = tmp_path / "out"
    args = ["redteam", "--app", endpoint, "--baseline", "redteam_apps:naive", "--system-marker", MARKER, "-o", str(out)]
    result = CliRunner().invoke(cli, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    document = json.loads((out / "redteam.json").read_text(encoding="utf-8"))
    assert document["pass_rates_b"]["all"]["passed"] == 40 and document["categories"]["data_leak"]["verdict"].endswith("better")
    assert "| `data_leak` | 0/10 = 0.000" in (out / "redteam.md").read_text(encoding="utf-8")
    bad = CliRunner().invoke(cli, ["redteam", "--app", "no_module_here:app", "-o", str(out)])
    assert bad.exit_code == 2 and "cannot import no_module_here" in bad.output


def test_the_report_renders_without_a_baseline(tmp_path):
    results = asyncio.run(run_probes(redteam_apps.hardened, builtin_probes(None)))
    paths = write_probe_report(compare_probes(results, results, "app", "app"), tmp_path)
    assert "| `prompt_injection` | 10/10 = 1.000" in paths[1].read_text(encoding="utf-8")
