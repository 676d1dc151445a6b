"""``ragmeter generate``: a test set from a knowledge base, written and checked by the LLM judge."""

from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import console, fail, say, table
from ragmeter.cli.options import JudgeOptions, judge_options
from ragmeter.data.issues import InputIssue, describe_briefly
from ragmeter.generate import GenerateOptions, Generation, agenerate, write_outputs
from ragmeter.generate.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, check_chunking
from ragmeter.generate.knowledge_base import KnowledgeBase
from ragmeter.generate.plan import DEFAULT_MIX, DEFAULT_STYLES, STYLES, TYPES, parse_mix
from ragmeter.generate.runner import REJECTS_FILE, TESTSET_FILE
from ragmeter.judges import BatchingEmbedder, JudgeError, LLMJudge
from ragmeter.judges.cache import EmbeddingStore
from ragmeter.judges.dry_run import estimated_local_seconds, stand_in
from ragmeter.judges.embeddings import USEEncoder
from ragmeter.judges.metering import PriceTable, Usage
from ragmeter.run.outdir import OutputDirError, locked
from ragmeter.run.sync import interruption, run_sync

_MIX_HELP = ", ".join(f"{k}={v:g}" for k, v in DEFAULT_MIX.items())
_STYLES_HELP = ", ".join(f"{k}={v:g}" for k, v in DEFAULT_STYLES.items())


@command("generate")
@judge_options
def generate_command(
    docs: Annotated[list[Path], typer.Argument(help="Knowledge base: files or folders of .md, .txt, .html, .pdf, .jsonl documents.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Output directory: testset.jsonl, rejects.jsonl, chunks.jsonl, summary.json.")
    ] = Path("testset"),
    size: Annotated[
        int, typer.Option(min=1, help="Questions asked for; those the filter rejects are replaced (see --top-up-rounds).")
    ] = 20,
    mix: Annotated[str | None, typer.Option(help=f"Weights of the question types; default {_MIX_HELP}.")] = None,
    styles: Annotated[str | None, typer.Option(help=f"Weights of the query styles; default {_STYLES_HELP}.")] = None,
    chunk_size: Annotated[int, typer.Option(help="Most characters per chunk.")] = DEFAULT_CHUNK_SIZE,
    chunk_overlap: Annotated[
        int, typer.Option(help="Characters repeated between consecutive pieces of a section.")
    ] = DEFAULT_CHUNK_OVERLAP,
    seed: Annotated[int, typer.Option(help="Seed of the random choices (chunks, styles, personas).")] = 0,
    concurrency: Annotated[int, typer.Option(min=1, help="Most questions written at once.")] = 4,
    top_up_rounds: Annotated[int, typer.Option(min=0, max=5, help="Most extra rounds replacing rejected questions (0: none).")] = 2,
    dry_run: Annotated[bool, typer.Option(help="Estimate the judge's calls, tokens and cost; call no model and write nothing.")] = False,
    fresh: Annotated[bool, typer.Option(help="Ignore the questions journalled by an interrupted run in --out.")] = False,
    progress: Annotated[
        bool | None, typer.Option("--progress/--no-progress", help="Progress bar (default: on when stderr is a terminal).")
    ] = None,
    *,
    judge_options: JudgeOptions,
) -> None:
    """Generate a test set from documents: questions of several types and styles, in the
    documents' language, each checked by a quality filter.

    Re-running the same command after an interruption (even a kill) resumes: questions
    journalled in --out are reused.
    """
    try:
        options = _options(size, mix, styles, chunk_size, chunk_overlap, seed, concurrency, progress, top_up_rounds)
        _, settings = judge_options.resolve()
    except ValueError as exc:
        raise fail(str(exc)) from None
    cache = settings.open_cache()
    try:
        judge = settings.build(cache)
    except JudgeError as exc:
        raise fail(f"generate needs an LLM judge: {exc}") from None
    embedder = BatchingEmbedder(store=EmbeddingStore(cache, USEEncoder.model_name) if cache is not None else None)
    if dry_run:
        dry = stand_in(judge, settings.verdict_mode, PriceTable(settings.prices))
        # progress stays: embedding a large knowledge base's chunks takes minutes (8 s a MB) before the estimate
        estimate = GenerateOptions(**{**options.__dict__, "top_up_rounds": 0})
        _print_estimate(_run(docs, dry, embedder, estimate, None, False), top_up_rounds)
        return
    try:
        with locked(out):
            say(f"Generating {size} questions from {', '.join(str(d) for d in docs)} → {out}; judge {judge.backend}: {judge.model}")
            generation = _run(docs, judge, embedder, options, out, not fresh)
            _print_summary(generation, write_outputs(generation, out), out)
    except OutputDirError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt as stop:
        said, code = interruption(stop)
        say((said, "yellow"), f": finished questions are journalled in {out}; run the same command again to resume.")
        raise typer.Exit(code) from None


