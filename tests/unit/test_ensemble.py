"""Ensembles of judges (stand-in members), prompt variants, and the ensemble settings of the
config file."""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path

import pytest
import yaml
from test_llm_double import ScriptedJudge, by_item, run

from ragmeter.judges.base import JudgeError, Verdict
from ragmeter.judges.cache import CachingJudge, DiskCache
from ragmeter.judges.config import JudgeConfig
from ragmeter.judges.dry_run import DryRunJudge, stand_in
from ragmeter.judges.ensemble import EnsembleJudge
from ragmeter.judges.metering import PriceTable
from ragmeter.judges.openai_compat import OpenAIJudge
from ragmeter.judges.prompts import PromptBook
from ragmeter.report.judge import judge_line
from ragmeter.run.config import load_config

CLAIMS = ["The shop opens at nine.", "The shop sells bicycles.", "The shop closes on Sundays."]
PREMISE = {"premise": ["The shop opens at nine and closes on Sundays."]}


def member(table, name):
    judge = ScriptedJudge(rule=by_item(table))
    judge.model = name
    return judge


def ensemble(combine="mean", *tables):
    tables = tables or ({CLAIMS[0]: 0.9, CLAIMS[1]: 0.2, CLAIMS[2]: 0.6}, {CLAIMS[0]: 0.7, CLAIMS[1]: 0.4, CLAIMS[2]: 0.3})
    return EnsembleJudge([member(t, f"m{i}") for i, t in enumerate(tables, 1)], combine)


def verdicts(judge, items=CLAIMS):
    return asyncio.run(judge.verdicts("supported", PREMISE, items, "en"))


def test_mean_combines_p_yes_and_keeps_each_member_and_the_spread():
    result = verdicts(ensemble("mean"))
    assert [v.p_yes for v in result] == pytest.approx([0.8, 0.3, 0.45])
    assert [v.members for v in result] == [(0.9, 0.7), (0.2, 0.4), (0.6, 0.3)]
    assert [v.spread for v in result] == pytest.approx([0.1, 0.1, 0.15])
    assert result[0].method == "ensemble mean of logits"


def test_majority_counts_the_members_that_say_yes():
    tables = (
        {CLAIMS[0]: 0.9, CLAIMS[1]: 0.2, CLAIMS[2]: 0.6},
        {CLAIMS[0]: 0.7, CLAIMS[1]: 0.4, CLAIMS[2]: 0.3},
        {CLAIMS[0]: 0.1, CLAIMS[1]: 0.1, CLAIMS[2]: 0.8},
    )
    result = verdicts(ensemble("majority", *tables))
    assert [v.p_yes for v in result] == pytest.approx([2 / 3, 0.0, 2 / 3])
    assert result[2].spread == pytest.approx(round(statistics.pstdev([0.6, 0.3, 0.8]), 4))
    # Two members that disagree: a tie is 0.5, yes at the usual 0.5 line.
    tie = verdicts(ensemble("majority", {CLAIMS[0]: 0.9}, {CLAIMS[0]: 0.1}), items=CLAIMS[:1])
    assert tie[0].p_yes == 0.5


def test_the_ensemble_reports_how_far_its_members_disagreed():
    judge = ensemble("mean")
    verdicts(judge)
    spread = judge.describe()["p_yes_spread"]["supported"]
    assert spread == {"n": 3, "mean": pytest.approx((0.1 + 0.1 + 0.15) / 3, abs=1e-4), "max": 0.15, "share_split": round(1 / 3, 4)}
    described = judge.describe()
    assert described["backend"] == "ensemble" and described["combine"] == "mean" and len(described["members"]) == 2
    assert "ensemble (mean of 2 members)" in judge_line(described)


def test_faithfulness_details_carry_the_members_and_the_spread():
    score = run(
        "faithfulness",
        ensemble("mean"),
        user_input="When does the shop open?",
        retrieved_contexts=PREMISE["premise"],
        response=" ".join(CLAIMS),
    )
    claims = score.details["claims"]
    assert [c["p_yes_members"] for c in claims] == [[0.9, 0.7], [0.2, 0.4], [0.6, 0.3]]
    assert [c["p_yes_spread"] for c in claims] == pytest.approx([0.1, 0.1, 0.15])
    assert score.details["supported_share"] == pytest.approx(1 / 3, abs=1e-4)  # only 0.8 is supported


def test_a_failing_member_fails_the_call_and_is_named():
    good = member({CLAIMS[0]: 0.9}, "good")
    bad = ScriptedJudge(fail=lambda *a: JudgeError("endpoint down"))
    bad.model = "flaky"
    with pytest.raises(JudgeError, match=r"ensemble member 2 \(flaky\): endpoint down"):
        verdicts(EnsembleJudge([good, bad]), items=CLAIMS[:1])


