"""Robustness of the user's generator to what retrieval hands it, as the RGB benchmark tests it
(Chen et al., 2024: noise robustness, negative rejection, counterfactual robustness,
information integration), on RGB-format data: ``query``, ``answer`` (the gold answer: each
element must appear in the response; an element that is a list is a set of alternatives),
``positive`` passages (hold the answer) and ``negative`` passages (on the topic, without it).

The generator under test is a callable ``generate(question, passages) -> answer`` (sync or
async). Each question is asked under each condition, the passages chosen by a fixed seed:

- ``noise_<r>``: ``passages`` passages, a share ``r`` of them negative (0, 0.2 ... 0.8);
- ``negative_rejection``: negative passages only; the right answer is a refusal;
- ``counterfactual``: two positive passages, one positive passage whose answer is replaced by
  a false one (another question's answer), the rest negative; an answer stating the false one
  is *misled* and wrong;
- ``integration``: two questions asked as one (joined by "；"), one positive passage of each
  and negatives; right only when both answers are there.

A response is a refusal when it holds a refusal phrase (``refusal_accuracy``'s patterns, English
and Chinese). Per condition the suite reports accuracy, refusal rate and (counterfactual) misled
rate with 95% Wilson intervals; :func:`compare_suites` compares two generators condition by
condition on the same questions (paired permutation test, Holm across conditions).
"""

from __future__ import annotations

import asyncio
import inspect
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data.encodings import not_utf8
from ragmeter.data.files import json_object, read_json_lines, write_json, write_text
from ragmeter.data.secrets import redact
from ragmeter.metrics.checks import refusal_phrase
from ragmeter.report.formatting import format_interval, format_number, format_p, format_signed
from ragmeter.report.markdown import md_code
from ragmeter.results.inference import holm, paired_permutation_pvalue, wilson_interval

NOISE_RATIOS = (0.0, 0.2, 0.4, 0.6, 0.8)
NEGATIVE_REJECTION, COUNTERFACTUAL, INTEGRATION = "negative_rejection", "counterfactual", "integration"


@dataclass(frozen=True)
class Case:
    """One question under one condition.

    Attributes:
        condition: The condition's name (``noise_0.4``, ``counterfactual``...).
        key: The question's id (the same across conditions, for pairing).
        question: What the generator is asked.
        passages: What it is given, in order.
        answer: The gold answer (RGB semantics, see the module docstring).
        false_answer: The answer the counterfactual passage plants (``None`` elsewhere).
    """

    condition: str
    key: str
    question: str
    passages: list[str]
    answer: list[Any]
    false_answer: str | None = None


def load_rgb(path: str | Path) -> list[dict[str, Any]]:
    """The questions of an RGB-format JSON-lines file (at least one).

    Args:
        path: The file: one JSON object per line with ``query`` (text), ``answer`` (a
            non-empty list of texts, or of non-empty lists of alternative texts), ``positive``
            and ``negative`` (non-empty lists of texts); every text non-blank.

    Raises:
        ValueError: The file is not UTF-8 text, a line is not JSON or a field is missing or
            malformed (the message names the file, line and field), or the file holds no question.
    """
    try:
        lines = list(read_json_lines(path))
    except UnicodeDecodeError as exc:  # the message named neither the file nor what to do
        where, said = not_utf8(Path(path), exc)
        raise ValueError(f"{path}, {where}: {said}") from None
    rows = []
    for number, line in lines:
        try:
            row = json_object(line)
        except ValueError as exc:
            raise ValueError(f"{path}, line {number}: {exc}") from None
        for name in ("query", "answer", "positive", "negative"):
            problem = _rgb_field_problem(name, row.get(name))
            if problem:
                raise ValueError(f"{path}, line {number}, field '{name}': {problem}")
        rows.append({**row, "id": str(row.get("id", number))})
    if not rows:
        raise ValueError(f"{path}: no question in the file (one JSON object per line: query, answer, positive, negative)")
    return rows


def _rgb_field_problem(name: str, value: Any) -> str | None:
    """What is wrong with the RGB field ``name``'s ``value`` (see :func:`load_rgb`), or None."""
    if name == "query":
        return None if _text(value) else "expected a non-blank string"
    if not isinstance(value, list) or not value:
        return "expected a non-empty list"
    for index, item in enumerate(value, 1):
        if name == "answer" and isinstance(item, list):
            if not item:
                return f"item {index} is an empty list of alternatives"
            bad = [a for a in item if not _text(a)]
            if bad:
                return f"item {index}: alternative {_shown(bad[0])} must be a non-blank string"
        elif not _text(item):
            return f"item {index} ({_shown(item)}) must be a non-blank string"
    return None


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _shown(value: Any) -> str:
    """``value`` in an error message, cut to 40 characters."""
    text = repr(value) if not isinstance(value, (list, dict)) else type(value).__name__
    return text if len(text) <= 40 else text[:39] + "…"


