"""Compare two runs of ragmeter on the same samples: is B better than A, metric by metric?

Definitions (every random draw is seeded, so the same two runs always give the same report):

Matching
    A sample's match key is its id when it has one, else its question (``user_input`` with
    runs of whitespace collapsed to one space and the ends stripped). A sample of A and a
    sample of B are paired when their match keys are equal. A key that occurs more than once
    in a run is ambiguous: all of its samples are left out and reported as duplicates, and
    the samples of the other run with that key are reported as unmatched. Samples with
    neither id nor question, and samples whose key is absent from the other run, are reported
    as unmatched. Nothing is dropped without being listed.

Per metric (present in both runs), over the matched pairs where both runs scored it
    ``d_i = b_i - a_i``. Pairs where either side is unscored are left out and counted
    (A only, B only, both).

    * mean difference: ``mean(d)``;
    * confidence interval: percentile paired bootstrap of ``mean(d)`` (pairs resampled with
      replacement; :func:`ragmeter.stats.paired_bootstrap_ci`);
    * p-value: two-sided paired sign-flip permutation test of ``mean(d) = 0``
      (:func:`ragmeter.stats.paired_permutation_pvalue`; exact up to 16 non-zero
      differences, else ``n_permutations`` random sign flips);
    * Holm-Bonferroni adjustment of those p-values across the metrics compared;
    * Wilcoxon signed-rank p-value, for information only (it decides nothing);
    * verdict: "B better" or "A better" when the Holm-adjusted p-value is below ``alpha``,
      the side being the one the mean difference favours given the metric's direction
      (``higher_is_better``); otherwise "no significant difference".
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.results import Result, SampleResult
from ragmeter.results.stats import (
    EXACT_PERMUTATION_MAX_N,
    holm,
    paired_bootstrap_ci,
    paired_permutation_pvalue,
    wilcoxon_pvalue,
)

COMPARE_MD = "compare.md"
COMPARE_JSON = "compare.json"
COMPARE_HTML = "compare.html"

B_BETTER = "B better"
A_BETTER = "A better"
NO_DIFFERENCE = "no significant difference"
NOT_COMPARED = "not compared"

#: Samples listed per metric as the largest regressions.
TOP_REGRESSIONS = 5


def normalise_question(text: str | None) -> str | None:
    """The question as used for matching: whitespace runs collapsed, ends stripped; None
    when there is no question or it is blank."""
    if text is None:
        return None
    value = " ".join(text.split())
    return value or None


def match_key(sample_result: SampleResult) -> tuple[str, str] | None:
    """``("id", id)`` when the sample has an id, else ``("question", normalised question)``,
    else None (the sample cannot be matched)."""
    sample = sample_result.sample
    if sample.id is not None:
        return ("id", sample.id)
    question = normalise_question(sample.user_input)
    return ("question", question) if question is not None else None


@dataclass
class Matching:
    """How the samples of two runs were paired.

    Attributes:
        pairs: Matched ``(a, b)`` sample results, in A's order.
        unmatched_a / unmatched_b: ``{"key", "question", "reason"}`` per sample left unpaired.
        duplicates_a / duplicates_b: ``{"by", "value", "keys"}`` per ambiguous match key.
        n_a / n_b: Samples in each run.
    """

    pairs: list[tuple[SampleResult, SampleResult]]
    unmatched_a: list[dict[str, Any]]
    unmatched_b: list[dict[str, Any]]
    duplicates_a: list[dict[str, Any]]
    duplicates_b: list[dict[str, Any]]
    n_a: int
    n_b: int

    @property
    def by(self) -> str:
        """What the pairs were matched by: "id", "question", "id and question" or "nothing"."""
        kinds = {match_key(a)[0] for a, _ in self.pairs}  # type: ignore[index]
        if not kinds:
            return "nothing"
        return " and ".join(k for k in ("id", "question") if k in kinds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "n_matched": len(self.pairs),
            "n_unmatched_a": len(self.unmatched_a),
            "n_unmatched_b": len(self.unmatched_b),
            "n_duplicate_samples_a": sum(len(d["keys"]) for d in self.duplicates_a),
            "n_duplicate_samples_b": sum(len(d["keys"]) for d in self.duplicates_b),
            "unmatched_a": self.unmatched_a,
            "unmatched_b": self.unmatched_b,
            "duplicates_a": self.duplicates_a,
            "duplicates_b": self.duplicates_b,
        }


def match_samples(a: Result, b: Result) -> Matching:
    """Pair the samples of two runs (see the module docstring for the rule)."""
    index_a, unmatchable_a = _index(a)
    index_b, unmatchable_b = _index(b)
    duplicates_a = _duplicates(index_a)
    duplicates_b = _duplicates(index_b)
    pairs = []
    unmatched_a = [_unmatched(s, "no id and no question to match by") for s in unmatchable_a]
    unmatched_b = [_unmatched(s, "no id and no question to match by") for s in unmatchable_b]
    for key, samples in index_a.items():
        if len(samples) > 1:
            continue  # listed in duplicates_a
        others = index_b.get(key, [])
        if len(others) == 1:
            pairs.append((samples[0], others[0]))
        elif not others:
            unmatched_a.append(_unmatched(samples[0], f"no sample with this {key[0]} in B"))
        else:
            unmatched_a.append(_unmatched(samples[0], f"its {key[0]} occurs {len(others)} times in B (ambiguous)"))
    for key, samples in index_b.items():
        if len(samples) > 1:
            continue
        others = index_a.get(key, [])
        if not others:
            unmatched_b.append(_unmatched(samples[0], f"no sample with this {key[0]} in A"))
        elif len(others) > 1:
            unmatched_b.append(_unmatched(samples[0], f"its {key[0]} occurs {len(others)} times in A (ambiguous)"))
    return Matching(pairs, unmatched_a, unmatched_b, duplicates_a, duplicates_b, len(a.samples), len(b.samples))


def _index(result: Result) -> tuple[dict[tuple[str, str], list[SampleResult]], list[SampleResult]]:
    index: dict[tuple[str, str], list[SampleResult]] = defaultdict(list)
    unmatchable = []
    for sample_result in result.samples:
        key = match_key(sample_result)
        if key is None:
            unmatchable.append(sample_result)
        else:
            index[key].append(sample_result)
    return index, unmatchable


def _duplicates(index: dict[tuple[str, str], list[SampleResult]]) -> list[dict[str, Any]]:
    return [
        {"by": by, "value": value, "keys": [s.key for s in samples], "reason": "ambiguous match: left out of the comparison"}
        for (by, value), samples in index.items()
        if len(samples) > 1
    ]


def _unmatched(sample_result: SampleResult, reason: str) -> dict[str, Any]:
    return {"key": sample_result.key, "question": sample_result.sample.user_input or "", "reason": reason}


@dataclass
class MetricComparison:
    """The comparison of one metric over the matched samples (see the module docstring)."""

    metric: str
    unit: str | None
    higher_is_better: bool
    n_pairs: int
    excluded: dict[str, Any]
    mean_a: float | None = None
    mean_b: float | None = None
    mean_diff: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_permutation: float | None = None
    permutation: str = ""
    p_holm: float | None = None
    p_wilcoxon: float | None = None
    verdict: str = NOT_COMPARED
    note: str = ""
    top_regressions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def significant(self) -> bool:
        return self.verdict in (A_BETTER, B_BETTER)

    def improvement(self) -> float | None:
        """The mean difference in the direction of improvement (positive: B is better)."""
        if self.mean_diff is None:
            return None
        return self.mean_diff if self.higher_is_better else -self.mean_diff

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "n_pairs": self.n_pairs,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "mean_diff": self.mean_diff,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "p_permutation": self.p_permutation,
            "permutation": self.permutation,
            "p_holm": self.p_holm,
            "p_wilcoxon": self.p_wilcoxon,
            "significant": self.significant,
            "verdict": self.verdict,
            "note": self.note,
            "excluded": self.excluded,
            "top_regressions": self.top_regressions,
        }


@dataclass
class Comparison:
    """The outcome of comparing run B with run A."""

    label_a: str
    label_b: str
    run_a: dict[str, Any]
    run_b: dict[str, Any]
    matching: Matching
    metrics: list[MetricComparison]
    metrics_only_in_a: list[str]
    metrics_only_in_b: list[str]
    settings: dict[str, Any]

    def metric(self, metric_id: str) -> MetricComparison:
        for m in self.metrics:
            if m.metric == metric_id:
                return m
        raise KeyError(f"metric '{metric_id}' was not compared; compared: {', '.join(m.metric for m in self.metrics)}")

    @property
    def counts(self) -> dict[str, int]:
        """How many metrics got each verdict."""
        out = {B_BETTER: 0, A_BETTER: 0, NO_DIFFERENCE: 0, NOT_COMPARED: 0}
        for m in self.metrics:
            out[m.verdict] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": {"label": self.label_a, "run": self.run_a},
            "b": {"label": self.label_b, "run": self.run_b},
            "settings": self.settings,
            "matching": self.matching.to_dict(),
            "metrics": [m.to_dict() for m in self.metrics],
            "metrics_only_in_a": self.metrics_only_in_a,
            "metrics_only_in_b": self.metrics_only_in_b,
            "verdicts": self.counts,
        }


def _run_summary(result: Result) -> dict[str, Any]:
    run = result.run
    return {
        key: run[key]
        for key in ("sources", "started_at", "n_samples", "ragmeter_version", "judge")
        if key in run
    } | {"n_samples": len(result.samples)}


def compare_results(
    a: Result,
    b: Result,
    *,
    metrics: list[str] | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_permutations: int = 10_000,
    n_resamples: int = 10_000,
    seed: int = 0,
    label_a: str = "A",
    label_b: str = "B",
    top: int = TOP_REGRESSIONS,
) -> Comparison:
    """Compare run ``b`` with run ``a``, metric by metric, over their matched samples.

    Args:
        a, b: The two runs (B is the candidate; differences are B - A).
        metrics: Metric ids to compare (each must be in both runs); default: every metric
            present in both, in A's order. The Holm correction is over these.
        alpha: Family-wise significance level for the verdicts.
        confidence: Coverage of the bootstrap interval of the mean difference.
        n_permutations: Random sign flips of the permutation test (when not exact).
        n_resamples: Bootstrap resamples of the interval.
        seed: Seed of every random draw.
        label_a, label_b: Names of the runs in reports (their directories, say).
        top: Largest regressions listed per metric.

    Raises:
        ValueError: ``alpha`` or ``confidence`` outside (0, 1), or a metric asked for that
            is not in both runs.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    ids_a, ids_b = a.metric_ids, b.metric_ids
    common = [m for m in ids_a if m in ids_b]
    if metrics is not None:
        missing = [m for m in metrics if m not in common]
        if missing:
            raise ValueError(f"metric(s) {', '.join(missing)} not in both runs; common: {', '.join(common) or 'none'}")
        common = [m for m in common if m in metrics]
    matching = match_samples(a, b)
    compared = [
        _compare_metric(metric_id, a.metric(metric_id), b.metric(metric_id), matching, confidence, n_permutations, n_resamples, seed, top)
        for metric_id in common
    ]
    tested = [m for m in compared if m.p_permutation is not None]
    for m, adjusted in zip(tested, holm([m.p_permutation for m in tested])):
        m.p_holm = adjusted
        if adjusted < alpha and m.mean_diff != 0:
            m.verdict = B_BETTER if (m.improvement() or 0) > 0 else A_BETTER
        else:
            m.verdict = NO_DIFFERENCE
    return Comparison(
        label_a=label_a,
        label_b=label_b,
        run_a=_run_summary(a),
        run_b=_run_summary(b),
        matching=matching,
        metrics=compared,
        metrics_only_in_a=[m for m in ids_a if m not in ids_b],
        metrics_only_in_b=[m for m in ids_b if m not in ids_a],
        settings={
            "alpha": alpha,
            "confidence": confidence,
            "n_permutations": n_permutations,
            "exact_permutation_max_n": EXACT_PERMUTATION_MAX_N,
            "n_resamples": n_resamples,
            "seed": seed,
            "correction": "holm",
            "top_regressions": top,
        },
    )


