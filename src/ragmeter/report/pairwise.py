"""A pairwise judging run as ``pairwise.json`` and ``pairwise.md``.

Renderers take the report's JSON document (``PairwiseReport.to_dict()``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from ragmeter.data.files import write_json, write_text
from ragmeter.report.formatting import format_percent
from ragmeter.report.markdown import md_code, md_text
from ragmeter.run.outdir import prepare

JSON_FILE = "pairwise.json"
MARKDOWN_FILE = "pairwise.md"


class HasDocument(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def summary_rows(statistics: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The headline numbers as (label, text) rows, for the terminal and the Markdown."""
    s = statistics
    win, bias, agreement = s["win_rate_b"], s["length_bias"], s["reference_agreement"]
    interval = f" [{format_percent(win['ci_low'])}, {format_percent(win['ci_high'])}]" if win["ci_low"] is not None else ""
    rows = [
        ("pairs judged", f"{s['n_judged']} of {s['n_pairs']}" + (f" ({s['n_failed']} failed)" if s["n_failed"] else "")),
        ("B wins / A wins / ties", f"{s['wins_b']} / {s['wins_a']} / {s['ties']}"),
        (f"win rate of B over A ({int(100 * win['confidence'])}% Wilson CI, ties half)", format_percent(win["value"]) + interval),
        ("tie rate", format_percent(s["tie_rate"])),
        ("position consistency (both orders agree)", format_percent(s["position_consistency"])),
        ("first-position rate (0.5 = no position bias)", format_percent(s["first_position_rate"])),
        (f"longer wins (of {bias['n_decided']} decided pairs)", format_percent(bias["longer_wins"])),
    ]
    if bias["longer_is_better"] is not None:
        rows.append((f"longer is the better one (reference, {bias['n_reference']} pairs)", format_percent(bias["longer_is_better"])))
        rows.append(("length bias (longer wins - longer is better)", "–" if bias["bias"] is None else f"{100 * bias['bias']:+.1f} points"))
    if agreement["n"]:
        rows.append((f"judge agrees with the reference ({agreement['n']} pairs)", format_percent(agreement["value"])))
    return rows


def render_markdown(document: dict[str, Any]) -> str:
    """The pairwise report as Markdown."""
    m, judge = document.get("matching") or {}, (document.get("settings") or {}).get("judge") or {}
    lines = ["# Pairwise comparison", "", f"Criterion: {md_text(document['criterion'], 400)}", ""]
    if m:
        lines += [f"A: {md_code(m.get('a'))}; B: {md_code(m.get('b'))}; matched by {m.get('by')}.", ""]
    lines += [
        f"Judge: {md_text(judge.get('backend', '-'))} {md_code(judge.get('model', '-'))}; each pair judged in both orders; "
        f"no-preference margin {document['margin']} around 0.5.",
        "",
        "| measure | value |",
        "|---|---|",
        *[f"| {label} | {value} |" for label, value in summary_rows(document["statistics"])],
        "",
    ]
    pairs = document["pairs"]
    inconsistent = [v for v in pairs if v["winner"] is not None and not v["consistent"]]
    if inconsistent:
        lines += ["Pairs where the verdict depends on the order (counted as ties):", ""]
        lines += [
            f"- {md_code(v['key'], 80)}: P(A better | A first) {v['p_a_first']:.2f}, P(B better | B first) {v['p_b_first']:.2f}"
            for v in inconsistent[:50]
        ]
        if len(inconsistent) > 50:
            lines.append(f"- … and {len(inconsistent) - 50} more (see {JSON_FILE})")
        lines.append("")
    failed = [v for v in pairs if v["winner"] is None]
    if failed:
        lines += ["Pairs not judged:", "", *[f"- {md_code(v['key'], 80)}: {md_text(v['error'], 300)}" for v in failed[:50]], ""]
    if m:
        lines += _leftovers(m)
    return "\n".join(lines).rstrip() + "\n"


def _leftovers(m: dict[str, Any]) -> list[str]:
    """What the matching left out: samples of one side only, unusable or duplicate ones, labels
    naming no pair, label lines that could not be used and the sides' input issues (a row
    skipped for a duplicate id...), each listed by key or line."""
    groups = [
        ("sample(s) in A only", [u["key"] for u in m.get("unmatched_a", [])]),
        ("sample(s) in B only", [u["key"] for u in m.get("unmatched_b", [])]),
        ("sample(s) unusable", [f"{u['side']} {u['key']} ({u['reason']})" for u in m.get("unusable", [])]),
        ("sample(s) left out as duplicates", [k for side in ("a", "b") for d in m.get(f"duplicates_{side}", []) for k in d["keys"]]),
        ("sample(s) same id, different question", m.get("questions_differ", [])),
        ("label(s) naming no pair", m.get("labels_unmatched", [])),
    ]
    lines = []
    for title, keys in groups:
        if keys:
            shown = ", ".join(f"{md_code(k, 80)}" for k in keys[:20]) + (f" and {len(keys) - 20} more" if len(keys) > 20 else "")
            lines.append(f"- {len(keys)} {title}: {shown}")
    lines += [f"- label line not used: {md_text(problem, 300)}" for problem in m.get("label_issues", [])[:50]]
    issues = [issue for side in ("A", "B") for issue in (m.get("input_issues") or {}).get(side, [])]
    lines += [f"- input issue: {md_text(issue, 300)}" for issue in issues[:50]]
    return lines


def write_report(report: HasDocument, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``pairwise.json`` and ``pairwise.md`` into ``out_dir`` (created when missing);
    return their paths.

    Raises:
        OutputDirError: ``out_dir`` is a file, lies under one, or cannot be created or written.
    """
    directory = prepare(out_dir)
    document = report.to_dict()
    return write_json(directory / JSON_FILE, document), write_text(directory / MARKDOWN_FILE, render_markdown(document))