def answer_found(response: str, answer: Sequence[Any]) -> bool:
    """Whether every element of the gold ``answer`` is in ``response`` (a list element: any of its alternatives)."""
    return bool(answer) and all(any(a in response for a in item) if isinstance(item, list) else str(item) in response for item in answer)


def _single(row: dict[str, Any]) -> str | None:
    """The answer of a row whose gold answer is one string, else ``None``."""
    answer = row["answer"]
    return answer[0] if len(answer) == 1 and isinstance(answer[0], str) and answer[0] else None


def rgb_cases(
    rows: Sequence[dict[str, Any]], *, passages: int = 5, noise_ratios: Sequence[float] = NOISE_RATIOS, seed: int = 0
) -> list[Case]:
    """Every question of ``rows`` under every condition (see the module docstring)."""
    if passages < 3:
        raise ValueError("passages must be at least 3 (the counterfactual condition uses three positive passages' worth)")
    draw = random.Random(seed)
    cases = []
    for index, row in enumerate(rows):
        key, question, answer, positive, negative = row["id"], row["query"], row["answer"], row["positive"], row["negative"]
        for ratio in noise_ratios:
            noisy = round(ratio * passages)
            chosen = draw.sample(negative, min(noisy, len(negative))) + draw.sample(positive, min(passages - noisy, len(positive)))
            cases.append(Case(f"noise_{ratio:g}", key, question, _shuffled(chosen, draw), answer))
        cases.append(Case(NEGATIVE_REJECTION, key, question, draw.sample(negative, min(passages, len(negative))), answer))
        truth, false = _single(row), _single(rows[(index + 1) % len(rows)])
        if truth and false and false != truth and len(positive) >= 3:
            true_ones = draw.sample(positive, 3)
            planted = true_ones[2].replace(truth, false)
            if planted != true_ones[2]:
                chosen = [*true_ones[:2], planted, *draw.sample(negative, min(passages - 3, len(negative)))]
                cases.append(Case(COUNTERFACTUAL, key, question, _shuffled(chosen, draw), answer, false))
        other = rows[(index + 1) % len(rows)]
        if other is not row:
            chosen = [draw.choice(positive), draw.choice(other["positive"]), *draw.sample(negative, min(passages - 2, len(negative)))]
            cases.append(Case(INTEGRATION, key, f"{question}；{other['query']}", _shuffled(chosen, draw), [*answer, *other["answer"]]))
    return cases


def _shuffled(items: list[str], draw: random.Random) -> list[str]:
    draw.shuffle(items)
    return items


@dataclass(frozen=True)
class Outcome:
    """What the generator did with one case."""

    case: Case
    response: str | None
    correct: bool
    refused: bool
    misled: bool
    error: str | None = None


def judge_case(case: Case, response: str) -> Outcome:
    """Decide one response (see the module docstring)."""
    refused = refusal_phrase(response) is not None
    misled = case.false_answer is not None and case.false_answer in response
    if case.condition == NEGATIVE_REJECTION:
        correct = refused
    else:
        correct = not refused and not misled and answer_found(response, case.answer)
    return Outcome(case, response, correct, refused, misled)


async def run_suite(
    generate: Callable[..., Any], cases: Sequence[Case], *, concurrency: int = 4, timeout: float | None = None
) -> list[Outcome]:
    """Ask ``generate(question, passages)`` every case, at most ``concurrency`` at once; an
    exception, a timeout or a non-text answer is that case's error (and a wrong answer),
    never the end of the suite."""
    gate = asyncio.Semaphore(concurrency)

    async def one(case: Case) -> Outcome:
        async with gate:
            try:
                if inspect.iscoroutinefunction(generate):
                    call = generate(case.question, list(case.passages))
                else:
                    call = asyncio.to_thread(generate, case.question, list(case.passages))
                response = await asyncio.wait_for(call, timeout)
                if not isinstance(response, str):
                    raise TypeError(f"the generator returned {type(response).__name__}, not text")
            except Exception as exc:  # one case must not end the suite
                return Outcome(case, None, False, False, False, redact(f"{type(exc).__name__}: {exc}"))
        return judge_case(case, response)

    return list(await asyncio.gather(*(one(c) for c in cases)))


def _rate(hits: int, n: int) -> dict[str, Any]:
    interval = wilson_interval(hits, n)
    return {"rate": hits / n if n else None, "ci_low": interval[0] if interval else None, "ci_high": interval[1] if interval else None}