def _compare_metric(
    metric_id: str,
    info_a: dict[str, Any],
    info_b: dict[str, Any],
    matching: Matching,
    confidence: float,
    n_permutations: int,
    n_resamples: int,
    seed: int,
    top: int,
) -> MetricComparison:
    higher_is_better = bool(info_b.get("higher_is_better", True))
    unit = info_b.get("unit")
    notes = []
    if info_a.get("config") != info_b.get("config"):
        notes.append(f"settings differ between the runs (A: {info_a.get('config')}, B: {info_b.get('config')})")
    if bool(info_a.get("higher_is_better", True)) != higher_is_better or info_a.get("unit") != unit:
        notes.append("unit or direction differ between the runs; B's are used")
    rows = []
    excluded: dict[str, Any] = {"unscored_in_a": 0, "unscored_in_b": 0, "unscored_in_both": 0, "keys": []}
    for sa, sb in matching.pairs:
        va, vb = _value(sa, metric_id), _value(sb, metric_id)
        if va is None or vb is None:
            which = "unscored_in_both" if va is None and vb is None else "unscored_in_a" if va is None else "unscored_in_b"
            excluded[which] += 1
            excluded["keys"].append(sb.key)
            continue
        rows.append((sa, sb, va, vb))
    excluded["count"] = len(excluded["keys"])
    comparison = MetricComparison(metric_id, unit, higher_is_better, len(rows), excluded, note="; ".join(notes))
    if not rows:
        comparison.note = "; ".join([*notes, "no matched sample is scored in both runs"])
        return comparison
    diffs = [vb - va for _, _, va, vb in rows]
    n = len(diffs)
    comparison.mean_a = sum(va for _, _, va, _ in rows) / n
    comparison.mean_b = sum(vb for _, _, _, vb in rows) / n
    comparison.mean_diff = sum(diffs) / n
    interval = paired_bootstrap_ci(diffs, confidence=confidence, n_resamples=n_resamples, seed=seed)
    if interval is not None:
        comparison.ci_low, comparison.ci_high = interval
    comparison.p_permutation = paired_permutation_pvalue(diffs, n_permutations=n_permutations, seed=seed)
    nonzero = sum(1 for d in diffs if d != 0)
    comparison.permutation = (
        f"exact ({2**nonzero} sign assignments)" if nonzero <= EXACT_PERMUTATION_MAX_N else f"{n_permutations} random sign flips"
    )
    comparison.p_wilcoxon = wilcoxon_pvalue(diffs)
    # Largest regressions: B - A in the bad direction, worst first.
    sign = 1.0 if higher_is_better else -1.0
    worse = sorted((r for r in rows if sign * (r[3] - r[2]) < 0), key=lambda r: sign * (r[3] - r[2]))
    comparison.top_regressions = [
        {
            "key": sb.key,
            "key_a": sa.key,
            "question": sb.sample.user_input or sa.sample.user_input or "",
            "a": va,
            "b": vb,
            "diff": vb - va,
        }
        for sa, sb, va, vb in worse[:top]
    ]
    return comparison


