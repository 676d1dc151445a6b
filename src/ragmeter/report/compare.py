"""The comparison of two runs as ``compare.md``, ``compare.json`` and ``compare.html``.

Renderers take the comparison's JSON document (what ``compare.json`` holds; see
:meth:`ragmeter.decide.compare.Comparison.to_dict`), so a stored comparison renders the
same as a fresh one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ragmeter.data.files import write_json, write_problem, write_text
from ragmeter.report.formatting import format_interval, format_number, format_p, format_signed
from ragmeter.report.html import environment
from ragmeter.report.markdown import md_code, md_text
from ragmeter.run.outdir import OutputDirError, prepare

COMPARE_MD = "compare.md"
COMPARE_JSON = "compare.json"
COMPARE_HTML = "compare.html"
_WINNERS = ("B better", "A better")


class HasDocument(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def _ci(m: dict[str, Any]) -> str:
    return format_interval(m["ci_low"], m["ci_high"], m["unit"], signed=True)


def render_markdown(document: dict[str, Any]) -> str:
    """The comparison as Markdown (for pull requests and CI logs)."""
    s, match = document["settings"], document["matching"]
    lines = [
        "# ragmeter comparison",
        "",
        f"**A**: {md_code(document['a']['label'])} ({document['a']['run'].get('n_samples')} samples) · "
        f"**B**: {md_code(document['b']['label'])} ({document['b']['run'].get('n_samples')} samples)",
        "",
        f"{match['n_matched']} samples matched by {match['by']}; "
        f"{match['n_unmatched_a']} of A and {match['n_unmatched_b']} of B unmatched; "
        f"{match['n_duplicate_samples_a']} of A and {match['n_duplicate_samples_b']} of B left out as duplicates.",
        "",
        *(line for warning in document["warnings"] for line in (f"> **Warning**: {md_text(warning, 1000)}", "")),
        f"Differences are B − A over matched samples scored in both runs. 95% CI: paired bootstrap ({s['n_resamples']} resamples). "
        f"p: paired sign-flip permutation test (two-sided; exact up to {s['exact_permutation_max_n']} non-zero differences, "
        f"else {s['n_permutations']} random flips), Holm-adjusted across the {len(document['metrics'])} metrics; "
        f"a side wins when the adjusted p < {s['alpha']}. Wilcoxon p is for information.",
        "",
        "| metric | pairs | mean A | mean B | B − A | 95% CI | p | p (Holm) | p (Wilcoxon) | verdict | excluded (unscored) |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|",
    ]
    for m in document["metrics"]:
        unit = m["unit"]
        name = md_code(m["metric"], cell=True) + (
            f" ({md_text(unit)}, {'higher' if m['higher_is_better'] else 'lower'} is better)" if unit else ""
        )
        verdict = f"**{m['verdict']}**" if m["verdict"] in _WINNERS else m["verdict"]
        lines.append(
            f"| {name} | {m['n_pairs']} | {format_number(m['mean_a'], unit)} | {format_number(m['mean_b'], unit)} | "
            f"{format_signed(m['mean_diff'], unit)} | {_ci(m)} | {format_p(m['p_permutation'])} | {format_p(m['p_holm'])} | "
            f"{format_p(m['p_wilcoxon'])} | {verdict} | {m['excluded']['count']} |"
        )
    lines += ["", *_notes(document), *_excluded(document), *_regressions(document), *_matching_markdown(match)]
    return "\n".join(lines).rstrip() + "\n"


def _notes(document: dict[str, Any]) -> list[str]:
    notes = [f"- {md_code(m['metric'])}: {md_text(m['note'], 400)}" for m in document["metrics"] if m["note"]]
    for side in ("a", "b"):
        only = document[f"metrics_only_in_{side}"]
        if only:
            notes.append(f"- Only in {side.upper()} (not compared): {', '.join(f'{md_code(x)}' for x in only)}")
    return ["Notes:", "", *notes, ""] if notes else []


def _excluded(document: dict[str, Any]) -> list[str]:
    excluded = [m for m in document["metrics"] if m["excluded"]["count"]]
    if not excluded:
        return []
    lines = [
        "## Pairs left out because a side is unscored",
        "",
        "| metric | unscored in A | unscored in B | in both | keys |",
        "|---|---:|---:|---:|---|",
    ]
    for m in excluded:
        e = m["excluded"]
        keys = ", ".join(md_code(k, 60, cell=True) for k in e["keys"][:10]) + (
            f" and {len(e['keys']) - 10} more" if len(e["keys"]) > 10 else ""
        )
        lines.append(
            f"| {md_code(m['metric'], cell=True)} | {e['unscored_in_a']} | {e['unscored_in_b']} | {e['unscored_in_both']} | {keys} |"
        )
    return [*lines, ""]


def _regressions(document: dict[str, Any]) -> list[str]:
    lines = ["## Largest regressions", ""]
    shown = False
    for m in document["metrics"]:
        if not m["top_regressions"]:
            continue
        shown = True
        unit = m["unit"]
        lines += [f"### {md_code(m['metric'])}", "", "| sample | question | A | B | B − A |", "|---|---|---:|---:|---:|"]
        for r in m["top_regressions"]:
            lines.append(
                f"| {md_code(r['key'], 60, cell=True)} | {md_text(r['question'], 100)} | {format_number(r['a'], unit)} | "
                f"{format_number(r['b'], unit)} | {format_signed(r['diff'], unit)} |"
            )
        lines.append("")
    return lines if shown else [*lines, "No matched sample scored worse in B.", ""]


def _matching_markdown(match: dict[str, Any], limit: int = 50) -> list[str]:
    lines: list[str] = []
    for side in ("a", "b"):
        rows = match[f"unmatched_{side}"]
        if rows:
            lines += [f"## Unmatched samples of {side.upper()} ({len(rows)})", ""]
            lines += [f"- {md_code(r['key'], 80)} {md_text(r['question'], 100)}: {md_text(r['reason'])}" for r in rows[:limit]]
            if len(rows) > limit:
                lines.append(f"- … and {len(rows) - limit} more (see {COMPARE_JSON})")
            lines.append("")
    for side in ("a", "b"):
        rows = match[f"duplicates_{side}"]
        if rows:
            lines += [f"## Duplicates in {side.upper()}, left out ({sum(len(r['keys']) for r in rows)} samples)", ""]
            lines += [f"- {r['by']} {md_text(r['value'], 100)}: {', '.join(f'{md_code(k, 60)}' for k in r['keys'])}" for r in rows[:limit]]
            if len(rows) > limit:
                lines.append(f"- … and {len(rows) - limit} more (see {COMPARE_JSON})")
            lines.append("")
    return lines


def render_html(document: dict[str, Any]) -> str:
    """The comparison as one self-contained HTML page (no script, no external resource;
    every value from the data is escaped by Jinja2's autoescaping)."""
    rows = [
        {**m, "forest": _forest(m), "ci": _ci(m), "diff": format_signed(m["mean_diff"], m["unit"]), "significant": m["verdict"] in _WINNERS}
        for m in document["metrics"]
    ]
    counts = document["verdicts"]
    view = {
        "label_a": document["a"]["label"],
        "label_b": document["b"]["label"],
        "run_a": document["a"]["run"],
        "run_b": document["b"]["run"],
        "metrics_only_in_a": document["metrics_only_in_a"],
        "metrics_only_in_b": document["metrics_only_in_b"],
    }
    return (
        environment()
        .get_template("compare.html.j2")
        .render(
            c=view,
            match=document["matching"],
            rows=rows,
            settings=document["settings"],
            counts=counts,
            warnings=document["warnings"],
            fmt_p=format_p,
            signed=format_signed,
        )
    )


def _forest(m: dict[str, Any]) -> dict[str, str] | None:
    """Positions (CSS percentages) of zero, the interval and the mean on a scale symmetric
    around zero, for the interval bar of one metric."""
    mean, low, high = m["mean_diff"], m["ci_low"], m["ci_high"]
    if mean is None:
        return None
    points = [mean] + ([low, high] if low is not None else [])
    span = max(abs(p) for p in points) * 1.1 or 1.0

    def at(x: float) -> float:
        return 50 + 50 * max(-1.0, min(1.0, x / span))

    left = at(low) if low is not None else at(mean)
    right = at(high) if high is not None else at(mean)
    return {"low": f"{left:.1f}%", "width": f"{max(0.5, right - left):.1f}%", "mean": f"{at(mean):.1f}%"}


def write_comparison(comparison: HasDocument, directory: str | Path) -> list[Path]:
    """Write ``compare.md``, ``compare.json`` and ``compare.html`` into ``directory`` (created
    when missing).

    Raises:
        OutputDirError: ``directory`` is a file, lies under one, or cannot be created or written.
    """
    directory = prepare(directory)
    document = comparison.to_dict()
    try:
        return [
            write_text(directory / COMPARE_MD, render_markdown(document)),
            write_json(directory / COMPARE_JSON, document),
            write_text(directory / COMPARE_HTML, render_html(document)),
        ]
    except OSError as exc:  # a folder in a report's place, a full disk
        raise OutputDirError(f"cannot write the comparison into {directory}: {write_problem(exc)}") from None
