"""``report.html``: one self-contained page to explore a run.

The page holds the run information, the score tables per metric family, a radar of the
families, the distribution of every metric, the diagnosis, and every sample with its
contexts, response, reference and scores. It needs nothing but itself: styles, charts
(inline SVG) and a small script are inline, and its Content-Security-Policy forbids any
request, so it works offline and can be attached to a ticket or a CI artifact.

Samples are untrusted text. Everything from the data goes through Jinja2's autoescaping;
the only markup inserted as is are the SVG charts of :mod:`ragmeter.report.charts`, which
escape their own text, and the page's own script, whose hash the policy pins.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from functools import lru_cache
from typing import Any

import jinja2
import numpy as np
from markupsafe import Markup

from ragmeter.metrics.base import FAMILIES, Score
from ragmeter.report import charts
from ragmeter.report.formatting import format_number
from ragmeter.report.judge import judge_line, judge_warnings
from ragmeter.results import Result, SampleResult
from ragmeter.results.table import FAILED

#: Sample keys listed per diagnosis pattern (all of them are reachable with the filter).
SAMPLES_PER_PATTERN = 10
#: The page shows every sample up to this many; beyond, a selection (see ``shown_rows``).
MAX_SAMPLES_SHOWN = 500
#: Of a selection, at most this many are the worst samples.
WORST_SHOWN = 300

#: Patterns that are not problems, shown in green or grey.
_GOOD_PATTERNS = ("healthy", "correct_refusal")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ragmeter", "report/templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = format_number
    env.filters["pct"] = lambda share: f"{share:.0%}"
    env.filters["pretty"] = _pretty
    env.filters["csp_hash"] = _csp_hash
    return env


def _pretty(value: Any, indent: str = "") -> str:
    """JSON for people: one item per line, except that lists and objects short enough to
    fit on a line stay on one; non-ASCII kept, anything JSON does not know as text."""
    flat = json.dumps(value, ensure_ascii=False, default=str)
    if not isinstance(value, (dict, list, tuple)) or not value or len(flat) + len(indent) <= 88:
        return flat
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_pretty(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    items = [inner + _pretty(v, inner) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + indent + "]"


def _csp_hash(script: str) -> str:
    """The Content-Security-Policy source that allows exactly this inline script."""
    digest = hashlib.sha256(str(script).encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _percent(value: Any) -> str | None:
    """A score in [0, 1] as a CSS percentage (clamped), or None."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return f"{100 * min(1.0, max(0.0, float(value))):.1f}%"


def _metric_view(metric: dict[str, Any]) -> dict[str, Any]:
    """A metric with what the tables show besides the numbers: its unit note and, for
    quality scores, the positions of the mean and its interval on a [0, 1] bar."""
    unit = metric.get("unit")
    note = ""
    if unit:
        note = f"{unit}, {'higher' if metric.get('higher_is_better', True) else 'lower'} is better"
    aggregate = metric.get("aggregate", {})
    bar = None
    if unit is None and _percent(aggregate.get("mean")):
        low, high = aggregate.get("ci_low"), aggregate.get("ci_high")
        bar = {"mean": _percent(aggregate["mean"]), "low": _percent(low), "width": None}
        if _percent(low) and _percent(high):
            bar["width"] = f"{100 * max(0.0, min(1.0, high) - max(0.0, low)):.1f}%"
    return {**metric, "note": note, "bar": bar}


def _score_view(score: Score | None, unit: str | None) -> dict[str, Any]:
    """What a cell shows for one score: the value, or "–" and why there is none."""
    if score is None:
        return {"shown": "–", "state": "unscored", "reason": "not evaluated", "explanation": "", "details": {}}
    if score.value is None:
        return {
            "shown": "–",
            "state": "failed" if score.failed else "unscored",
            "reason": score.reason or "",
            "explanation": score.explanation,
            "details": score.details,
        }
    return {
        "shown": format_number(score.value, unit),
        "state": "scored",
        "reason": "",
        "explanation": score.explanation,
        "details": score.details,
    }


def _short(name: str) -> str:
    return name.replace("_", " ")