def _options(
    size: int,
    mix: str | None,
    styles: str | None,
    chunk_size: int,
    chunk_overlap: int,
    seed: int,
    concurrency: int,
    progress: bool | None,
    top_up_rounds: int,
) -> GenerateOptions:
    """The run's settings from the command's options of the same names (``progress``
    ``None``: on when the console is a terminal).

    Raises:
        ValueError: A mix names an unknown type or style, or the chunking is out of range.
    """
    check_chunking(chunk_size, chunk_overlap)
    return GenerateOptions(
        size=size,
        mix=parse_mix(mix, TYPES, DEFAULT_MIX, "--mix"),
        styles=parse_mix(styles, STYLES, DEFAULT_STYLES, "--styles"),
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        seed=seed,
        concurrency=concurrency,
        top_up_rounds=top_up_rounds,
        progress=console.is_terminal if progress is None else progress,
    )


def _run(
    docs: list[Path], judge: LLMJudge, embedder: BatchingEmbedder, options: GenerateOptions, out: Path | None, resume: bool
) -> Generation:
    """Generate, then release the judge whatever happens; no document at all is a usage error."""

    async def run() -> Generation:
        try:
            return await agenerate(docs, judge, embedder, options, out, resume)
        finally:
            await judge.aclose()

    generation = run_sync(run())
    _print_issues(generation.knowledge_base.issues, written=out is not None)
    if not generation.knowledge_base.graph.chunks:
        raise fail(_nothing_to_ask(generation.knowledge_base))
    return generation


