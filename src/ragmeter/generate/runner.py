"""A generation run: knowledge base in, test set out, resumable, with a summary of the mix.

:func:`agenerate` reads the documents, chunks them, embeds the chunks (cached on disk like
every embedding), links them into a knowledge graph, plans one slot per question and writes
the slots' questions, at most ``concurrency`` at a time, through the LLM judge (cached and
metered), each checked by the quality filter. Every finished slot is journalled at once
(``journal.jsonl`` in the output directory, as ``eval`` does), so a killed run, re-run with the
same command, only writes the questions that are missing. Near-duplicates are removed once all
slots are done. :func:`write_outputs` then writes the output directory (see :data:`OUTPUT_FILES`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data.files import write_json, write_json_lines
from ragmeter.generate.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from ragmeter.generate.compose import METHODS, compose
from ragmeter.generate.filters import check, near_duplicates
from ragmeter.generate.graph import KnowledgeGraph
from ragmeter.generate.knowledge_base import KnowledgeBase, build_knowledge_base
from ragmeter.generate.plan import DEFAULT_MIX, DEFAULT_STYLES, DIFFICULTY, STYLES, TWO_CHUNK_TYPES, TYPES, Slot, plan, top_up
from ragmeter.generate.synthesize import SynthesisError, synthesize
from ragmeter.judges.base import JudgeError, LLMJudge
from ragmeter.judges.embeddings import BatchingEmbedder
from ragmeter.judges.metering import Usage, metered
from ragmeter.run.executor import LocalExecutor
from ragmeter.run.journal import JOURNAL_FILE, Journal

TESTSET_FILE, REJECTS_FILE, CHUNKS_FILE, SUMMARY_FILE = "testset.jsonl", "rejects.jsonl", "chunks.jsonl", "summary.json"
#: What :func:`write_outputs` writes, and what each file holds.
OUTPUT_FILES = {
    TESTSET_FILE: "the kept questions: user_input, reference, reference_contexts, reference_context_ids, metadata",
    REJECTS_FILE: "the questions the filter rejected (or that could not be written), with reject_reason and reject_detail",
    CHUNKS_FILE: "the knowledge base's chunks: id (doc#n), document, lang, headings, text",
    SUMMARY_FILE: "the mix asked for, generated and kept, per type and style; reasons; judge usage; speed",
}
_JOURNAL_TAG = "generate"


@dataclass(frozen=True)
class GenerateOptions:
    """Settings of a generation run.

    Attributes:
        size: Questions asked for: the filter's rejects are replaced, type by type, in up
            to ``top_up_rounds`` further rounds, so that up to ``size`` are kept.
        mix: Weight of each question type (:data:`~ragmeter.generate.plan.TYPES`).
        styles: Weight of each query style (:data:`~ragmeter.generate.plan.STYLES`).
        chunk_size: Most characters per chunk.
        chunk_overlap: Characters repeated between consecutive pieces of a section.
        seed: Seed of the plan's random choices.
        concurrency: Most questions written at once.
        top_up_rounds: Most rounds that replace the questions not kept (0: none); each
            round asks for exactly the questions still missing of each type.
        progress: Show a progress bar with ETA.
    """

    size: int = 20
    mix: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    styles: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_STYLES))
    chunk_size: int = DEFAULT_CHUNK_SIZE
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP
    seed: int = 0
    concurrency: int = 4
    top_up_rounds: int = 2
    progress: bool = False


@dataclass(frozen=True)
class Outcome:
    """What became of one slot.

    Attributes:
        slot: The slot.
        status: ``"kept"``, ``"rejected"`` (by the filter) or ``"failed"`` (no question).
        sample: The sample written (``None`` when failed).
        reason: Why it was rejected or failed (``source_leak``, ``generation_failed``...).
        detail: The reason in words.
        usage: The judge usage it took.
        resumed: Read back from the journal of an earlier run.
    """

    slot: Slot
    status: str
    sample: dict[str, Any] | None = None
    reason: str | None = None
    detail: str | None = None
    usage: Usage = field(default_factory=Usage)
    resumed: bool = False


@dataclass
class Generation:
    """The outcome of a generation run: the knowledge base, the slots (top-up rounds
    included), what became of each, the seconds taken, the settings, and the top-up rounds run."""

    knowledge_base: KnowledgeBase
    slots: list[Slot]
    outcomes: dict[str, Outcome]
    seconds: float
    settings: dict[str, Any]
    rounds: int = 0

    def kept(self) -> list[dict[str, Any]]:
        """The kept samples, in slot order."""
        return [o.sample for s in self.slots if (o := self.outcomes[s.id]).status == "kept" and o.sample is not None]

    def rejected(self) -> list[dict[str, Any]]:
        """The rejected and failed slots as samples with ``reject_reason`` and ``reject_detail``."""
        rows = []
        for slot in self.slots:
            outcome = self.outcomes[slot.id]
            if outcome.status != "kept":
                base = outcome.sample or {"id": slot.id, "metadata": {"type": slot.type, "style": slot.style, "lang": slot.lang}}
                rows.append({**base, "reject_reason": outcome.reason, "reject_detail": outcome.detail})
        return rows

    def _relabelled(self) -> dict[str, int]:
        """Kept questions the type check relabelled, by ``"<type asked> -> <type kept as>"``."""
        counts = Counter(
            f"{o.slot.type} -> {kept_type(o)}" for o in self.outcomes.values() if o.status == "kept" and kept_type(o) != o.slot.type
        )
        return dict(sorted(counts.items()))

    def summary(self) -> dict[str, Any]:
        """The mix asked for (round 0), generated and kept (all rounds; kept by the type kept
        as), per type and per style; the top-up rounds run; rejection reasons; the judge's
        usage; questions per minute and the knowledge base's shape."""
        tallies: dict[str, dict[str, Counter[str]]] = {
            key: {"asked": Counter(), "generated": Counter(), "kept": Counter()} for key in ("type", "style")
        }
        usage, resumed = Usage(), 0
        for slot in self.slots:
            outcome = self.outcomes[slot.id]
            usage.add(outcome.usage)
            resumed += outcome.resumed
            for key, value in (("type", slot.type), ("style", slot.style)):
                tallies[key]["asked"][value] += slot.round == 0
                tallies[key]["generated"][value] += outcome.status != "failed"
            tallies["type"]["kept"][kept_type(outcome)] += outcome.status == "kept"
            tallies["style"]["kept"][slot.style] += outcome.status == "kept"
        names = {"type": TYPES, "style": STYLES}
        mix = {
            key: {
                n: {k: tallies[key][k][n] for k in ("asked", "generated", "kept")}
                for n in names[key]
                if tallies[key]["asked"][n] or tallies[key]["generated"][n] or tallies[key]["kept"][n]
            }
            for key in names
        }
        generated = sum(tallies["type"]["generated"].values())
        minutes = self.seconds / 60
        return {
            "asked": sum(tallies["type"]["asked"].values()), "attempted": len(self.slots), "rounds": self.rounds,
            "generated": generated, "kept": sum(tallies["type"]["kept"].values()), "resumed": resumed,
            "by_type": mix["type"], "by_style": mix["style"], "relabelled": self._relabelled(),
            "reasons": dict(Counter(o.reason for o in self.outcomes.values() if o.reason).most_common()),
            "seconds": round(self.seconds, 3),
            "generated_per_minute": round((generated - resumed) / minutes, 3) if minutes > 0 else None,
            "usage": usage.to_dict(),
            "documents": self.knowledge_base.documents,
            "boilerplate": self.knowledge_base.boilerplate,
            "graph": self.knowledge_base.graph.describe(),
            "input_issues": [i.to_dict() for i in self.knowledge_base.issues],
            "settings": self.settings,
        }  # fmt: skip


