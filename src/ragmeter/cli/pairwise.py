"""``ragmeter pairwise``: which of two systems' responses is better, judged in both orders."""

from pathlib import Path
from typing import Annotated, Any

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import console, fail, say, table
from ragmeter.cli.issues import print_issues
from ragmeter.cli.options import JudgeOptions, judge_options
from ragmeter.data import InputError
from ragmeter.data.issues import describe_briefly
from ragmeter.decide import pairwise
from ragmeter.decide.pairs import load_side, match_samples, read_preferences
from ragmeter.judges import JudgeError
from ragmeter.report.pairwise import summary_rows, write_report
from ragmeter.results import RunDirError
from ragmeter.run.outdir import OutputDirError, check_usable, prepare


@command("pairwise")
@judge_options
def pairwise_command(
    a: Annotated[Path, typer.Argument(help="System A: a sample file (.jsonl, .json, .csv, .parquet) or a run directory.")],
    b: Annotated[Path, typer.Argument(help="System B: same questions (matched by id, else by question).")],
    criterion: Annotated[str, typer.Option(help="What 'better' means, e.g. 'Factually correct and answers the question.'")] = (
        pairwise.DEFAULT_CRITERION
    ),
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for pairwise.json and pairwise.md.")] = Path("ragmeter-pairwise"),
    margin: Annotated[float, typer.Option(min=0.0, max=0.49, help="P(first better) within 0.5 ± margin counts as no preference.")] = 0.0,
    reference_metric: Annotated[
        str | None, typer.Option(help="Reference for length bias: a metric of both run directories (or a numeric metadata field).")
    ] = None,
    labels: Annotated[Path | None, typer.Option(help='Reference labels, JSONL: {"id": ..., "better": "A" | "B" | "tie"}.')] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Pairs judged at once.")] = pairwise.DEFAULT_CONCURRENCY,
    *,
    judge_options: JudgeOptions,
) -> None:
    """Judge which of two systems' responses to the same questions is better, in both orders.

    Reports the win rate of B over A (95% Wilson interval, ties count half), the tie rate,
    the judge's position consistency and its length bias; writes pairwise.json and pairwise.md.
    """
    try:
        _, settings = judge_options.resolve()
        side_a, side_b = load_side(a), load_side(b)
        reference = read_preferences(labels) if labels else None
    except InputError as exc:
        print_issues(exc.issues, written=False, refused=True)
        raise fail("input is not usable; nothing was judged") from None
    except (ValueError, OSError, RunDirError) as exc:
        raise fail(str(exc)) from None
    print_issues([*side_a.issues, *side_b.issues], written=False)  # rows skipped (a duplicate id...): said, as eval says them
    pairs, matching = match_samples(side_a, side_b, reference_metric=reference_metric, labels=reference.by_id if reference else None)
    matching["label_issues"] = reference.problems if reference else []
    for problem in matching["label_issues"]:
        say(f"  {problem}")
    if matching["labels_unmatched"]:
        unmatched = matching["labels_unmatched"]
        shown = ", ".join(describe_briefly(k) for k in unmatched[:10]) + (" …" if len(unmatched) > 10 else "")
        say((f"warning: {len(unmatched)} label(s) name no pair of samples and give no reference:", "yellow"), f" {shown}")
    if not pairs:  # it said "no question has a response on both sides (...); matched by nothing"
        raise fail(f"nothing to judge: {_why_no_pair(a, b, matching)}")
    try:
        check_usable(out)  # a bad --out is said before the judge is built and called, not after them
        llm = settings.build()
        prepare(out)  # only now: a judge that cannot be built leaves no empty folder behind
    except OutputDirError as exc:
        raise fail(str(exc)) from None
    except JudgeError as exc:
        raise fail(f"pairwise judging needs an LLM judge: {exc}") from None
    say(f"Judging {len(pairs)} pairs in both orders ({2 * len(pairs)} judge calls); judge {llm.backend}: {llm.model}")
    report = pairwise.judge_pairs(pairs, llm, criterion, margin=margin, concurrency=concurrency, close=True)
    report.matching = matching
    report.settings.update(a=str(a), b=str(b))
    json_path, md_path = write_report(report, out)
    console.print(table(f"B ({b}) vs A ({a})", ["measure", ("value", "right")], summary_rows(report.statistics)))
    leftovers = (
        ("in A only", [u["key"] for u in matching["unmatched_a"]]),
        ("in B only", [u["key"] for u in matching["unmatched_b"]]),
        ("unusable", [f"{u['side']} {u['key']} ({u['reason']})" for u in matching["unusable"]]),
    )
    for title, keys in leftovers:
        if keys:
            say((f"{len(keys)} sample(s) {title}:", "yellow"), f" {', '.join(keys[:10])}{' …' if len(keys) > 10 else ''}")
    say(f"Wrote {json_path} and {md_path}")


def _why_no_pair(a: Path, b: Path, matching: dict[str, Any]) -> str:
    """Why no sample of ``a`` was paired with one of ``b``, from :func:`match_samples`'s report
    ``matching``: the rule, each side's samples, and how many each way of missing a pair left out."""
    sides = {side: matching[f"n_{side.lower()}"] + sum(u["side"] == side for u in matching["unusable"]) for side in ("A", "B")}
    duplicates = matching["n_duplicate_samples_a"] + matching["n_duplicate_samples_b"]
    said = [f"A has {sides['A']} sample(s), B {sides['B']}"]
    if matching["n_unmatched_a"] or matching["n_unmatched_b"]:
        said.append(f"{matching['n_unmatched_a']} of A and {matching['n_unmatched_b']} of B have no counterpart on the other side")
    if matching["unusable"]:
        said.append(f"{len(matching['unusable'])} left out without a question or a response")
    if duplicates:
        said.append(f"{duplicates} left out as duplicates (an id or question used twice on one side)")
    return f"no sample of {a} pairs with one of {b} (samples pair by id, else by question, and need a question and a response): {'; '.join(said)}"