def _value(sample_result: SampleResult, metric_id: str) -> float | None:
    score = sample_result.scores.get(metric_id)
    if score is None or score.value is None or not math.isfinite(score.value):
        return None
    return float(score.value)


def compare_runs(dir_a: str | Path, dir_b: str | Path, **options: Any) -> Comparison:
    """Load two run directories written by ``ragmeter eval`` and compare them
    (see :func:`compare_results`; the labels default to the directories)."""
    options.setdefault("label_a", str(dir_a))
    options.setdefault("label_b", str(dir_b))
    return compare_results(Result.load(dir_a), Result.load(dir_b), **options)


# Rendering -------------------------------------------------------------------------------


def format_p(p: float | None) -> str:
    """A p-value for people: "–" when there is none, "<0.001" when tiny."""
    if p is None:
        return "–"
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}"


def format_signed(value: float | None, unit: str | None) -> str:
    """A difference with its sign, in the metric's unit."""
    from ragmeter.report.formatting import format_number

    if value is None:
        return "–"
    text = format_number(abs(value), unit)
    if text.strip("$0.,") == "":  # rounds to zero
        return text
    return ("+" if value > 0 else "−") + text


def _interval(m: MetricComparison) -> str:
    if m.ci_low is None:
        return "–"
    return f"[{format_signed(m.ci_low, m.unit)}, {format_signed(m.ci_high, m.unit)}]"