async def generate_slot(slot: Slot, kb: KnowledgeBase, judge: LLMJudge, embedder: BatchingEmbedder) -> Outcome:
    """Write, then check, the question of ``slot`` (relabelled when the type check says it is
    of another type); a failure is an outcome, never raised.

    Args:
        slot: The question to write.
        kb: The knowledge base.
        judge: The LLM judge that writes and checks.
        embedder: The sentence embedder (to search the knowledge base).
    """
    with metered() as usage:
        try:
            draft = await (compose if slot.type in METHODS else synthesize)(slot, kb.graph, judge)
        except (SynthesisError, JudgeError) as exc:
            return Outcome(slot, "failed", reason="generation_failed", detail=str(exc), usage=usage)
        try:
            verdict = await check(draft, kb.graph, kb.vectors, judge, embedder.embed)
        except JudgeError as exc:
            sample = draft.sample(kb.graph, {})
            return Outcome(slot, "rejected", sample, "check_failed", f"the judge could not check it: {exc}", usage)
    sample = draft.sample(kb.graph, verdict.checks, verdict.needs)
    if verdict.relabel is not None:
        sample["metadata"].update(type=verdict.relabel, original_type=slot.type, difficulty=DIFFICULTY[verdict.relabel])
    return Outcome(slot, "kept" if verdict.kept else "rejected", sample, verdict.reason, verdict.detail, usage)


