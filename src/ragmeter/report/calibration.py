"""A calibration against human labels as ``calibration.json`` and ``calibration.md``.

Renderers take the report's JSON document (``CalibrationReport.to_dict()``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ragmeter.data.files import write_json, write_text
from ragmeter.report.formatting import format_estimate, format_interval, format_number
from ragmeter.report.markdown import md_code, md_text
from ragmeter.run.outdir import prepare

JSON_FILE = "calibration.json"
MARKDOWN_FILE = "calibration.md"

AGREEMENT_NAMES = {
    "accuracy": "accuracy (both at 0.5)",
    "cohens_kappa": "Cohen's kappa (both at 0.5)",
    "pearson": "Pearson",
    "spearman": "Spearman",
    "kendall_tau": "Kendall tau-b",
}


class HasDocument(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def summary_rows(document: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline numbers as (label, text) rows, for the terminal and the Markdown."""
    level = f"{round(100 * document['confidence'])}%"
    mean = document["mean"]
    ppi, classical, ratio = mean["ppi"], mean["classical"], mean["variance_ratio"]
    rows = [(AGREEMENT_NAMES[name], format_estimate(entry, "undefined (a constant side)")) for name, entry in document["agreement"].items()]
    rows += [
        (f"mean by PPI ({level} CI)", f"{format_number(ppi['estimate'])} {format_interval(ppi['ci_low'], ppi['ci_high'])}"),
        (
            f"mean of the labels alone ({level} CI)",
            f"{format_number(classical['estimate'])} {format_interval(classical['ci_low'], classical['ci_high'])}",
        ),
        ("metric's own mean (all scored)", format_number(mean["judge_mean_all"])),
        ("metric minus label, mean (bias removed)", f"{mean['rectifier']:+.3f}"),
        (
            "effective sample size gain",
            "–" if ratio is None else f"×{ratio:.2f} ({document['n_used']} labels worth {mean['effective_labels']:.0f})",
        ),
    ]
    return rows


def render_markdown(document: dict[str, Any]) -> str:
    """The calibration as Markdown."""
    d, missing = document, document["missing"]
    lines = [
        f"# Calibration of {md_code(d['metric'])} with human labels",
        "",
        f"Run: {md_code(d['run_dir'])}; labels: {md_code(d['labels_file'])}.",
        f"{d['n_samples']} samples, {d['n_scored']} scored; {d['n_labels']} labels, {d['n_used']} used "
        f"({'0/1 labels' if d['binary_labels'] else 'scores in [0, 1]'}).",
        "",
        "| measure | value |",
        "|---|---|",
        *[f"| {label} | {value} |" for label, value in summary_rows(d)],
        "",
        f"Agreement intervals: percentile bootstrap over the {d['n_used']} labelled samples. PPI (prediction-powered "
        "inference, Angelopoulos et al. 2023): mean of the metric over all scored samples minus the mean of "
        "(metric - label) over the labelled ones; its normal interval adds both variances. It assumes the labelled "
        "samples are a random subset of the run.",
        "",
    ]
    if d["warnings"]:
        lines += ["Warnings:", "", *[f"- {md_text(w, 300)}" for w in d["warnings"]], ""]
    groups = [
        ("labels for samples not in the run", missing["labels_not_in_run"]),
        ("labelled samples without a score", [f"{u['id']} ({u['reason']})" for u in missing["labelled_unscored"]]),
        ("bad label lines", missing["label_issues"]),
    ]
    for title, items in groups:
        if items:
            lines += [f"{title.capitalize()} ({len(items)}):", "", *[f"- {md_text(i, 300)}" for i in items[:50]]]
            if len(items) > 50:
                lines.append(f"- … and {len(items) - 50} more (see {JSON_FILE})")
            lines.append("")
    if missing["unscored_samples"]:
        lines += ["Unscored samples of the run (left out of the metric's mean):", ""]
        lines += [f"- {count} × {md_text(reason, 300)}" for reason, count in missing["unscored_samples"].items()]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write_report(report: HasDocument, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``calibration.json`` and ``calibration.md`` into ``out_dir`` (created when
    missing); return their paths.

    Raises:
        OutputDirError: ``out_dir`` is a file, lies under one, or cannot be created or written.
    """
    directory = prepare(out_dir)
    document = report.to_dict()
    return write_json(directory / JSON_FILE, document), write_text(directory / MARKDOWN_FILE, render_markdown(document))
