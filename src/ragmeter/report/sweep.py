"""The sweep report (``sweep.md``), rendered from the JSON document a sweep writes
(``sweep.json``, see :mod:`ragmeter.decide.sweep`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmeter.data.files import write_text
from ragmeter.report.formatting import format_interval, format_number, format_p, format_signed
from ragmeter.report.markdown import md_code

SWEEP_MD = "sweep.md"


def sweep_rows(document: dict[str, Any]) -> list[tuple[str, ...]]:
    """One row per configuration: name, quality, latency, cost, Pareto, difference from the
    best with its interval, Holm-adjusted p-value, verdict and how many questions failed in the
    pipeline (names as they are, not escaped)."""
    rows: list[tuple[str, ...]] = []
    for point in document["points"]:
        versus = point.get("versus_best")
        best = point["name"] == document["best"]
        verdict = "best" if best else versus["verdict"] if versus else ""
        failed = f"{point['errors']} question(s) failed in the pipeline" if point["errors"] else ""
        rows.append(
            (
                point["name"],
                format_number(point["quality"]),
                format_number(point["latency_ms"], "ms"),
                format_number(point["cost_usd"], "USD"),
                "yes" if point["pareto"] else "",
                "best" if best else format_signed(versus["mean_diff"]) if versus else "",
                format_interval(versus["ci_low"], versus["ci_high"], signed=True) if versus else "",
                format_p(versus["p_holm"]) if versus else "",
                "; ".join(part for part in (verdict, failed) if part),
            )
        )
    return rows


def write_sweep_report(document: dict[str, Any], directory: str | Path) -> Path:
    """Write ``sweep.md`` into ``directory`` from the sweep's JSON document; returns its path."""
    metric = document["quality_metric"]
    lines = [
        "# Sweep",
        "",
        f"{document['settings'].get('n_samples', '?')} samples, {len(document['points'])} configurations. Quality: mean "
        f"{md_code(metric)}; latency and cost: means per question. The Pareto front holds the configurations no other one "
        f"beats on quality, latency and cost at once. Each configuration is compared with the best on {md_code(metric)} "
        f"(paired bootstrap 95% interval of the difference, paired permutation test, Holm across the comparisons, "
        f"alpha {document['alpha']}).",
        "",
        "| configuration | quality | latency ms | cost | Pareto | vs best | 95% CI | p (Holm) | verdict | run directory |",
        "|---|---:|---:|---:|---|---:|---|---:|---|---|",
        *(
            "| "
            + " | ".join([md_code(row[0], cell=True), *row[1:], md_code(point["folder"], cell=True) if point.get("folder") else ""])
            + " |"
            for row, point in zip(sweep_rows(document), document["points"], strict=True)
        ),
    ]
    return write_text(Path(directory) / SWEEP_MD, "\n".join(lines) + "\n")
