"""``ragmeter compare``: two runs, metric by metric, with paired statistics."""

from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any

import typer

from ragmeter.cli.app import command
from ragmeter.cli.console import console, fail, say, table
from ragmeter.decide.compare import A_BETTER, B_BETTER, NO_DIFFERENCE, NOT_COMPARED, Comparison, compare_runs
from ragmeter.report.compare import write_comparison
from ragmeter.report.formatting import format_interval, format_number, format_p, format_signed
from ragmeter.results import RunDirError
from ragmeter.run.outdir import OutputDirError


@command("compare")
def compare_command(
    a: Annotated[Path, typer.Argument(help="Run A (the reference): a directory written by `ragmeter eval`.")],
    b: Annotated[Path, typer.Argument(help="Run B (the candidate): differences are B - A.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for compare.md, compare.json and compare.html.")] = Path("compare-out"),
    alpha: Annotated[float, typer.Option(min=0.0001, max=0.5, help="Family-wise significance level (Holm across the metrics).")] = 0.05,
    permutations: Annotated[
        int, typer.Option(min=100, help="Random sign flips of the permutation test (exact enumeration up to 16 non-zero differences).")
    ] = 10_000,
    seed: Annotated[int, typer.Option(help="Seed of the permutations and of the bootstrap.")] = 0,
) -> None:
    """Compare two runs on their matched samples: mean difference with a paired bootstrap CI,
    paired permutation p-value with Holm correction across metrics, and the largest regressions.

    Samples are matched by id, else by question; unmatched and duplicate samples are listed.
    Writes compare.md, compare.json and compare.html to --out. Exit code 0 (a report, not a
    gate); 2 when no sample matches or no metric was evaluated in both runs.
    """
    try:
        comparison = compare_runs(a, b, alpha=alpha, n_permutations=permutations, seed=seed)
    except (RunDirError, ValueError) as exc:
        raise fail(f"cannot compare {a} and {b}: {exc}") from None
    if comparison.matching.to_dict()["n_matched"] == 0:  # a report of empty rows said "0 samples matched by nothing"
        raise fail(
            f"cannot compare {a} and {b}: no sample of one matches a sample of the other (by id or question): is it the same dataset?"
        )
    if not comparison.metrics:  # an empty table with exit 0 read as "no difference"
        raise fail(
            f"cannot compare {a} and {b}: no metric was evaluated in both runs "
            f"(A has {', '.join(comparison.metrics_only_in_a) or 'none'}; B has {', '.join(comparison.metrics_only_in_b) or 'none'})"
        )
    try:
        paths = write_comparison(comparison, out)
    except OutputDirError as exc:
        raise fail(str(exc)) from None
    console.print(comparison_table(comparison))
    for warning in comparison.warnings:
        say(("warning", "bold yellow"), f": {warning}")
    for line in summary_lines(comparison):
        say(line)
    say(f"Wrote {', '.join(str(p) for p in paths)}")


def comparison_table(comparison: Comparison) -> Any:
    """The per-metric comparison as a terminal table."""
    styles = {B_BETTER: "green", A_BETTER: "red"}
    rows = []
    for m in comparison.metrics:
        rows.append(
            (
                m.metric + (f" ({m.unit})" if m.unit else ""),
                m.n_pairs,
                format_number(m.mean_a, m.unit),
                format_number(m.mean_b, m.unit),
                format_signed(m.mean_diff, m.unit),
                format_interval(m.ci_low, m.ci_high, m.unit, signed=True),
                format_p(m.p_permutation),
                format_p(m.p_holm),
                (m.verdict, styles[m.verdict]) if m.verdict in styles else m.verdict,
            )
        )
    columns = ["metric", *((c, "right") for c in ("pairs", "mean A", "mean B", "B − A", "95% CI", "p", "p Holm")), "verdict"]
    return table(f"B ({comparison.label_b}) − A ({comparison.label_a})", columns, rows)


def summary_lines(comparison: Comparison, limit: int = 8) -> list[str]:
    """Lines on the matching, left-out samples and verdicts."""
    match = comparison.matching.to_dict()
    lines = [
        f"{match['n_matched']} samples matched by {match['by']} ({match['n_a']} in A, {match['n_b']} in B); "
        f"{match['n_unmatched_a']} of A and {match['n_unmatched_b']} of B unmatched; "
        f"{match['n_duplicate_samples_a']} of A and {match['n_duplicate_samples_b']} of B left out as duplicates."
    ]

    def keys(items: list[str]) -> str:
        return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")

    for side in ("a", "b"):
        if match[f"unmatched_{side}"]:
            lines.append(f"  unmatched in {side.upper()}: {keys([u['key'] for u in match[f'unmatched_{side}']])}")
        if match[f"duplicates_{side}"]:
            lines.append(f"  duplicates in {side.upper()}: {keys([' = '.join(d['keys']) for d in match[f'duplicates_{side}']])}")
    for m in comparison.metrics:
        e = m.excluded
        if e["count"]:
            lines.append(
                f"  {m.metric}: {e['count']} pair(s) left out (unscored in A {e['unscored_in_a']}, in B {e['unscored_in_b']}, "
                f"in both {e['unscored_in_both']})"
            )
    if comparison.metrics_only_in_a or comparison.metrics_only_in_b:
        lines.append(
            f"  not compared: only in A {', '.join(comparison.metrics_only_in_a) or '–'}; "
            f"only in B {', '.join(comparison.metrics_only_in_b) or '–'}"
        )
    by_verdict: dict[str, list[str]] = defaultdict(list)
    for m in comparison.metrics:
        by_verdict[m.verdict].append(m.metric)
    alpha = comparison.settings["alpha"]
    lines.append(
        f"Verdicts (Holm-adjusted permutation p < {alpha:g}): "
        + "; ".join(f"{verdict}: {', '.join(by_verdict[verdict]) or '–'}" for verdict in (B_BETTER, A_BETTER, NO_DIFFERENCE))
        + (f"; {NOT_COMPARED}: {', '.join(by_verdict[NOT_COMPARED])}" if by_verdict[NOT_COMPARED] else "")
    )
    return lines