def test_scales_combine_and_generation_comes_from_the_first_member():
    a = ScriptedJudge(scaled={"1": 0.0, "2": 0.2, "3": 0.8}, generated={"questions": {"questions": ["a?"]}})
    b = ScriptedJudge(scaled={"1": 0.6, "2": 0.4, "3": 0.0}, generated={"questions": {"questions": ["b?"]}})
    c = ScriptedJudge(scaled={"1": 0.1, "2": 0.1, "3": 0.8})
    fields = {"rubric": "r", "question": "q", "reference": "x", "response": "y"}
    mean = asyncio.run(EnsembleJudge([a, b]).scale("rubric", fields, ["1", "2", "3"], "en"))
    assert mean == pytest.approx({"1": 0.3, "2": 0.3, "3": 0.4})
    votes = asyncio.run(EnsembleJudge([a, b, c], "majority").scale("rubric", fields, ["1", "2", "3"], "en"))
    assert votes == pytest.approx({"1": 1 / 3, "2": 0.0, "3": 2 / 3})
    generated = asyncio.run(EnsembleJudge([a, b]).generate("questions", {"response": "y"}, {"type": "object"}, "en"))
    assert generated == {"questions": ["a?"]}


def test_members_are_cached_one_by_one(tmp_path):
    cache = DiskCache(tmp_path / "cache.sqlite")
    first = member({CLAIMS[0]: 0.9}, "m1")
    second = member({CLAIMS[0]: 0.1}, "m2")
    verdicts(EnsembleJudge([CachingJudge(first, cache), CachingJudge(second, cache)]), items=CLAIMS[:1])
    # A third member added later: the first two answer from the cache.
    third = member({CLAIMS[0]: 0.5}, "m3")
    result = verdicts(
        EnsembleJudge([CachingJudge(first, cache), CachingJudge(second, cache), CachingJudge(third, cache)]), items=CLAIMS[:1]
    )
    assert (first.count("verdicts"), second.count("verdicts"), third.count("verdicts")) == (1, 1, 1)
    assert result[0].members == (0.9, 0.1, 0.5)


def test_settle_reaches_every_member_with_the_memo():
    seen = []

    class Settling(ScriptedJudge):
        async def settle(self, memo=None):
            seen.append((self.model, memo))

    members = [Settling(), Settling()]
    members[0].model, members[1].model = "a", "b"
    asyncio.run(EnsembleJudge(members).settle("memo"))
    assert seen == [("a", "memo"), ("b", "memo")]


def test_rejects_an_empty_ensemble_and_unknown_combinations():
    with pytest.raises(ValueError, match="at least one member"):
        EnsembleJudge([])
    with pytest.raises(ValueError, match="combine must be one of mean, majority"):
        EnsembleJudge([ScriptedJudge()], "median")


def test_verdict_members_survive_the_disk_cache_round_trip():
    verdict = Verdict(0.5, members=[0.2, 0.8], spread=0.3)
    assert verdict.members == (0.2, 0.8)
    assert Verdict(**json.loads(json.dumps(verdict.__dict__))) == verdict


# ---- prompt variants ----------------------------------------------------------------------


STRICT = {
    "tasks": {
        "supported": {
            "system": "You are a strict checker. Answer Yes only when every detail is stated.",
            "shared": ["premise"],
            "item": "statement",
            "asks": "Is every detail of the statement stated in the premise?",
        }
    }
}


def write_yaml(path: Path, data) -> Path:
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def test_a_prompt_variant_replaces_its_tasks_and_keeps_the_others(tmp_path):
    variant = write_yaml(tmp_path / "strict.yaml", STRICT)
    book = PromptBook("en", variant)
    prompt = book.verdict("supported", PREMISE)
    assert prompt.system.startswith("You are a strict checker.") and "Is every detail" in prompt.asks
    assert prompt.examples == ()  # the variant gives no examples
    assert book.task("useful") == PromptBook("en").task("useful")
    assert "strict checker" in book.batch_messages("supported", PREMISE, CLAIMS)[0]["content"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (["not", "a", "mapping"], "a prompt file is a mapping"),
        ({"taks": {}}, "unknown prompt entries taks"),
        ({"tasks": {"supported": {"system": "s", "shared": ["premise"]}}}, r"tasks.supported: missing asks \(or ask\)"),
        ({"tasks": {"supported": {"system": "s", "shared": "premise", "item": "statement", "asks": "?"}}}, "shared: expected a list"),
        ({"tasks": {"supported": {"system": "s", "shared": ["premise"], "asks": "?"}}}, "needs item"),
        ({"reask": {"json": "x"}}, "reask: expected a mapping with json, yes_no and option"),
    ],
)
def test_a_broken_prompt_variant_is_named_with_what_is_wrong(tmp_path, data, message):
    variant = write_yaml(tmp_path / "broken.yaml", data)
    with pytest.raises(ValueError, match=message) as caught:
        PromptBook("en", variant)
    assert str(variant) in str(caught.value)


