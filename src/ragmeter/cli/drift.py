"""``ragmeter drift``: has the traffic or the knowledge base changed? Exit code 1 when it has
(for CI or a scheduler), 0 when not; ``--json`` writes the findings for the next step."""

from pathlib import Path
from typing import Annotated, Any

import typer

from ragmeter.cli.app import command, group
from ragmeter.cli.console import fail, say
from ragmeter.data import InputError, load_dataset
from ragmeter.data.files import write_json

CHANGED = 1

drift = group("drift", "Has the traffic or the knowledge base changed since a reference? Exit code 1 when it has.")

JsonOption = Annotated[Path | None, typer.Option("--json", help="Write the findings to this JSON file (also when nothing changed).")]


def _questions(path: Path) -> list[str]:
    """The questions (``user_input``) of a samples file (any format ``ragmeter eval`` reads)."""
    try:
        dataset = load_dataset(path)
    except InputError as exc:
        first = exc.issues[0] if exc.issues else None
        raise fail(f"{path}: not usable: {first.message if first else exc}") from None
    questions = [s.sample.user_input for s in dataset.samples if s.sample.user_input]
    if not questions:
        raise fail(f"{path}: no sample has a question (user_input)")
    return questions


def _write(path: Path | None, document: dict[str, Any]) -> None:
    if path is not None:
        try:
            write_json(path, document)
        except OSError as exc:
            raise fail(f"{path}: cannot write: {exc.strerror or exc}") from None


@command("queries", group=drift)
def queries_command(
    reference: Annotated[
        Path, typer.Argument(help="Samples of the reference window (their user_input), e.g. from `ragmeter traces export`.")
    ],
    current: Annotated[Path, typer.Argument(help="Samples of the recent window.")],
    alpha: Annotated[float, typer.Option(min=0.0, max=0.5, help="Significance level of the alarm.")] = 0.01,
    permutations: Annotated[int, typer.Option(min=99, help="Random relabellings behind the p-value.")] = 500,
    json_out: JsonOption = None,
) -> None:
    """Query drift: do the recent questions come from another distribution (a new topic)?"""
    from ragmeter.judges.embeddings import USEEncoder
    from ragmeter.monitor.drift import query_drift

    try:
        found = query_drift(_questions(reference), _questions(current), USEEncoder().encode, alpha=alpha, permutations=permutations)
    except ValueError as exc:
        raise fail(str(exc)) from None
    _write(json_out, {"kind": "query_drift", **found.to_dict()})
    verdict = ("drift", "bold red") if found.drift else ("no drift", "green")
    say(verdict, f": p = {found.p_value:.4f} (alpha {alpha}), {found.n_reference} reference and {found.n_current} recent questions")
    for topic in found.grown_topics:
        say(
            f"  grown topic: {topic.reference_share:.0%} → {topic.current_share:.0%} (p = {topic.p_value:.3g}), e.g. ",
            (topic.examples[0], "bold"),
        )
    if found.drift:
        raise typer.Exit(CHANGED)


@command("kb", group=drift)
def kb_command(
    folder: Annotated[Path, typer.Argument(help="The knowledge base's folder.")],
    baseline: Annotated[Path, typer.Option(help="The snapshot to compare with (written when missing).")],
    update: Annotated[bool, typer.Option(help="After comparing, make the current state the baseline.")] = False,
    json_out: JsonOption = None,
) -> None:
    """Knowledge-base change: documents added, removed or edited since the baseline snapshot."""
    from ragmeter.monitor.kb import SnapshotError, compare_snapshots, read_snapshot, snapshot, write_snapshot

    try:
        current = snapshot(folder)
        if not baseline.exists():
            write_snapshot(baseline, current)
            say(f"No baseline yet: wrote {baseline} ({len(current)} documents).")
            return
        change = compare_snapshots(read_snapshot(baseline), current)
        if update:
            write_snapshot(baseline, current)
    except SnapshotError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"{baseline}: cannot write: {exc.strerror or exc}") from None
    _write(json_out, {"kind": "knowledge_base_change", **change.to_dict()})
    say(f"{len(change.added)} added, {len(change.removed)} removed, {len(change.edited)} edited, {change.unchanged} unchanged.")
    for label, paths in (("added", change.added), ("removed", change.removed), ("edited", change.edited)):
        for path in paths[:20]:
            say(f"  {label}: ", (path, "bold"))
    if change.changed:
        raise typer.Exit(CHANGED)