async def agenerate(
    paths: Sequence[str | Path],
    judge: LLMJudge,
    embedder: BatchingEmbedder,
    options: GenerateOptions,
    out_dir: str | Path | None = None,
    resume: bool = True,
) -> Generation:
    """Generate a test set from the documents at ``paths``: the planned questions, then up to
    ``options.top_up_rounds`` rounds that replace, type by type, the questions not kept.

    Args:
        paths: Files and folders of the knowledge base.
        judge: The LLM judge that writes and checks the questions.
        embedder: The sentence embedder.
        options: Size, mixes, chunking, seed, concurrency, top-up rounds, progress.
        out_dir: Where the journal goes (``None``: no journal, nothing resumed).
        resume: Reuse the questions an earlier run in ``out_dir`` journalled.
    """
    started = time.perf_counter()
    kb = await build_knowledge_base(paths, embedder, options.chunk_size, options.chunk_overlap, options.progress)
    slots = plan(kb.graph, options.size, options.mix, options.styles, options.seed) if kb.graph.chunks else []
    journal = Journal(out_dir) if out_dir is not None else None
    run = _Run(kb, judge, embedder, options, journal, journal.read() if journal is not None and resume else {})
    rounds = 0
    try:
        await run.round(slots, "generating")
        for number in range(1, options.top_up_rounds + 1):
            extra = top_up(kb.graph, missing(kb.graph, slots, run.outcomes), options.styles, options.seed, slots)
            if not extra:
                break
            slots, rounds = slots + extra, number
            await run.round(slots, f"top-up {number}")
    finally:
        if journal is not None:
            journal.close()
    settings = {"options": _jsonable_options(options), "judge": judge.describe(), "paths": [str(p) for p in paths]}
    return Generation(kb, slots, run.outcomes, time.perf_counter() - started, settings, rounds)


def missing(graph: KnowledgeGraph, slots: Sequence[Slot], outcomes: Mapping[str, Outcome]) -> dict[str, int]:
    """Questions still missing per type: asked for (round 0) minus kept (by the type kept as).
    Two-chunk types are not topped up when the graph has no link (they cannot be written).

    Args:
        graph: The knowledge graph.
        slots: Every slot so far, each with its outcome in ``outcomes``.
        outcomes: What became of each slot, by id.
    """
    asked = Counter(s.type for s in slots if s.round == 0)
    kept = Counter(kept_type(outcomes[s.id]) for s in slots if outcomes[s.id].status == "kept")
    return {t: asked[t] - kept[t] for t in asked if asked[t] > kept[t] and (graph.links or t not in TWO_CHUNK_TYPES)}


def kept_type(outcome: Outcome) -> str:
    """The type a question is kept as (its sample's, which the type check may relabel)."""
    sample = outcome.sample or {}
    return str(sample.get("metadata", {}).get("type", outcome.slot.type))


