"""``ragmeter answer``: run your RAG pipeline over a test set, so that ``ragmeter eval`` can score it."""

from pathlib import Path
from typing import Annotated

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import fail, say
from ragmeter.cli.issues import print_issues
from ragmeter.cli.options import check_json_lines_out
from ragmeter.data import InputError, load_dataset
from ragmeter.data.files import write_json_lines
from ragmeter.run.answer_journal import AnswerJournal, left_to_ask
from ragmeter.run.pipeline_sources import PipelineSourceError, load_pipeline
from ragmeter.run.pipelines import DEFAULT_PIPELINE_CONCURRENCY, PipelineRun, run_pipeline
from ragmeter.run.sync import interruption, run_sync


@command("answer")
def answer_command(
    testset: Annotated[Path, typer.Argument(help="Test set: a file of samples with user_input (testset.jsonl from `ragmeter generate`).")],
    pipeline: Annotated[
        str,
        typer.Option(
            "--pipeline",
            "-p",
            help="Your RAG pipeline: module:function (question -> (contexts, answer) or a dict), module:factory() "
            '(called once to build it), or an http(s):// endpoint that takes {"question": ...} and returns '
            '{"answer": ..., "contexts": [...]}.',
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Samples with response and retrieved_contexts filled (JSON lines: .jsonl or .ndjson).")
    ] = Path("answered.jsonl"),
    concurrency: Annotated[int, typer.Option(min=1, help="Most questions asked at once.")] = DEFAULT_PIPELINE_CONCURRENCY,
    timeout: Annotated[float, typer.Option(min=0.001, help="Seconds per question before it counts as failed.")] = 120.0,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Ask every question again, ignoring the answers an interrupted run journalled.")
    ] = False,
) -> None:
    """Ask every question of the test set to your pipeline and write the samples with its
    answers and retrieved contexts; then run `ragmeter eval` on the output.

    A question whose call fails, times out or returns something malformed keeps no response
    and names the error in metadata.pipeline_error; the others go on. Each answer is
    journalled in <out>.journal as it comes: after an interruption, the same command asks
    only the questions not answered yet.
    """
    check_json_lines_out(out)
    try:
        dataset = load_dataset(testset)
    except InputError as exc:
        print_issues(exc.issues, written=False, refused=True)
        raise fail("the test set is not usable; no question was asked") from None
    if dataset.issues:
        say((f"{len(dataset.issues)} input issue(s):", "yellow"))
        print_issues(dataset.issues, written=False)
    if not dataset.samples:
        raise fail(f"{testset}: no valid sample to answer")
    try:
        function = load_pipeline(pipeline, timeout)
    except PipelineSourceError as exc:
        raise fail(str(exc)) from None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # what check_json_lines_out cannot foresee: a folder in /proc, a full disk
        raise fail(f"--out {out}: its folder {out.parent} cannot be created: {exc.strerror or exc}") from None
    journal = AnswerJournal(out, pipeline)
    try:
        if fresh:
            journal.remove()
        resumed = journal.resumed(dataset)
    except OSError as exc:  # a link planted at its name, a file that cannot be read
        raise fail(f"{journal.path}: cannot use the journal of answers: {exc.strerror or exc}") from None
    say(f"Answering {len(dataset)} questions with {pipeline} → {out}")
    if resumed:
        say(f"{len(resumed)} answered by an earlier run are kept from {journal.path} (--fresh asks them again)")
    try:
        run = run_sync(
            run_pipeline(
                function, left_to_ask(dataset, resumed), name=pipeline, concurrency=concurrency, timeout=timeout, on_answer=journal.record
            )
        )
    except KeyboardInterrupt as stop:
        kept, (said, code) = len(resumed) + journal.written, interruption(stop)
        say((said, "yellow"), f": {kept} answers are journalled in {journal.path}; run the same command again to ask the rest.")
        raise typer.Exit(code) from None
    finally:
        journal.close()
    asked = {loaded.key: loaded.sample for loaded in run.dataset}
    samples = [resumed[loaded.key][0] if loaded.key in resumed else asked[loaded.key] for loaded in dataset]
    try:
        write_json_lines(out, (sample.model_dump(exclude_none=True) for sample in samples))
    except OSError as exc:
        raise fail(f"--out {out}: cannot write: {exc.strerror or exc} (the answers stay journalled in {journal.path})") from None
    journal.remove()
    earlier = [line for _, lines in resumed.values() for line in lines]
    _report(run, earlier + run.warnings, len(samples), out)


def _report(run: PipelineRun, warnings: list[str], total: int, out: Path) -> None:
    """Print the refused reply keys, the failed questions and the count answered.

    Args:
        run: This run's pass over the questions not answered before.
        warnings: Every refused reply key, earlier runs' included.
        total: The questions in the test set.
        out: The file written.
    """
    for line in warnings[:5]:
        say(("  warning ", "yellow"), line)
    if len(warnings) > 5:
        say(f"  … and {len(warnings) - 5} more reply key(s) ignored")
    for key, error in list(run.errors.items())[:5]:
        say(("  failed ", "yellow"), f"{key}: {error}")
    if len(run.errors) > 5:
        say(f"  … and {len(run.errors) - 5} more (metadata.pipeline_error in {out})")
    answered = total - len(run.errors)
    say(f"{answered} of {total} questions answered in {run.seconds:.1f} s; wrote {out}.")
    if answered:
        say(f"Next: ragmeter eval {out} --out runs/answered")
