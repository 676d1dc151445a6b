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
from ragmeter.run.pipeline_sources import PipelineSourceError, load_pipeline
from ragmeter.run.pipelines import DEFAULT_PIPELINE_CONCURRENCY, run_pipeline
from ragmeter.run.sync import INTERRUPTED, run_sync


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
) -> None:
    """Ask every question of the test set to your pipeline and write the samples with its
    answers and retrieved contexts; then run `ragmeter eval` on the output.

    A question whose call fails, times out or returns something malformed keeps no response
    and names the error in metadata.pipeline_error; the others go on.
    """
    check_json_lines_out(out)
    try:
        dataset = load_dataset(testset)
    except InputError as exc:
        print_issues(exc.issues, written=False)
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
    say(f"Answering {len(dataset)} questions with {pipeline} → {out}")
    try:
        run = run_sync(run_pipeline(function, dataset, name=pipeline, concurrency=concurrency, timeout=timeout))
    except KeyboardInterrupt:
        say(("interrupted", "yellow"), ": nothing was written; run the same command again.")
        raise typer.Exit(INTERRUPTED) from None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_json_lines(out, (loaded.sample.model_dump(exclude_none=True) for loaded in run.dataset))
    except OSError as exc:
        raise fail(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    for line in run.warnings[:5]:
        say(("  warning ", "yellow"), line)
    if len(run.warnings) > 5:
        say(f"  … and {len(run.warnings) - 5} more reply key(s) ignored")
    for key, error in list(run.errors.items())[:5]:
        say(("  failed ", "yellow"), f"{key}: {error}")
    if len(run.errors) > 5:
        say(f"  … and {len(run.errors) - 5} more (metadata.pipeline_error in {out})")
    answered = len(run.dataset) - len(run.errors)
    say(f"{answered} of {len(run.dataset)} questions answered in {run.seconds:.1f} s; wrote {out}.")
    if answered:
        say(f"Next: ragmeter eval {out} --out runs/answered")