def _nothing_to_ask(kb: KnowledgeBase) -> str:
    """Why ``kb``, which has no chunk, gave no question: no document was read, or those read held
    only boilerplate (:mod:`ragmeter.generate.boilerplate`, named by id) or no words."""
    if not kb.documents:
        return "no readable document in the knowledge base; nothing was generated"
    dropped = list(kb.boilerplate.get("dropped_document_ids", []))
    if not dropped:
        return f"the {kb.documents} document(s) read hold no words to ask about; nothing was generated"
    named = ", ".join(describe_briefly(d) for d in dropped[:5]) + (f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
    return (
        f"the {kb.documents} document(s) read hold nothing but boilerplate (wiki notices, sentences repeated across documents) "
        f"or too few words, and were dropped: {named}; nothing was generated"
    )


def _print_issues(issues: list[InputIssue], written: bool) -> None:
    """The first 20 skipped files or lines of ``issues``, then the first 20 notes on documents
    that were read (a document id changed); ``written``: summary.json, which lists them all,
    is written (not so with --dry-run, which writes nothing)."""
    where = "see summary.json" if written else "a run without --dry-run lists them all in summary.json"
    skipped = [issue for issue in issues if issue.skipped]
    noted = [issue for issue in issues if not issue.skipped]
    for listed, heading in ((skipped, "file(s) or line(s) skipped"), (noted, "document(s) read, with a note")):
        if listed:
            say((f"{len(listed)} {heading}:", "yellow"))
        for issue in listed[:20]:
            say(f"  {issue}")
        if len(listed) > 20:
            say(f"  … and {len(listed) - 20} more ({where})")


def _relabelled_into(relabelled: dict[str, int]) -> Counter[str]:
    """Kept questions per type they joined by relabelling, from ``"<asked> -> <kept as>"`` counts."""
    joined: Counter[str] = Counter()
    for move, n in relabelled.items():
        joined[move.split(" -> ")[1]] += n
    return joined


def _mix_row(name: str, row: dict[str, Any], joined: int) -> tuple[str, ...]:
    """One row of a mix table. The kept share counts only questions asked as ``name`` and kept
    as it; ``joined`` questions the type check moved here from another type are shown apart."""
    kept = f"{row['kept']}" + (f" ({joined} relabelled in)" if joined else "")
    share = f"{(row['kept'] - joined) / row['asked']:.0%}" if row["asked"] else "-"
    return (name, str(row["asked"]), str(row["generated"]), kept, share)


def _print_mix(summary: dict[str, Any], key: str, title: str) -> None:
    """The mix table of ``summary[key]`` (``by_type`` or ``by_style``) with a total row."""
    joined = _relabelled_into(summary["relabelled"]) if key == "by_type" else Counter()
    rows = [_mix_row(name, row, joined[name]) for name, row in summary[key].items()]
    rows.append(_mix_row("total", summary, 0))
    columns = [title, ("asked", "right"), ("generated", "right"), ("kept", "right"), ("kept share", "right")]
    console.print(table(f"Mix by {title}", columns, rows))


def _print_summary(generation: Generation, summary: dict[str, Any], out: Path) -> None:
    for key, title in (("by_type", "question type"), ("by_style", "query style")):
        _print_mix(summary, key, title)
    if summary["rounds"]:
        say(
            f"{summary['rounds']} top-up round(s) replaced rejected questions: {summary['attempted']} written for {summary['asked']} asked."
        )
    if summary["relabelled"]:
        say(
            "Kept under another type (its answer is copied from one sentence, or it has no word of its type): "
            + ", ".join(f"{k} {n}" for k, n in summary["relabelled"].items())
        )
    if summary["reasons"]:
        say("Rejected or not generated: " + ", ".join(f"{reason} {n}" for reason, n in summary["reasons"].items()))
    graph = summary["graph"]
    say(f"{summary['documents']} documents, {graph['chunks']} chunks, {graph['links']} links in the knowledge graph.")
    dropped = summary["boilerplate"]
    if dropped["repeated_sentences"] or dropped["template_notices"]:
        say(
            f"Boilerplate dropped before chunking: {dropped['template_notices']} wiki maintenance notice(s), "
            f"{dropped['repeated_sentences']} sentence(s) repeated across documents; "
            f"{dropped['documents_dropped']} document(s) had nothing else and were dropped."
        )
    usage = Usage.from_dict(summary["usage"])
    speed = summary["generated_per_minute"]
    if not usage.calls:  # a speed of cache reads says nothing about the judge
        pace = ": every judge answer came from the cache." if usage.cached_calls else "."
    else:
        pace = f", {speed:.1f} questions per minute" + (" (cache hits included)." if usage.cached_calls else ".") if speed else "."
    say(
        f"{usage.calls} judge calls ({usage.cached_calls} from the cache), {summary['resumed']} questions resumed from the journal, "
        f"{summary['seconds']:.1f} s{pace}"
    )
    say(f"Wrote {out / TESTSET_FILE} ({summary['kept']} questions) and {out / REJECTS_FILE} (with the reasons).")


def _print_estimate(generation: Generation, top_up_rounds: int) -> None:
    summary = generation.summary()
    usage = Usage.from_dict(summary["usage"])
    local = generation.settings["judge"].get("backend") == "local"
    say(f"Estimate for {summary['asked']} questions (no model was called; every check counted as if it ran):")
    say(f"  {usage.calls:,} judge calls, {usage.prompt_tokens:,} prompt tokens, {usage.completion_tokens:,} output tokens")
    if local:
        say(f"  the local judge would need roughly {estimated_local_seconds(usage) / 60:.0f} min on 2 CPU cores (before cache hits)")
    elif usage.cost_usd is None:
        say("  no price known for the judge's model: pass --prices to get a cost")
    else:
        say(f"  cost about ${usage.cost_usd:.4f}")
    if top_up_rounds:
        say(f"  plus up to {top_up_rounds} top-up round(s) for the questions the filter rejects (each at most the same again)")
