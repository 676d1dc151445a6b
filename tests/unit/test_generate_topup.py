"""ragmeter generate's top-up rounds with a stand-in judge: questions the filter rejects are
replaced type by type, from chunks not used yet, in at most ``top_up_rounds`` rounds; the
summary says what was asked, generated and kept, and a re-run resumes every round."""

from __future__ import annotations

import asyncio

from test_llm_double import FixedVectors, ScriptedJudge
from typer.testing import CliRunner

from ragmeter.cli import app
from ragmeter.cli.console import console
from ragmeter.cli.generate import _print_mix
from ragmeter.generate import GenerateOptions, agenerate
from ragmeter.generate.chunking import Chunk
from ragmeter.generate.graph import KnowledgeGraph, Link
from ragmeter.generate.plan import TYPES, Slot, top_up
from ragmeter.generate.runner import Outcome, missing
from ragmeter.judges.base import JudgeError
from ragmeter.judges.embeddings import BatchingEmbedder

RULES = {
    "access": "Production access is granted for eight hours.",
    "backup": "Backups are kept for thirty days.",
    "oncall": "The on-call engineer answers a page within five minutes.",
    "badone": "REJECT Lunch is served at noon.",
    "badtwo": "REJECT Parking is free on Sundays.",
}


def _kb(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir(exist_ok=True)
    for name, text in RULES.items():
        (folder / f"{name}.md").write_text(f"## {name}\n\n{text}", encoding="utf-8")
    return folder


def _rejecting_judge(rejected=lambda premise: "REJECT" in premise, **extra) -> ScriptedJudge:
    """Writes a question per chunk; finds no answer in the chunks ``rejected`` picks out."""

    def writer(fields):
        return {"question": f"What does the rule {fields['context'][3:9]} say?", "answer": fields["context"][-25:]}

    def rule(task, shared, item):
        premise = shared.get("premise", "")  # the reference-answers-question check (no chunk) passes
        if not premise:
            return 0.9
        return 0.1 if rejected(" ".join(premise) if isinstance(premise, list) else premise) else 0.9

    generated = {f"testset_{t}": writer for t in TYPES}
    generated["testset_answer"] = lambda fields: {"answer": fields["contexts"][0][-25:]}  # the filter's own answer
    return ScriptedJudge(rule=rule, generated=generated, **extra)


def _generate(tmp_path, judge, out=None, **options):
    options = {"mix": {"single_fact": 1.0}, **options}
    settings = GenerateOptions(chunk_size=200, chunk_overlap=0, concurrency=2, styles={"plain": 1.0}, **options)
    return asyncio.run(agenerate([_kb(tmp_path)], judge, BatchingEmbedder(FixedVectors({})), settings, out))


def test_rejected_questions_are_replaced_from_unused_chunks_until_the_size_is_kept(tmp_path):
    for seed in range(4):  # whichever chunks round 0 draws, the unused good ones fill the gap
        generation = _generate(tmp_path, _rejecting_judge(), size=3, seed=seed)
        summary = generation.summary()
        kept = generation.kept()
        assert len(kept) == 3 and all("REJECT" not in s["reference_contexts"][0] for s in kept)
        asked_bad = sum("REJECT" in (s.get("reference_contexts") or [""])[0] for s in generation.rejected())
        assert summary["asked"] == 3 and summary["attempted"] == 3 + asked_bad
        assert summary["by_type"]["single_fact"] == {"asked": 3, "generated": 3 + asked_bad, "kept": 3}
        assert summary["rounds"] == max(s.round for s in generation.slots) and (summary["rounds"] >= 1) == (asked_bad > 0)


def test_top_up_is_bounded_by_its_rounds_and_can_be_turned_off(tmp_path):
    everything = _generate(tmp_path, _rejecting_judge(rejected=lambda premise: True), size=2, top_up_rounds=2)
    summary = everything.summary()
    # Five chunks: rounds 0 and 1 take two each, round 2 the last one (a chunk again would
    # write the same rejected question again).
    assert summary["rounds"] == 2 and summary["attempted"] == 5 and summary["kept"] == 0
    assert summary["by_type"]["single_fact"] == {"asked": 2, "generated": 5, "kept": 0}
    assert [s.id for s in everything.slots] == [f"q000{n}" for n in range(1, 6)]
    assert len({s.chunks for s in everything.slots}) == 5
    off = _generate(tmp_path, _rejecting_judge(rejected=lambda premise: True), size=2, top_up_rounds=0)
    assert off.summary()["rounds"] == 0 and off.summary()["attempted"] == 2


def test_a_top_up_round_does_not_ask_again_what_an_earlier_slot_asked():
    chunks = tuple(Chunk(f"{name}#1", name, text, "en") for name, text in RULES.items())
    graph = KnowledgeGraph(chunks, ((),) * len(chunks), (Link(0, 1, 0.8, ("rule",)),))
    earlier = [
        Slot("q0001", "comparison", "plain", None, (0, 1), "en"),
        Slot("q0002", "comparison", "plain", None, (1, 0), "en"),
        Slot("q0003", "single_fact", "plain", None, (2,), "en"),
    ]
    # The only link was asked both ways in the only style: nothing new to ask of it.
    assert top_up(graph, {"comparison": 2}, {"plain": 1.0}, 0, earlier) == []
    # Another style is another question, asked once: within the round no slot repeats either.
    again = top_up(graph, {"comparison": 3}, {"colloquial": 1.0}, 0, earlier)
    assert [(s.id, s.style, s.chunks, s.round) for s in again] == [("q0004", "colloquial", (0, 1), 1)]
    singles = top_up(graph, {"single_fact": 5}, {"plain": 1.0}, 0, earlier)
    assert sorted(s.chunks for s in singles) == [(0,), (1,), (3,), (4,)]  # chunk 2 was asked already


def test_missing_counts_per_type_by_the_type_kept_as_and_skips_two_chunk_types_without_links():
    chunks = (Chunk("a#1", "a", "one", "en"), Chunk("b#1", "b", "two", "en"))
    graph = KnowledgeGraph(chunks, ((), ()), ())
    slots = [Slot("q0001", "single_fact", "plain", None, (0,), "en"), Slot("q0002", "reasoning", "plain", None, (1,), "en")]
    slots.append(Slot("q0003", "multi_hop", "plain", None, (), "en"))
    relabelled = {"metadata": {"type": "single_fact", "original_type": "reasoning"}}
    outcomes = {
        "q0001": Outcome(slots[0], "rejected", {"metadata": {"type": "single_fact"}}, "source_leak"),
        "q0002": Outcome(slots[1], "kept", relabelled),
        "q0003": Outcome(slots[2], "failed", reason="generation_failed"),
    }
    # The reasoning question kept as a single fact fills the single fact; reasoning is missing.
    assert missing(graph, slots, outcomes) == {"reasoning": 1}


def test_a_rerun_resumes_the_top_up_rounds_from_the_journal(tmp_path):
    out = tmp_path / "out"
    first = _generate(tmp_path, _rejecting_judge(), out=out, size=4, seed=0)
    assert first.summary()["rounds"] >= 1  # 4 of 5 chunks: at least one rejected one is drawn
    again = _rejecting_judge(fail=lambda *args: JudgeError("must not be called"))
    second = _generate(tmp_path, again, out=out, size=4, seed=0)
    assert again.count("generate") == 0 and again.calls == []
    assert second.kept() == first.kept() and second.summary()["resumed"] == first.summary()["attempted"]
    assert second.summary()["by_type"] == first.summary()["by_type"]


def test_a_relabelled_question_is_kept_as_a_single_fact_and_its_type_is_topped_up(tmp_path):
    def copying(fields):  # a "reasoning" answer that is the chunk's sentence, word for word
        return {"question": f"Why does the rule {fields['context'][3:9]} matter?", "answer": fields["context"].split("\n\n")[-1]}

    def judge():
        return ScriptedJudge(
            rule=lambda task, shared, item: 0.1 if "REJECT" in str(shared.get("premise")) else 0.9,
            generated={"testset_reasoning": copying, "testset_answer": {"answer": "It matters."}},
        )

    generation = _generate(tmp_path, judge(), size=2, mix={"reasoning": 1.0}, top_up_rounds=0)
    kept = generation.kept()
    assert len(kept) == 2
    for sample in kept:
        assert sample["metadata"]["type"] == "single_fact" and sample["metadata"]["original_type"] == "reasoning"
        assert sample["metadata"]["difficulty"] == "easy" and sample["metadata"]["checks"]["copied_from"] in sample["reference_context_ids"]
    summary = generation.summary()
    assert summary["by_type"]["reasoning"] == {"asked": 2, "generated": 2, "kept": 0}
    assert summary["by_type"]["single_fact"] == {"asked": 0, "generated": 0, "kept": 2}
    assert summary["relabelled"] == {"reasoning -> single_fact": 2}
    topped = _generate(tmp_path, judge(), size=2, mix={"reasoning": 1.0}, top_up_rounds=1)
    assert topped.summary()["rounds"] == 1 and topped.summary()["by_type"]["reasoning"]["generated"] == 4


def test_the_mix_table_shows_relabelled_questions_apart_so_no_share_exceeds_what_was_asked(tmp_path):
    summary = {
        "asked": 4, "generated": 5, "kept": 4, "rounds": 1, "attempted": 5, "reasons": {}, "relabelled": {"comparison -> single_fact": 1},
        "by_type": {"single_fact": {"asked": 2, "generated": 2, "kept": 3}, "comparison": {"asked": 2, "generated": 3, "kept": 1}},
        "by_style": {"plain": {"asked": 4, "generated": 5, "kept": 4}},
    }  # fmt: skip
    with console.capture() as captured:
        for key, title in (("by_type", "question type"), ("by_style", "query style")):
            _print_mix(summary, key, title)
    cells = [[cell.strip() for cell in line.strip("│ ").split("│")] for line in captured.get().splitlines() if "│" in line]
    rows = {row[0]: row[1:] for row in cells}
    assert rows["single_fact"] == ["2", "2", "3 (1 relabelled in)", "100%"]  # 150% before: 3 kept of 2 asked
    assert rows["comparison"] == ["2", "3", "1", "50%"] and rows["plain"] == ["4", "5", "4", "100%"]


def test_cli_refuses_a_negative_number_of_top_up_rounds(tmp_path):
    result = CliRunner().invoke(app, ["generate", str(_kb(tmp_path)), "--top-up-rounds", "-1", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "--top-up-rounds" in result.output and "Traceback" not in result.output
