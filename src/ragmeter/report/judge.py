"""The judge of a run in words, for every report: which model, how its verdicts were asked
and read, what the verdict probe found, and its warnings (from ``run.json``'s ``judge``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def judge_line(judge: Mapping[str, Any] | None, value: Callable[[Any], str] = str) -> str | None:
    """One sentence describing the judge, or ``None`` when the run had none.

    Args:
        judge: ``run.json``'s ``judge`` (its types checked when the run was read).
        value: How each text taken from it (backend, model, URL, mode, method, task, path,
            error) is written: ``str`` as it is (the HTML template escapes the whole line),
            a Markdown code span for report.md (:func:`~ragmeter.report.markdown.md_code`).
    """
    if not judge:
        return None
    if judge.get("backend") == "ensemble":
        members = "; ".join(_single(m, value) for m in judge.get("members") or [])
        spread = judge.get("p_yes_spread") or {}
        spreads = ", ".join(
            f"{value(task)} {s['mean']:.3f} (max {s['max']:.3f}, members split on {s['share_split']:.0%})" for task, s in spread.items()
        )
        text = f"ensemble ({value(judge.get('combine', '?'))} of {len(judge.get('members') or [])} members): {members}"
        return text + (f". Mean spread (standard deviation) of the members' P(yes): {spreads}" if spreads else "")
    return _single(judge, value)


def _single(judge: Mapping[str, Any], value: Callable[[Any], str]) -> str:
    text = f"{value(judge.get('backend', '?'))} {value(judge.get('model', '?'))}"
    if judge.get("base_url"):
        text += f" at {value(judge['base_url'])}"
    if "verdict_mode" in judge:
        used = judge.get("verdict_mode_used")
        methods = judge.get("verdict_methods") or {}
        read = ", ".join(f"{value(method)} {count}" for method, count in methods.items())
        text += f"; verdict mode {value(judge['verdict_mode'])}"
        if used and used != judge["verdict_mode"]:
            text += f" → {value(used)}"
        if read:
            text += f" (P(yes) read from: {read})"
    probe = judge.get("probe")
    if isinstance(probe, Mapping):
        tried = "; ".join(_tried(t, value) for t in probe.get("tried") or [])
        text += f"; verdict probe chose {value(probe.get('chosen'))}: {tried}"
    if judge.get("prompt_files"):
        text += f"; prompt files {', '.join(f'{value(lang)}: {value(path)}' for lang, path in judge['prompt_files'].items())}"
    return text


def _tried(separation: Mapping[str, Any], value: Callable[[Any], str]) -> str:
    mode = value(separation.get("mode"))
    if separation.get("error"):
        return f"{mode} failed ({value(separation['error'])})"
    return f"{mode} ({value(separation.get('method'))}) ROC-AUC {_two(separation, 'roc_auc')}, balanced accuracy {_two(separation, 'balanced_accuracy')}"


def _two(separation: Mapping[str, Any], key: str) -> str:
    """A measure of the probe with two decimals, ``?`` when not given."""
    value = separation.get(key)
    return "?" if value is None else f"{value:.2f}"


def judge_warnings(judge: Mapping[str, Any] | None) -> list[str]:
    """The judge's warnings (the probe found no signal, a task's verdicts were all the same)."""
    return [str(w) for w in (judge or {}).get("warnings") or []]