@dataclass
class _Run:
    """What every round of a run shares: the knowledge base, the judge, the journal (and the
    records an earlier run left in it) and the outcomes so far."""

    kb: KnowledgeBase
    judge: LLMJudge
    embedder: BatchingEmbedder
    options: GenerateOptions
    journal: Journal | None
    records: dict[tuple[str, str], dict[str, Any]]
    outcomes: dict[str, Outcome] = field(default_factory=dict)

    async def round(self, slots: list[Slot], label: str) -> None:
        """Write the slots without an outcome (journalled ones are resumed), then reject the
        near-duplicates among all kept questions (the earliest stays)."""
        identity = {"judge": self.judge.identity(), "composed": METHODS}
        self.outcomes.update(_resumed(self.records, [s for s in slots if s.id not in self.outcomes], self.kb.graph, identity))
        todo = [slot for slot in slots if slot.id not in self.outcomes]

        async def job(slot: Slot) -> None:
            outcome = await generate_slot(slot, self.kb, self.judge, self.embedder)
            self.outcomes[slot.id] = outcome
            if self.journal is not None:
                self.journal.append(_record(outcome, slot.fingerprint(self.kb.graph, identity)))

        await LocalExecutor(self.options.concurrency, self.options.progress, label).run(todo, len(todo), job)
        await _drop_near_duplicates(slots, self.outcomes, self.embedder)


def _jsonable_options(options: GenerateOptions) -> dict[str, Any]:
    return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in options.__dict__.items() if k != "progress"}


def _record(outcome: Outcome, fingerprint: str) -> dict[str, Any]:
    return {
        "sample": outcome.slot.id, "metric": _JOURNAL_TAG, "fingerprint": fingerprint, "status": outcome.status,
        "generated": outcome.sample, "reason": outcome.reason, "detail": outcome.detail, "usage": outcome.usage.to_dict(),
    }  # fmt: skip


def _resumed(
    records: Mapping[tuple[str, str], dict[str, Any]], slots: list[Slot], graph: KnowledgeGraph, identity: dict[str, Any]
) -> dict[str, Outcome]:
    """The slots an earlier run journalled with the same fingerprint (failed ones are retried)."""
    found: dict[str, Outcome] = {}
    for slot in slots:
        record = records.get((slot.id, _JOURNAL_TAG))
        if not record or record.get("fingerprint") != slot.fingerprint(graph, identity) or record.get("status") not in ("kept", "rejected"):
            continue
        sample = record.get("generated")
        try:
            usage = Usage.from_dict(record.get("usage") or {})
        except TypeError:
            continue  # a damaged record: the slot is written again
        if isinstance(sample, dict):
            found[slot.id] = Outcome(slot, record["status"], sample, record.get("reason"), record.get("detail"), usage, True)
    return found


async def _drop_near_duplicates(slots: list[Slot], outcomes: dict[str, Outcome], embedder: BatchingEmbedder) -> None:
    kept = [s.id for s in slots if outcomes[s.id].status == "kept" and outcomes[s.id].sample is not None]
    if len(kept) < 2:
        return
    samples = [outcomes[i].sample or {} for i in kept]
    # A composed question is compared as its bridge question, which names its subject: two
    # descriptions of one person asked the same question (ClapNQ, 2026-12-04).
    vectors = await embedder.embed([s["metadata"].get("composition", {}).get("bridge_question") or s["user_input"] for s in samples])
    for sample_id, (earlier, cosine) in near_duplicates(kept, vectors).items():
        old = outcomes[sample_id]
        detail = f"near-duplicate of {earlier} (cosine {cosine:.2f})"
        outcomes[sample_id] = Outcome(old.slot, "rejected", old.sample, "near_duplicate", detail, old.usage, old.resumed)


def write_outputs(generation: Generation, out_dir: str | Path) -> dict[str, Any]:
    """Write the test set, the rejects, the chunks and the summary (atomically) into
    ``out_dir``, then remove the journal; return the summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_json_lines(out / TESTSET_FILE, generation.kept())
    write_json_lines(out / REJECTS_FILE, generation.rejected())
    chunks = generation.knowledge_base.graph.chunks
    write_json_lines(
        out / CHUNKS_FILE,
        ({"id": c.id, "document": c.document, "lang": c.lang, "headings": list(c.headings), "text": c.text} for c in chunks),
    )
    summary = generation.summary()
    write_json(out / SUMMARY_FILE, summary)
    (out / JOURNAL_FILE).unlink(missing_ok=True)
    return summary