def test_an_unreadable_prompt_file_is_named(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("tasks: [unclosed", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.yaml: cannot read the prompt file"):
        PromptBook("en", path)


def test_a_prompt_variant_changes_the_judge_identity(tmp_path):
    variant = write_yaml(tmp_path / "strict.yaml", STRICT)
    plain = OpenAIJudge("http://127.0.0.1:9/v1", "m")
    varied = OpenAIJudge("http://127.0.0.1:9/v1", "m", prompts={"en": variant})
    before = varied.identity()
    assert "prompts" not in plain.identity() and set(before["prompts"]) == {"en"}
    write_yaml(variant, {"tasks": {"supported": {**STRICT["tasks"]["supported"], "asks": "Stated?"}}})
    assert varied.identity() != before  # an edited file is another judge: cached answers are not reused
    assert varied.describe()["prompt_files"] == {"en": str(variant)}
    asyncio.run(plain.aclose())
    asyncio.run(varied.aclose())


# ---- configuration ------------------------------------------------------------------------


def test_ensemble_settings_build_endpoint_members_that_inherit_the_section(tmp_path):
    variant = write_yaml(tmp_path / "strict.yaml", STRICT)
    config = tmp_path / "ragmeter.yaml"
    section = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "qwen",
        "timeout": 30,
        "ensemble": [{}, {"prompts": "strict.yaml"}, {"model": "other", "verdict_mode": "single"}],
        "combine": "majority",
        "cache": False,
    }
    write_yaml(config, {"judge": section})
    settings = JudgeConfig().updated(**load_config(config).judge)
    judge = settings.build()
    assert isinstance(judge, EnsembleJudge) and judge.combine == "majority"
    first, second, third = judge.members
    assert all(isinstance(m, OpenAIJudge) for m in judge.members)
    assert (first.model, first.verdict_mode, first.transport.timeout, first.prompts) == ("qwen", "auto", 30.0, {})
    assert second.prompts == {"en": str(variant)}  # relative to the config file
    assert (third.model, third.verdict_mode) == ("other", "single")
    asyncio.run(judge.aclose())


def test_ensemble_members_get_their_own_cache(tmp_path):
    settings = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", ensemble=[{}, {"model": "n"}], cache_dir=str(tmp_path))
    judge = settings.build()
    assert all(isinstance(m, CachingJudge) for m in judge.members)
    asyncio.run(judge.aclose())


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"ensemble": [{"cache": False}]}, r"ensemble\[0\]: setting\(s\) cache cannot differ between members"),
        ({"ensemble": [{"timeout": -1}]}, r"judge.ensemble\[0\].timeout"),
        ({"ensemble": []}, "ensemble"),
        ({"combine": "median"}, "combine"),
        ({"prompts": "missing.yaml"}, "no prompt file"),
        ({"ensemble": [{}, {"prompts": {"en": "missing.yaml"}}]}, r"judge.ensemble\[1\].prompts: no prompt file"),
    ],
)
def test_bad_ensemble_settings_are_named(tmp_path, section, message):
    config = write_yaml(tmp_path / "ragmeter.yaml", {"judge": {"base_url": "http://127.0.0.1:9/v1", "model": "m", **section}})
    with pytest.raises(ValueError, match=message) as caught:
        load_config(config)
    assert str(config) in str(caught.value)


def test_a_local_judge_cannot_be_a_member():
    settings = JudgeConfig(ensemble=[{}, {"base_url": "http://127.0.0.1:9/v1", "model": "m"}], cache=False)
    with pytest.raises(JudgeError, match=r"judge.ensemble\[0\] is not an endpoint"):
        settings.build()


def test_a_prompts_folder_gives_its_languages(tmp_path):
    write_yaml(tmp_path / "zh.yaml", {"tasks": {}})
    judge = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", prompts=str(tmp_path), cache=False).build()
    assert isinstance(judge, OpenAIJudge) and judge.prompts == {"zh": str(tmp_path / "zh.yaml")}
    asyncio.run(judge.aclose())
    (tmp_path / "empty").mkdir()
    with pytest.raises(JudgeError, match=r"holds neither en\.yaml nor zh\.yaml"):
        JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", prompts=str(tmp_path / "empty"), cache=False).build()


def test_endpoints_default_to_auto_verdicts():
    assert JudgeConfig().verdict_mode == "auto"
    judge = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", cache=False).build()
    assert isinstance(judge, OpenAIJudge) and judge.verdict_mode == "auto"
    asyncio.run(judge.aclose())


def test_the_dry_run_estimates_every_member():
    members = [
        OpenAIJudge("http://127.0.0.1:9/v1", "gpt-4o-mini", verdict_mode="batch"),
        OpenAIJudge("http://127.0.0.1:9/v1", "m", verdict_mode="single"),
    ]
    dry = stand_in(EnsembleJudge(members), "auto", PriceTable())
    assert isinstance(dry, EnsembleJudge)
    first, second = dry.members
    assert isinstance(first, DryRunJudge) and not first.per_item and first.price is not None
    assert isinstance(second, DryRunJudge) and second.per_item and second.price is None
    for judge in members:
        asyncio.run(judge.aclose())
