"""ragmeter generate end to end with a stand-in judge: the graph, the plan, the samples, the
outputs, the summary of the mix, resuming from the journal, and the command line's errors."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import numpy as np
import pytest
from test_llm_double import FixedVectors, ScriptedJudge
from typer.testing import CliRunner

import ragmeter.cli.generate as cli_generate
from ragmeter.cli import app
from ragmeter.data.issues import InputIssue
from ragmeter.generate import GenerateOptions, agenerate, write_outputs
from ragmeter.generate import graph as graph_module
from ragmeter.generate.chunking import Chunk
from ragmeter.generate.graph import KnowledgeGraph, Link, build_graph, key_phrases
from ragmeter.generate.plan import TYPES, Slot, allocate, parse_mix, plan, reads_as_list
from ragmeter.generate.runner import Outcome, _drop_near_duplicates
from ragmeter.generate.synthesize import NO_ANSWER, misspell
from ragmeter.judges.base import JudgeError
from ragmeter.judges.dry_run import stand_in
from ragmeter.judges.embeddings import BatchingEmbedder
from ragmeter.judges.metering import PriceTable

EN = "## Approvals\n\nA merge request needs two approvals from people other than the author."
FREEZE = "## Freeze\n\nDeployments to production are frozen from 20 December to 2 January."
ZH = "## 审批\n\n数据库变更必须经过 DBA 审批，审批通常在两个工作日内完成。"


def _kb(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir(exist_ok=True)
    for name, text in (("mr.md", EN), ("freeze.md", FREEZE), ("db-zh.md", ZH)):
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _writer(fields):
    text = fields.get("context") or " ".join(fields.get("contexts") or [])
    if "审批" in text:
        return {"question": "数据库变更需要谁审批？", "answer": "需要 DBA 审批。"}
    return {"question": f"What does this rule say: {text[-30:]}?", "answer": text[-40:]}


def _judge(**extra) -> ScriptedJudge:
    generated = {f"testset_{t}": _writer for t in TYPES}
    generated["testset_unanswerable_swap"] = lambda fields: {"subject": fields["question"].split()[-1], "others": ["parking fee"]}
    generated["testset_unanswerable_names"] = {"others": ["parking fee"]}
    generated["testset_bridge_question"] = lambda fields: {
        "question": f"What does {fields['subject']} need?",
        "answer": fields["context"][-40:],
    }
    generated["testset_bridge_description"] = lambda fields: {"kind": "rule", "fact": f"is about {fields['context'].split()[-1]}"}
    generated["testset_answer"] = lambda fields: {"answer": fields["contexts"][0][-40:]}  # the filter's own answer
    generated["testset_style_colloquial"] = lambda fields: {"question": [' "so, ' + fields["question"].lower() + '" ']}
    # No chunk answers the parking questions; every other verdict says yes.
    return ScriptedJudge(
        rule=lambda task, shared, item: 0.1 if task == "answerable" and "parking" in item else 0.9, generated=generated, **extra
    )


def _generate(tmp_path, judge, size=6, out=None, **options):
    settings = GenerateOptions(size=size, chunk_size=200, chunk_overlap=0, concurrency=2, **options)
    return asyncio.run(agenerate([_kb(tmp_path)], judge, BatchingEmbedder(FixedVectors({})), settings, out))


def test_samples_carry_the_ragas_fields_and_the_metadata(tmp_path):
    mix = {"single_fact": 1.0, "unanswerable": 1.0}
    judge = _judge()
    generation = _generate(tmp_path, judge, size=3, mix=mix, styles={"plain": 1.0})  # one question per chunk
    kept = generation.kept()
    assert len(kept) == 3
    answerable = [s for s in kept if s["metadata"]["answerable"]]
    unanswerable = [s for s in kept if not s["metadata"]["answerable"]]
    assert len(answerable) == 2 and len(unanswerable) == 1
    for sample in answerable:
        assert sample["reference_context_ids"][0].split("#")[0] in ("mr", "freeze", "db-zh")
        assert sample["reference_contexts"] and sample["reference"]
        assert sample["metadata"]["difficulty"] == "easy" and sample["metadata"]["source_documents"]
    for sample in unanswerable:
        assert sample["reference_contexts"] == [] and sample["metadata"]["seed_context_ids"]
        assert sample["metadata"]["type"] == "unanswerable" and sample["metadata"]["answerable"] is False
    chinese = [s for s in kept if s["metadata"]["lang"] == "zh"]
    assert chinese and all(s["reference"] in ("需要 DBA 审批。", NO_ANSWER["zh"]) for s in chinese)
    assert {c.lang for c in judge.calls if c.kind == "generate" and "审批" in str(c.shared)} == {"zh"}  # Chinese prompts for Chinese chunks


def test_styles_rewrite_the_question_and_keep_the_original(tmp_path):
    generation = _generate(tmp_path, _judge(), size=4, mix={"single_fact": 1.0}, styles={"colloquial": 1.0, "misspelled": 1.0})
    by_style = {s["metadata"]["style"]: s for s in generation.kept() + list(generation.rejected())}
    colloquial = by_style["colloquial"]
    assert colloquial["user_input"].startswith("so, ") and colloquial["metadata"]["original_question"] != colloquial["user_input"]
    assert by_style["misspelled"]["user_input"] == misspell(
        by_style["misspelled"]["metadata"]["original_question"], by_style["misspelled"]["id"]
    )


def test_outputs_and_the_summary_of_the_mix(tmp_path):
    out = tmp_path / "out"
    generation = _generate(tmp_path, _judge(), size=6, out=out, mix={"single_fact": 2, "multi_hop": 1}, styles={"plain": 1.0})
    summary = write_outputs(generation, out)
    testset = [json.loads(line) for line in (out / "testset.jsonl").read_text().splitlines()]
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    chunks = [json.loads(line) for line in (out / "chunks.jsonl").read_text().splitlines()]
    assert summary == json.loads((out / "summary.json").read_text())
    assert summary["asked"] == 6 and summary["by_type"]["single_fact"]["asked"] == 4 and summary["by_type"]["multi_hop"]["asked"] == 2
    assert summary["kept"] == len(testset) and summary["attempted"] == len(testset) + len(rejects)
    # The stand-in says every single chunk answers everything: multi-hop questions are rejected.
    assert summary["by_type"]["multi_hop"]["kept"] == 0
    assert {r["reject_reason"] for r in rejects} <= {"single_chunk_answers", "near_duplicate", "generation_failed"}
    assert {c["id"] for c in chunks} == {"mr#1", "freeze#1", "db-zh#1"}
    assert not (out / "journal.jsonl").exists()


def test_a_failing_question_is_reported_and_the_others_are_kept(tmp_path):
    def fail(kind, task, shared, items):
        text = shared.get("context") or ""
        return JudgeError("the server is down") if kind == "generate" and "frozen" in str(text) else None

    generation = _generate(tmp_path, _judge(fail=fail), size=3, mix={"single_fact": 1.0}, styles={"plain": 1.0}, top_up_rounds=0)
    summary = generation.summary()
    assert summary["by_type"]["single_fact"] == {"asked": 3, "generated": 2, "kept": 2}
    failed = [r for r in generation.rejected() if r["reject_reason"] == "generation_failed"]
    assert len(failed) == 1 and "server is down" in failed[0]["reject_detail"]


def test_a_killed_run_resumes_from_its_journal_without_asking_the_judge_again(tmp_path):
    out = tmp_path / "out"
    first = _generate(tmp_path, _judge(), size=4, out=out, mix={"single_fact": 1.0}, styles={"plain": 1.0})
    assert (out / "journal.jsonl").exists()  # not yet written out: as after a kill
    second_judge = _judge(fail=lambda *args: JudgeError("must not be called"))
    second = asyncio.run(
        agenerate(
            [tmp_path / "kb"],
            second_judge,
            BatchingEmbedder(FixedVectors({})),
            GenerateOptions(size=4, chunk_size=200, chunk_overlap=0, mix={"single_fact": 1.0}, styles={"plain": 1.0}),
            out,
        )
    )
    assert second_judge.count("generate") == 0
    # Three chunks for four questions: a top-up round could only ask of a chunk again what was
    # asked of it, so there is none (resuming the top-up rounds: test_generate_topup.py).
    assert second.kept() == first.kept() and second.summary()["resumed"] == first.summary()["attempted"] == 4


def test_a_journalled_question_whose_usage_is_damaged_is_written_again_not_the_end_of_the_run(tmp_path):
    out = tmp_path / "out"
    _generate(tmp_path, _judge(), size=4, out=out, mix={"single_fact": 1.0}, styles={"plain": 1.0})
    lines = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    lines[0]["usage"] = [1]  # Usage.from_dict raised AttributeError on it, ending the resumed run
    (out / "journal.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    second_judge = _judge()
    options = GenerateOptions(size=4, chunk_size=200, chunk_overlap=0, mix={"single_fact": 1.0}, styles={"plain": 1.0})
    second = asyncio.run(agenerate([tmp_path / "kb"], second_judge, BatchingEmbedder(FixedVectors({})), options, out))
    assert second.summary()["resumed"] == 3 and second_judge.count("generate") >= 1


def test_graph_links_chunks_that_share_key_phrases_and_not_across_languages():
    chunks = [
        Chunk("a#1", "a", "The deployment freeze blocks production deployment in December.", "en"),
        Chunk("b#1", "b", "A hotfix during the freeze needs a production deployment approval.", "en"),
        Chunk("c#1", "c", "Lunch is served in the canteen at noon.", "en"),
        Chunk("d#1", "d", "部署冻结期间禁止生产部署。", "zh"),
    ]
    phrases = key_phrases(chunks)
    assert "freeze" in phrases[0] and "canteen" in phrases[2]
    vectors = np.eye(4, dtype=np.float32)  # no similarity: links come from shared phrases only
    graph = build_graph(chunks, vectors)
    pairs = {(chunks[link.a].id, chunks[link.b].id) for link in graph.links}
    assert pairs == {("a#1", "b#1")}
    assert set(graph.links[0].shared) >= {"freeze", "production"}
    similar = np.hstack([np.eye(4) * 0.4**0.5, np.full((4, 1), 0.6**0.5)]).astype(np.float32)  # cosine 0.6 between all
    linked = build_graph(chunks, similar).links
    assert linked and all(chunks[link.a].lang == chunks[link.b].lang for link in linked)  # still no link across languages


def test_graph_never_links_a_chunk_to_a_copy_of_itself():
    # ClapNQ holds some passages under two ids; the copies were the closest pair, so they were
    # linked first and got comparison questions between two identical contexts.
    text = "Near a river the group hears singing and meets three women washing clothes."
    chunks = [
        Chunk("p1#1", "p1", text, "en"),
        Chunk("p2#1", "p2", text, "en"),
        Chunk("p3#1", "p3", "Near the river the group later meets a salesman who invites them to lunch.", "en"),
    ]
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.8, 0.6]], dtype=np.float32)
    pairs = {(chunks[link.a].id, chunks[link.b].id) for link in build_graph(chunks, vectors).links}
    assert pairs == {("p1#1", "p3#1"), ("p2#1", "p3#1")}
    nearly = np.array([[1.0, 0.0], [0.99, 0.141], [0.8, 0.6]], dtype=np.float32)  # not the same string, cosine 0.99
    chunks[1] = Chunk("p2#1", "p2", text + " ", "en")
    assert ("p1#1", "p2#1") not in {(chunks[link.a].id, chunks[link.b].id) for link in build_graph(chunks, nearly).links}


def _every_pair_then_greedy(chunks, vectors, per_chunk):
    """The rule written out over every pair: candidates strongest first, a link kept while one of its chunks has room."""
    sets = [set(p) for p in key_phrases(chunks)]
    candidates = []
    for a in range(len(chunks)):
        for b in range(a + 1, len(chunks)):
            x, y = chunks[a], chunks[b]
            overlapping = (x.document, x.headings) == (y.document, y.headings) and abs(int(x.id[2:]) - int(y.id[2:])) == 1
            cosine = float(vectors[a] @ vectors[b])
            if x.lang != y.lang or overlapping or cosine >= 0.98 or x.text == y.text:
                continue
            shared = tuple(sorted(sets[a] & sets[b]))
            if cosine >= 0.5 or len(shared) >= 2:
                candidates.append(Link(a, b, round(cosine, 6), shared))
    candidates.sort(key=lambda link: (-link.strength, link.a, link.b))
    kept, degree = [], Counter()
    for link in candidates:
        if degree[link.a] < per_chunk or degree[link.b] < per_chunk:
            kept.append(link)
            degree.update((link.a, link.b))
    return kept


@pytest.mark.parametrize("block", [1, 7, 10_000])
def test_graph_keeps_each_chunks_strongest_links_scoring_a_block_of_rows_at_a_time(monkeypatch, block):
    # The pairs are scored in blocks of rows (a 5 MB document listed every candidate pair and
    # took 7 minutes); the links must be those of the rule applied to every pair, ties included.
    rng = np.random.default_rng(5)
    words = ["forge", "vault", "atlas", "beacon", "release", "secret", "rotates", "merges", "deploys", "pipeline", "dashboard", "freeze"]
    chunks = [
        Chunk(f"{'ab'[n % 2]}#{n // 2 + 1}", "ab"[n % 2], " ".join(rng.choice(words, 8)), "zh" if n % 11 == 0 else "en", ("S", str(n // 6)))
        for n in range(40)
    ]
    chunks[9] = Chunk(chunks[9].id, chunks[9].document, chunks[3].text, "en", chunks[9].headings)  # a copy: never linked
    vectors = rng.choice([0.0, 1.0], size=(40, 6)) + 0.01  # few distinct directions: many equal strengths
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    monkeypatch.setattr(graph_module, "_CELLS_PER_BLOCK", block * len(chunks))
    for per_chunk in (1, 3):
        expected = [(x.a, x.b, x.shared) for x in _every_pair_then_greedy(chunks, vectors, per_chunk)]
        links = build_graph(chunks, vectors, per_chunk).links
        assert [(x.a, x.b, x.shared) for x in links] == expected
        assert len(expected) > 20 and (3, 9) not in {(x.a, x.b) for x in links}


def test_mixes_parse_and_allocate_to_whole_numbers():
    assert parse_mix("single_fact=3, multi_hop=1", TYPES, {}, "--mix") == {"single_fact": 0.75, "multi_hop": 0.25}
    assert allocate(10, {"a": 0.3, "b": 0.15, "c": 0.55}) == {"a": 3, "b": 2, "c": 5}
    for bad, message in (("riddle=1", "unknown name 'riddle'"), ("single_fact=x", "must be a number"), ("single_fact=0", "positive")):
        with pytest.raises(ValueError, match=message):
            parse_mix(bad, TYPES, {}, "--mix")


def test_plan_is_deterministic_and_two_chunk_types_without_links_get_no_chunks():
    chunks = tuple(Chunk(f"d#{n}", "d", f"text {n}", "en") for n in range(1, 4))
    graph = build_graph(chunks, np.eye(3, dtype=np.float32))
    slots = plan(graph, 6, {"single_fact": 0.5, "multi_hop": 0.5}, {"plain": 0.5, "persona": 0.5}, seed=3)
    assert slots == plan(graph, 6, {"single_fact": 0.5, "multi_hop": 0.5}, {"plain": 0.5, "persona": 0.5}, seed=3)
    assert [s.id for s in slots] == [f"q000{n}" for n in range(1, 7)]
    assert sorted({s.chunks for s in slots if s.type == "single_fact"}) == [(0,), (1,), (2,)]
    assert all(s.chunks == () for s in slots if s.type == "multi_hop")
    assert all((s.persona is not None) == (s.style == "persona") for s in slots)


RESULTS_TABLE = (
    "No . Race Pole position Most laps led Winning driver Manufacturer Report 001 ! Spring Clash Rivers , Ann Ann Rivers "
    "Hale , Tom Tom Hale Ford Report 002 ! Can - Am Duel 1 Stone , Kim Kim Stone Chevrolet Report 003 ! Harbor 400 Ford Report"
)
INFOBOX = "Harbor Bridge Official name : Old Harbor Crossing Designated April 15 , 1970 Location Port Ellis Architect Mary Vale Style Gothic Revival Length 240 m"


@pytest.mark.parametrize(
    ("text", "is_list"),
    [
        (RESULTS_TABLE, True),
        (INFOBOX, True),
        ("The Harbor Bridge was built in 1830 by Mary Vale and spans the river at Port Ellis, where it carries road traffic.", False),
        ("Amanda: I baked cookies. Do you want some? Jerry: Sure! Amanda: I'll bring you tomorrow :-) Jerry: Great, thanks!", False),
        ("Harbor Bridge Port Ellis", False),  # too short to judge
        ("港口大桥 官方名称 旧港口渡口 指定日期 1970 年 4 月 15 日 地点 埃利斯港 建筑师 玛丽·韦尔 风格 哥特复兴 长度 240 米", False),
    ],
)
def test_a_flattened_table_or_infobox_reads_as_a_list_and_prose_does_not(text, is_list):
    assert reads_as_list(text) is is_list


def test_questions_are_planned_from_chunks_of_sentences_and_a_table_is_left_out_of_every_slot():
    prose = "The Harbor Bridge was built in 1830 by Mary Vale and spans the river at Port Ellis, where it carries road traffic."
    chunks = (Chunk("t#1", "t", RESULTS_TABLE, "en"), Chunk("b#1", "b", prose, "en"), Chunk("t#2", "t", INFOBOX, "en"))
    graph = KnowledgeGraph(chunks, ((), (), ()), (Link(0, 2, 0.95, ()), Link(0, 1, 0.6, ())))
    slots = plan(graph, 6, {"single_fact": 0.5, "multi_hop": 0.5}, {"plain": 1.0})
    assert {s.chunks for s in slots if s.type == "single_fact"} == {(1,)}
    assert all(s.chunks == () for s in slots if s.type == "multi_hop")  # both links touch a table
    # A knowledge base of tables only is still planned from them.
    tables = KnowledgeGraph(chunks[::2], ((), ()), (Link(0, 1, 0.95, ()),))
    by_type = {s.type: s.chunks for s in plan(tables, 2, {"single_fact": 0.5, "multi_hop": 0.5}, {"plain": 1.0})}
    assert by_type["single_fact"] in {(0,), (1,)} and set(by_type["multi_hop"]) == {0, 1}


def test_a_link_planned_again_is_taken_the_other_way_round_until_both_ways_are_used():
    chunks = tuple(Chunk(f"d#{n}", "d", f"text {n}", "en") for n in range(1, 3))
    graph = KnowledgeGraph(chunks, ((), ()), (Link(0, 1, 0.9, ()),))
    mix, styles = {"multi_hop": 1.0}, {"plain": 1.0}
    assert [s.chunks for s in plan(graph, 1, mix, styles)] == [(0, 1)]
    assert [s.chunks for s in plan(graph, 1, mix, styles, used={(0, 1)})] == [(1, 0)]
    assert [s.chunks for s in plan(graph, 1, mix, styles, used={(0, 1), (1, 0)})] == [(0, 1)]


def test_a_multi_hop_slot_skips_links_whose_chunks_share_no_bridge_phrase_unless_none_does():
    texts = (
        "Deployments to production pause over the holidays.",
        "Each team writes its own holiday rota in a shared sheet.",
        "Forge Vault keeps every production secret and rotates it every 90 days.",
        "Only the Security team may read Forge Vault audit logs.",
    )
    chunks = tuple(Chunk(f"d{n}#1", f"d{n}", text, "en") for n, text in enumerate(texts))
    # The strongest link shares no phrase ("holiday" is one common word); the weaker one shares "Forge Vault".
    graph = KnowledgeGraph(chunks, ((),) * 4, (Link(0, 1, 0.9, ()), Link(2, 3, 0.6, ())))
    assert [s.chunks for s in plan(graph, 1, {"multi_hop": 1.0}, {"plain": 1.0})] in ([(2, 3)], [(3, 2)])
    assert [s.chunks for s in plan(graph, 1, {"comparison": 1.0}, {"plain": 1.0})] == [(0, 1)]  # a comparison needs no phrase
    assert {s.chunks for s in plan(graph, 2, {"multi_hop": 1.0}, {"plain": 1.0})} == {(2, 3), (3, 2)}  # both ways round
    unbridged = KnowledgeGraph(chunks[:2], ((), ()), (Link(0, 1, 0.9, ()),))
    assert [s.chunks for s in plan(unbridged, 1, {"multi_hop": 1.0}, {"plain": 1.0})] == [(0, 1)]  # the slot says why it fails


runner = CliRunner()


def test_cli_refuses_an_unknown_type_in_the_mix(tmp_path):
    result = runner.invoke(app, ["generate", str(_kb(tmp_path)), "--mix", "riddle=1", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "--mix: unknown name 'riddle'" in result.output and "Traceback" not in result.output


def test_cli_with_no_readable_document_names_the_files_and_exits_2(tmp_path):
    (tmp_path / "notes.docx").write_bytes(b"x")
    result = runner.invoke(app, ["generate", str(tmp_path / "notes.docx"), str(tmp_path / "gone"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "notes.docx, file: unsupported file type .docx" in result.output
    assert "gone, file: no such file or folder" in result.output
    assert "no readable document" in result.output


def test_dry_run_counts_every_call_and_asks_the_judge_nothing(tmp_path):
    target = _judge(fail=lambda *args: JudgeError("must not be called"))
    dry = stand_in(target, "single", PriceTable())
    generation = _generate(tmp_path, dry, size=3, mix={"single_fact": 1}, styles={"colloquial": 1}, top_up_rounds=0)
    usage = generation.summary()["usage"]
    assert target.calls == []
    # Each question: its generation, its style, three verdicts (answerable, supported, answers),
    # the filter's own answer and the reference's verdict against it.
    assert usage["calls"] == 3 * 7 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0


def test_cli_without_a_usable_judge_says_what_is_missing(tmp_path):
    result = runner.invoke(app, ["generate", str(_kb(tmp_path)), "--judge", "openai", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "generate needs an LLM judge" in result.output and "--judge-base-url" in result.output


def test_two_descriptions_of_one_subject_asking_the_same_bridge_question_are_near_duplicates():
    """ClapNQ, 2026-12-04: "What is the person who takes the Big Three to a movie's reaction...?"
    and "What is the person who makes Jack's favorite lasagna's reaction...?" were both kept:
    one question ("What is Rebecca's reaction...?") under two descriptions."""

    def composed(slot_id, question, bridge_question):
        slot = Slot(slot_id, "multi_hop", "plain", None, (0, 1), "en")
        sample = {"user_input": question, "metadata": {"composition": {"bridge_question": bridge_question}}}
        return Outcome(slot, "kept", sample)

    outcomes = {
        "q1": composed("q1", "What is the reaction of the person who cooks the lasagna?", "What is Rebecca's reaction?"),
        "q2": composed("q2", "What is the reaction of the person who takes the children to a movie?", "What is Rebecca's reaction?"),
        "q3": composed("q3", "What does the person who convinces Randall say?", "What does Beth say?"),
    }
    slots = [o.slot for o in outcomes.values()]
    asyncio.run(_drop_near_duplicates(slots, outcomes, BatchingEmbedder(FixedVectors({}))))
    assert [(i, o.status, o.reason) for i, o in outcomes.items()] == [
        ("q1", "kept", None),
        ("q2", "rejected", "near_duplicate"),
        ("q3", "kept", None),
    ]
    assert outcomes["q2"].detail == "near-duplicate of q1 (cosine 1.00)"


def test_a_dry_run_keeps_the_progress_bar_of_embedding_a_large_knowledge_base(tmp_path, monkeypatch):
    """--dry-run turned the progress bar off: a 50 MB knowledge base was minutes of silence
    (its chunks are embedded before any estimate), like a hang."""
    asked = []

    async def fake_agenerate(docs, judge, embedder, options, out, resume):
        asked.append(options.progress)
        raise KeyboardInterrupt  # stop before any embedding

    monkeypatch.setattr(cli_generate, "agenerate", fake_agenerate)
    (tmp_path / "ok.md").write_text("Backups run nightly.", encoding="utf-8")
    judge = ("--judge", "openai", "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-model", "gpt-4o-mini")
    runner.invoke(app, ["generate", str(tmp_path), "--size", "2", "--dry-run", "--progress", *judge, "--out", str(tmp_path / "o")])
    assert asked == [True]


def test_a_dry_run_does_not_send_the_user_to_a_summary_it_never_writes(capsys):
    """Past 20 skipped files a dry run said "... and 13 more (see summary.json)", a file that
    --dry-run does not write."""
    issues = [InputIssue(f"kb/{n}.md", "file", None, "the document has no text") for n in range(23)]
    cli_generate._print_issues(issues, written=False)
    assert "… and 3 more (a run without --dry-run lists them all in summary.json)" in capsys.readouterr().err
    cli_generate._print_issues(issues, written=True)
    assert "… and 3 more (see summary.json)" in capsys.readouterr().err