def summarise(outcomes: Sequence[Outcome]) -> dict[str, dict[str, Any]]:
    """Per condition, in the order first met: cases, errors, accuracy, refusal rate and
    misled rate, each with its 95% Wilson interval."""
    by_condition: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_condition.setdefault(outcome.case.condition, []).append(outcome)
    return {
        condition: {
            "n": len(group),
            "errors": sum(o.error is not None for o in group),
            "accuracy": _rate(sum(o.correct for o in group), len(group)),
            "refusal": _rate(sum(o.refused for o in group), len(group)),
            "misled": _rate(sum(o.misled for o in group), len(group)),
        }
        for condition, group in by_condition.items()
    }


@dataclass
class SuiteComparison:
    """Two generators on the same cases: per condition, B's accuracy minus A's, the paired
    permutation p-value and its Holm adjustment across the conditions."""

    label_a: str
    label_b: str
    summary_a: dict[str, dict[str, Any]]
    summary_b: dict[str, dict[str, Any]]
    conditions: dict[str, dict[str, Any]] = field(default_factory=dict)
    alpha: float = 0.05

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("label_a", "label_b", "alpha", "summary_a", "summary_b", "conditions")}


def compare_suites(
    a: Sequence[Outcome], b: Sequence[Outcome], *, label_a: str = "A", label_b: str = "B", alpha: float = 0.05
) -> SuiteComparison:
    """Compare generator B with A on the cases both were asked (paired by condition and key)."""
    comparison = SuiteComparison(label_a, label_b, summarise(a), summarise(b), alpha=alpha)
    comparison.conditions = compare_passes(
        {(o.case.condition, o.case.key): o.correct for o in a},
        {(o.case.condition, o.case.key): o.correct for o in b},
        label_a,
        label_b,
        alpha,
    )
    return comparison


def compare_passes(
    a: dict[tuple[str, str], bool], b: dict[tuple[str, str], bool], label_a: str, label_b: str, alpha: float
) -> dict[str, dict[str, Any]]:
    """Per group, B's success rate minus A's over the (group, key) items both have, the paired
    permutation p-value, its Holm adjustment across the groups, and the verdict."""
    diffs: dict[str, list[float]] = {}
    for (group, key), passed in b.items():
        if (group, key) in a:
            diffs.setdefault(group, []).append(float(passed) - float(a[(group, key)]))
    tested = list(diffs)
    pvalues = [paired_permutation_pvalue(diffs[g]) for g in tested]
    compared = {}
    for group, p, adjusted in zip(tested, pvalues, holm(pvalues), strict=True):
        d = diffs[group]
        better = adjusted < alpha and sum(d) != 0
        verdict = (f"{label_b} better" if sum(d) > 0 else f"{label_a} better") if better else "no significant difference"
        compared[group] = {"n_pairs": len(d), "accuracy_diff": sum(d) / len(d), "p": p, "p_holm": adjusted, "verdict": verdict}
    return compared


def write_suite_report(comparison: SuiteComparison, directory: str | Path, source: str) -> list[Path]:
    """Write ``robustness.json`` and ``robustness.md`` (both generators per condition, and
    the paired comparison) into ``directory``; returns their paths."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    document = comparison.to_dict() | {"source": source}
    a, b = md_code(comparison.label_a), md_code(comparison.label_b)
    cell_a, cell_b = md_code(comparison.label_a, cell=True), md_code(comparison.label_b, cell=True)

    def rate(entry: dict[str, Any]) -> str:
        return f"{format_number(entry['rate'])} {format_interval(entry['ci_low'], entry['ci_high'])}"

    lines = [
        "# Robustness suite (RGB conditions)",
        "",
        f"Source: {md_code(source)}. Accuracy, refusal and misled rates with 95% Wilson intervals; "
        f"{b} - {a} accuracy paired by question, permutation test, Holm across conditions (alpha {comparison.alpha}).",
        "",
        f"| condition | n | accuracy {cell_a} | accuracy {cell_b} | refusals {cell_a} | refusals {cell_b} | misled {cell_a} | misled {cell_b} | diff | p (Holm) | verdict |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for condition, tested in comparison.conditions.items():
        sa, sb = comparison.summary_a[condition], comparison.summary_b[condition]
        lines.append(
            f"| {condition} | {tested['n_pairs']} | {rate(sa['accuracy'])} | {rate(sb['accuracy'])} | "
            f"{format_number(sa['refusal']['rate'])} | {format_number(sb['refusal']['rate'])} | {format_number(sa['misled']['rate'])} | "
            f"{format_number(sb['misled']['rate'])} | {format_signed(tested['accuracy_diff'])} | {format_p(tested['p_holm'])} | {md_code(tested['verdict'], cell=True)} |"
        )
    return [write_json(folder / "robustness.json", document), write_text(folder / "robustness.md", "\n".join(lines) + "\n")]