def render_html(summary: dict[str, Any], result: Result) -> str:
    """The HTML report of a run: one self-contained, offline page.

    Args:
        summary: The run's summary, as built by :func:`ragmeter.report.summary.build_summary`
            (run, metrics with aggregates, families, input_issues, diagnosis).
        result: The run's result, for the samples and their scores.

    Returns:
        The page as text. Every value from the data is HTML-escaped; the page makes no
        network request (no external style, font, image or script) and its
        Content-Security-Policy forbids any.
    """
    metrics = [_metric_view(m) for m in summary["metrics"]]
    families = _families_view(metrics, summary["families"])
    ordered = [m for family in families for m in family["metrics"]]
    diagnosis = summary["diagnosis"]
    signals = [{"signal": s, **v} for s, v in diagnosis["signals"].items()]
    rows = shown_rows(result, diagnosis["patterns"])
    patterns = _patterns_view(diagnosis["patterns"], result, set(rows))
    titles = {p["name"]: p["title"] for p in patterns}
    per_sample = diagnosis.get("per_sample", {})
    run = summary.get("run", {})
    seconds = run.get("seconds")
    context = {
        "run": run,
        "judge_line": judge_line(run.get("judge")),
        "judge_warnings": judge_warnings(run.get("judge")),
        "run_warnings": summary.get("warnings", []),
        "n_samples": run.get("n_samples", len(result.samples)),
        "selection": _selection_note(len(rows), len(result.samples)),
        "seconds": f"{seconds:.1f}" if isinstance(seconds, (int, float)) and math.isfinite(seconds) else "?",
        "families": families,
        "family_chart": Markup(charts.family_chart(summary["families"])) if summary["families"] else None,
        "family_means": summary["families"],
        "distributions": [
            {
                "metric": metric,
                "svg": Markup(
                    charts.histogram(
                        result.values(metric["id"]) if metric["id"] in result.metric_ids else [],
                        unit=metric.get("unit"),
                        mean=metric["aggregate"].get("mean"),
                        label=metric["id"],
                    )
                ),
            }
            for metric in ordered
        ],
        "signals": signals,
        "patterns": patterns,
        "samples": [_sample_view(i, result.samples[i], ordered, signals, per_sample.get(result.table.keys[i], {}), titles) for i in rows],
        "unscored": _unscored_view(ordered),
        "issues": summary["input_issues"],
        "n_metrics": len(metrics),
        "n_failed": sum(m["aggregate"].get("n_failed", 0) for m in metrics),
        "short": _short,
    }
    return environment().get_template("report.html.j2").render(**context)


def _families_view(metrics: list[dict[str, Any]], family_means: dict[str, Any]) -> list[dict[str, Any]]:
    """The metrics grouped by family, in :data:`FAMILIES` order (unknown families last),
    with the family's mean of quality metrics when it has one."""
    order = list(FAMILIES) + sorted({m["family"] for m in metrics} - set(FAMILIES))
    families = []
    for family in order:
        members = [m for m in metrics if m["family"] == family]
        if members:
            quality = family_means.get(family)
            families.append(
                {
                    "name": family,
                    "description": FAMILIES.get(family, family),
                    "mean": quality["mean"] if quality else None,
                    "metrics": members,
                }
            )
    return families


def shown_rows(result: Result, patterns: list[dict[str, Any]]) -> list[int]:
    """The samples the page shows, by position: all of them up to :data:`MAX_SAMPLES_SHOWN`;
    beyond, the first samples of each problem pattern, the :data:`WORST_SHOWN` worst (most
    failures, then the lowest mean quality score) and a seeded random draw of the rest, so
    that the page stays small at any size (every sample is in results.jsonl)."""
    table = result.table
    n = len(table)
    if n <= MAX_SAMPLES_SHOWN:
        return list(range(n))
    position = {key: i for i, key in enumerate(table.keys)}
    chosen = {position[k] for p in patterns if p["name"] not in _GOOD_PATTERNS for k in p["samples"][:SAMPLES_PER_PATTERN] if k in position}
    quality = [
        j for j, m in enumerate(result.metrics) if m.get("unit") is None and m.get("higher_is_better", True) and m["id"] in table.columns
    ]
    values = table.values[:, [table.columns[result.metrics[j]["id"]] for j in quality]] if quality else np.zeros((n, 0))
    scored = np.isfinite(values)
    mean = np.where(scored.any(axis=1), np.nansum(values, axis=1) / np.maximum(scored.sum(axis=1), 1), 1.0)
    failures = (table.status == FAILED).sum(axis=1)
    for row in np.lexsort((mean, -failures)):
        if len(chosen) >= WORST_SHOWN:
            break
        chosen.add(int(row))
    rest = np.array(sorted(set(range(n)) - chosen))
    draw = np.random.default_rng(0).choice(rest, size=min(len(rest), MAX_SAMPLES_SHOWN - len(chosen)), replace=False)
    return sorted(chosen | {int(r) for r in draw})


