"""Printing input issues, grouped so that a thousand bad rows of one kind take one line."""

from collections import defaultdict
from collections.abc import Sequence

from ragmeter.cli.console import say
from ragmeter.data import InputIssue


def print_issues(issues: Sequence[InputIssue], limit: int = 12, written: bool = True, refused: bool = False, unit: str = "row") -> None:
    """Issues grouped by source, field and message, with the first locations of each.

    Args:
        issues: The issues to print.
        limit: Most groups shown.
        written: Whether the run wrote ``input_issues.jsonl`` (the pointer to it is shown
            only then).
        refused: Whether the issues stopped the command (an :class:`InputError`): no row was
            skipped or kept, so neither is said.
        unit: What an issue's location is, in "(row skipped)": ``"row"`` (a sample), ``"line"``
            (a span of a trace file), ``"transcript"``.
    """
    groups: dict[tuple[str, str | None, str, bool], list[str]] = defaultdict(list)
    for issue in issues:
        groups[(issue.source, issue.field, issue.message, issue.skipped)].append(issue.location)
    for shown, ((source, field, message, skipped), locations) in enumerate(groups.items()):
        if shown == limit:
            left = len(groups) - limit
            more = f"  … and {left} more kind{'s' if left > 1 else ''} of issue"
            say(more + (" (see input_issues.jsonl)" if written else ""))
            break
        where = ", ".join(locations[:5]) + (f" and {len(locations) - 5} more" if len(locations) > 5 else "")
        field_text = f", field '{field}'" if field else ""
        said = f"  {source}, {where}{field_text}: {message}"
        if refused:
            say(said)
        else:
            say(f"{said} ", (f"({unit} skipped)" if skipped else "(sample kept)", "dim"))