def render_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown (for pull requests and CI logs)."""
    from ragmeter.report.formatting import format_number
    from ragmeter.report.markdown import md_text

    s = comparison.settings
    match = comparison.matching.to_dict()
    lines = [
        "# ragmeter comparison",
        "",
        f"**A**: `{md_text(comparison.label_a)}` ({comparison.run_a.get('n_samples')} samples) · "
        f"**B**: `{md_text(comparison.label_b)}` ({comparison.run_b.get('n_samples')} samples)",
        "",
        f"{match['n_matched']} samples matched by {match['by']}; "
        f"{match['n_unmatched_a']} of A and {match['n_unmatched_b']} of B unmatched; "
        f"{match['n_duplicate_samples_a']} of A and {match['n_duplicate_samples_b']} of B left out as duplicates.",
        "",
        f"Differences are B − A over matched samples scored in both runs. 95% CI: paired bootstrap ({s['n_resamples']} resamples). "
        f"p: paired sign-flip permutation test (two-sided; exact up to {s['exact_permutation_max_n']} non-zero differences, "
        f"else {s['n_permutations']} random flips), Holm-adjusted across the {len(comparison.metrics)} metrics; "
        f"a side wins when the adjusted p < {s['alpha']}. Wilcoxon p is for information.",
        "",
        "| metric | pairs | mean A | mean B | B − A | 95% CI | p | p (Holm) | p (Wilcoxon) | verdict | excluded (unscored) |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|---:|",
    ]
    for m in comparison.metrics:
        name = f"`{m.metric}`" + (f" ({m.unit}, {'higher' if m.higher_is_better else 'lower'} is better)" if m.unit else "")
        verdict = f"**{m.verdict}**" if m.significant else m.verdict
        lines.append(
            f"| {name} | {m.n_pairs} | {format_number(m.mean_a, m.unit)} | {format_number(m.mean_b, m.unit)} | "
            f"{format_signed(m.mean_diff, m.unit)} | {_interval(m)} | {format_p(m.p_permutation)} | {format_p(m.p_holm)} | "
            f"{format_p(m.p_wilcoxon)} | {verdict} | {m.excluded['count']} |"
        )
    lines.append("")
    notes = [f"- `{m.metric}`: {md_text(m.note, 400)}" for m in comparison.metrics if m.note]
    if comparison.metrics_only_in_a:
        notes.append(f"- Only in A (not compared): {', '.join(f'`{md_text(x)}`' for x in comparison.metrics_only_in_a)}")
    if comparison.metrics_only_in_b:
        notes.append(f"- Only in B (not compared): {', '.join(f'`{md_text(x)}`' for x in comparison.metrics_only_in_b)}")
    if notes:
        lines += ["Notes:", "", *notes, ""]
    excluded = [m for m in comparison.metrics if m.excluded["count"]]
    if excluded:
        lines += ["## Pairs left out because a side is unscored", "", "| metric | unscored in A | unscored in B | in both | keys |", "|---|---:|---:|---:|---|"]
        for m in excluded:
            e = m.excluded
            keys = ", ".join(f"`{md_text(k, 60)}`" for k in e["keys"][:10]) + (f" and {len(e['keys']) - 10} more" if len(e["keys"]) > 10 else "")
            lines.append(f"| `{m.metric}` | {e['unscored_in_a']} | {e['unscored_in_b']} | {e['unscored_in_both']} | {keys} |")
        lines.append("")
    lines += ["## Largest regressions", ""]
    any_regression = False
    for m in comparison.metrics:
        if not m.top_regressions:
            continue
        any_regression = True
        lines += [f"### `{m.metric}`", "", "| sample | question | A | B | B − A |", "|---|---|---:|---:|---:|"]
        for r in m.top_regressions:
            lines.append(
                f"| `{md_text(r['key'], 60)}` | {md_text(r['question'], 100)} | {format_number(r['a'], m.unit)} | "
                f"{format_number(r['b'], m.unit)} | {format_signed(r['diff'], m.unit)} |"
            )
        lines.append("")
    if not any_regression:
        lines += ["No matched sample scored worse in B.", ""]
    lines += _matching_markdown(match)
    return "\n".join(lines).rstrip() + "\n"


def _matching_markdown(match: dict[str, Any], limit: int = 50) -> list[str]:
    from ragmeter.report.markdown import md_text

    lines: list[str] = []
    for side in ("a", "b"):
        rows = match[f"unmatched_{side}"]
        if rows:
            lines += [f"## Unmatched samples of {side.upper()} ({len(rows)})", ""]
            lines += [f"- `{md_text(r['key'], 80)}` {md_text(r['question'], 100)}: {md_text(r['reason'])}" for r in rows[:limit]]
            if len(rows) > limit:
                lines.append(f"- … and {len(rows) - limit} more (see compare.json)")
            lines.append("")
    for side in ("a", "b"):
        rows = match[f"duplicates_{side}"]
        if rows:
            lines += [f"## Duplicates in {side.upper()}, left out ({sum(len(r['keys']) for r in rows)} samples)", ""]
            lines += [
                f"- {r['by']} {md_text(r['value'], 100)}: {', '.join(f'`{md_text(k, 60)}`' for k in r['keys'])}" for r in rows[:limit]
            ]
            if len(rows) > limit:
                lines.append(f"- … and {len(rows) - limit} more (see compare.json)")
            lines.append("")
    return lines


def render_html(comparison: Comparison) -> str:
    """The comparison as one self-contained HTML page (no script, no external resource;
    every value from the data is escaped by Jinja2's autoescaping)."""
    from ragmeter.report.html import _environment

    rows = []
    for m in comparison.metrics:
        rows.append({**m.to_dict(), "forest": _forest(m), "ci": _interval(m), "diff": format_signed(m.mean_diff, m.unit)})
    context = {
        "c": comparison,
        "match": comparison.matching.to_dict(),
        "rows": rows,
        "settings": comparison.settings,
        "counts": comparison.counts,
        "fmt_p": format_p,
        "signed": format_signed,
    }
    return _environment().get_template("compare.html.j2").render(**context)


def _forest(m: MetricComparison) -> dict[str, str] | None:
    """Positions (CSS percentages) of zero, the interval and the mean on a scale symmetric
    around zero, for the interval bar of one metric."""
    if m.mean_diff is None:
        return None
    points = [m.mean_diff] + ([m.ci_low, m.ci_high] if m.ci_low is not None else [])
    span = max(abs(p) for p in points) * 1.1 or 1.0

    def at(x: float) -> float:
        return 50 + 50 * max(-1.0, min(1.0, x / span))

    low = at(m.ci_low) if m.ci_low is not None else at(m.mean_diff)
    high = at(m.ci_high) if m.ci_high is not None else at(m.mean_diff)
    return {"low": f"{low:.1f}%", "width": f"{max(0.5, high - low):.1f}%", "mean": f"{at(m.mean_diff):.1f}%"}


def write_comparison(comparison: Comparison, directory: str | Path) -> list[Path]:
    """Write ``compare.md``, ``compare.json`` and ``compare.html`` into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / COMPARE_MD, directory / COMPARE_JSON, directory / COMPARE_HTML]
    paths[0].write_text(render_markdown(comparison), encoding="utf-8")
    paths[1].write_text(json.dumps(comparison.to_dict(), ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    paths[2].write_text(render_html(comparison), encoding="utf-8")
    return paths


# Console ---------------------------------------------------------------------------------


def rich_table(comparison: Comparison):
    """The per-metric comparison as a rich table for the terminal."""
    from rich.markup import escape
    from rich.table import Table

    from ragmeter.report.formatting import format_number

    table = Table(title=f"B ({escape(comparison.label_b)}) − A ({escape(comparison.label_a)})", title_justify="left")
    for column in ("metric", "pairs", "mean A", "mean B", "B − A", "95% CI", "p", "p Holm", "verdict"):
        table.add_column(column, justify="left" if column in ("metric", "verdict") else "right", no_wrap=column in ("metric", "verdict"))
    styles = {B_BETTER: "green", A_BETTER: "red"}
    for m in comparison.metrics:
        name = m.metric + (f" ({m.unit})" if m.unit else "")
        verdict = f"[{styles[m.verdict]}]{m.verdict}[/]" if m.verdict in styles else m.verdict
        table.add_row(
            escape(name),
            str(m.n_pairs),
            format_number(m.mean_a, m.unit),
            format_number(m.mean_b, m.unit),
            format_signed(m.mean_diff, m.unit),
            _interval(m),
            format_p(m.p_permutation),
            format_p(m.p_holm),
            verdict,
        )
    return table


def summary_lines(comparison: Comparison, limit: int = 8) -> list[str]:
    """Plain-text lines (no markup) on the matching, left-out samples and verdicts."""
    match = comparison.matching.to_dict()
    lines = [
        f"{match['n_matched']} samples matched by {match['by']} ({match['n_a']} in A, {match['n_b']} in B); "
        f"{match['n_unmatched_a']} of A and {match['n_unmatched_b']} of B unmatched; "
        f"{match['n_duplicate_samples_a']} of A and {match['n_duplicate_samples_b']} of B left out as duplicates."
    ]

    def keys(items: list[str]) -> str:
        return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")

    for side in ("a", "b"):
        unmatched = match[f"unmatched_{side}"]
        if unmatched:
            lines.append(f"  unmatched in {side.upper()}: {keys([u['key'] for u in unmatched])}")
        duplicates = match[f"duplicates_{side}"]
        if duplicates:
            lines.append(f"  duplicates in {side.upper()}: {keys([' = '.join(d['keys']) for d in duplicates])}")
    for m in comparison.metrics:
        if m.excluded["count"]:
            e = m.excluded
            lines.append(
                f"  {m.metric}: {e['count']} pair(s) left out (unscored in A {e['unscored_in_a']}, in B {e['unscored_in_b']}, "
                f"in both {e['unscored_in_both']})"
            )
    if comparison.metrics_only_in_a or comparison.metrics_only_in_b:
        lines.append(
            f"  not compared: only in A {', '.join(comparison.metrics_only_in_a) or '–'}; only in B {', '.join(comparison.metrics_only_in_b) or '–'}"
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