def _selection_note(shown: int, total: int) -> str | None:
    if shown >= total:
        return None
    return (
        f"This page shows {shown:,} of the {total:,} samples: the first of each problem pattern, the lowest-scoring and a random "
        "draw of the rest. Every sample, with its scores, reasons and details, is in results.jsonl."
    )


def _patterns_view(patterns: list[dict[str, Any]], result: Result, shown: set[int]) -> list[dict[str, Any]]:
    """The diagnosis patterns with their first samples, linked to the page's samples."""
    table = result.table
    index_of = {key: i for i, key in enumerate(table.keys) if i in shown}
    questions = dict(zip(table.keys, table.questions, strict=True))
    return [
        {
            **pattern,
            "good": pattern["name"] in _GOOD_PATTERNS,
            "neutral": pattern["name"] == "inconclusive",
            "listed": [
                {"key": key, "index": index_of.get(key), "question": questions.get(key, "")}
                for key in pattern["samples"][:SAMPLES_PER_PATTERN]
            ],
        }
        for pattern in patterns
    ]


def _sample_view(
    index: int,
    sample_result: SampleResult,
    metrics: list[dict[str, Any]],
    signals: list[dict[str, Any]],
    diagnosis: dict[str, Any],
    pattern_titles: dict[str, str],
) -> dict[str, Any]:
    """What the page shows of one sample: its signal values, contexts and scores."""
    sample = sample_result.sample
    units = {m["id"]: m.get("unit") for m in metrics}
    levels = diagnosis.get("levels", {})
    signal_cells = []
    for signal in signals:
        cell = _score_view(sample_result.scores.get(signal["metric"]), units.get(signal["metric"]))
        cell["level"] = levels.get(signal["signal"]) or "none"
        signal_cells.append(cell)
    unpaired = sample.unpaired_ids()  # then no id is shown beside a context: which names which is unknown
    ids = [] if unpaired else sample.retrieved_context_ids or []
    relevant = set(sample.reference_context_ids or [])
    contexts = [
        {
            "rank": rank,
            "id": ids[rank - 1] if rank <= len(ids) else None,
            "text": text,
            "relevant": rank <= len(ids) and ids[rank - 1] in relevant,
        }
        for rank, text in enumerate(sample.retrieved_contexts or [], start=1)
    ]
    rows = [{"metric": m, **_score_view(sample_result.scores[m["id"]], m.get("unit"))} for m in metrics if m["id"] in sample_result.scores]
    rows += [
        {"metric": {"id": metric_id, "family": "other"}, **_score_view(score, None)}
        for metric_id, score in sample_result.scores.items()
        if metric_id not in units
    ]
    # Rank metrics often share their details (retrieved and relevant ids): show them once.
    seen: list[tuple[dict[str, Any], str]] = []
    for row in rows:
        row["same_as"] = None
        if row["details"]:
            row["same_as"] = next((metric_id for details, metric_id in seen if details == row["details"]), None)
            if row["same_as"] is None:
                seen.append((row["details"], row["metric"]["id"]))
    pattern = diagnosis.get("pattern")
    return {
        "index": index,
        "key": sample_result.key,
        "source": sample_result.source,
        "location": sample_result.location,
        "sample": sample,
        "pattern": pattern,
        "pattern_title": pattern_titles.get(pattern or "", pattern or ""),
        "pattern_class": "good" if pattern in _GOOD_PATTERNS else "neutral" if pattern in (None, "inconclusive") else "bad",
        "levels": levels,
        "signal_cells": signal_cells,
        "contexts": contexts,
        "unpaired_ids": unpaired,
        "scores": rows,
        "n_unscored": sum(1 for r in rows if r["state"] != "scored"),
        "n_failed": sum(1 for r in rows if r["state"] == "failed"),
    }


def _unscored_view(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The most common unscored reasons per metric; errors are marked ``failed``."""
    return [{"metric": m["id"], **reason} for m in metrics for reason in m["aggregate"]["unscored_reasons"]]
