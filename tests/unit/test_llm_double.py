"""A scripted LLM judge (test double) for the LLM metrics tests, and checks of the double.

:class:`ScriptedJudge` answers by rules the test scripts, records every call, renders the
real prompts (so a metric passing a field the prompt does not know fails here), counts
tokens as words and raises ``ContextTooLong`` like a batched HTTP judge would: when the
shared fields plus all the items of one call exceed its window.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmeter import Judges, Sample, Score, create_metric
from ragmeter.judges.base import ContextTooLong, JudgeError, LLMJudge, Verdict
from ragmeter.judges.embeddings import BatchingEmbedder
from ragmeter.judges.prompts import PromptBook

Rule = Callable[[str, Mapping[str, Any], str], "float | tuple[float, str]"]


@dataclass
class Call:
    kind: str  # "verdicts", "scale" or "generate"
    task: str
    shared: dict[str, Any]
    items: list[str]
    lang: str


def _words(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value.split())
    return sum(_words(v) for v in value)


def core(text: str) -> str:
    """A claim without its end punctuation, lower-cased: what ``literal`` looks for."""
    return text.strip().rstrip(".。!！?？;；").lower()


def premise_text(shared: Mapping[str, Any]) -> str:
    premise = shared.get("premise")
    return " ".join(premise) if isinstance(premise, (list, tuple)) else (premise or "")


def literal(task: str, shared: Mapping[str, Any], item: str) -> float:
    """For ``supported`` (and ``answerable``): yes when the item's text appears in the premise."""
    return 1.0 if core(item) in premise_text(shared).lower() else 0.0


class ScriptedJudge(LLMJudge):
    """Answers by script; records calls.

    Args:
        rule: ``(task, shared, item) -> p_yes`` (or ``(p_yes, reason)``) for verdicts;
            default :func:`literal`.
        generated: Task -> the dict ``generate`` returns (or a callable of the fields).
        scaled: What ``scale`` returns (a dict, or a callable of the shared fields).
        context_window: Words one call may hold (shared fields + all items + overhead).
        overhead: Words the prompt itself takes.
        fail: ``(kind, task, shared, items) -> Exception | None``: raised when not None.
    """

    backend = "scripted"
    model = "scripted"

    def __init__(
        self,
        rule: Rule | None = None,
        generated: Mapping[str, Any] | None = None,
        scaled: Any = None,
        context_window: int = 100_000,
        overhead: int = 10,
        fail: Callable[..., Exception | None] | None = None,
    ):
        self.rule = rule or literal
        self.generated = dict(generated or {})
        self.scaled = scaled
        self.context_window = context_window
        self.overhead = overhead
        self.fail = fail
        self.calls: list[Call] = []

    def count(self, kind: str | None = None, task: str | None = None) -> int:
        return sum(1 for c in self.calls if (kind is None or c.kind == kind) and (task is None or c.task == task))

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def _check(self, kind: str, task: str, shared: Mapping[str, Any], items: Sequence[str]) -> None:
        if self.fail is not None:
            exc = self.fail(kind, task, shared, items)
            if exc is not None:
                raise exc
        needed = self.overhead + sum(_words(v) for v in shared.values()) + sum(_words(i) for i in items)
        if needed > self.context_window:
            raise ContextTooLong(needed, self.context_window)

    async def verdicts(self, task, shared, items, lang):
        self.calls.append(Call("verdicts", task, dict(shared), list(items), lang))
        PromptBook(lang).verdict(task, shared)  # the real prompt accepts these fields
        PromptBook(lang).batch_messages(task, shared, items)
        self._check("verdicts", task, shared, items)
        await asyncio.sleep(0)
        out = []
        for item in items:
            answer = self.rule(task, shared, item)
            p, reason = answer if isinstance(answer, tuple) else (answer, None)
            out.append(Verdict(p_yes=float(p), reason=reason, method="logits"))
        return out

    async def scale(self, task, shared, options, lang):
        self.calls.append(Call("scale", task, dict(shared), list(options), lang))
        PromptBook(lang).scale(task, shared)
        self._check("scale", task, shared, [])
        return self.scaled(shared) if callable(self.scaled) else self.scaled

    async def generate(self, task, fields, schema, lang):
        self.calls.append(Call("generate", task, dict(fields), [], lang))
        PromptBook(lang).generation_messages(task, fields)
        self._check("generate", task, fields, [])
        if task not in self.generated:
            raise JudgeError(f"no scripted answer for '{task}'")
        answer = self.generated[task]
        return answer(fields) if callable(answer) else answer


def by_item(table: Mapping[str, float], default: float = 0.0) -> Rule:
    """Verdict rule: p_yes by the item's text (its :func:`core` also matches)."""
    normalised = {core(k): v for k, v in table.items()}

    def rule(task, shared, item):
        return table.get(item, normalised.get(core(item), default))

    return rule


class FixedVectors:
    """Encoder test double: each text gets the vector a test gives it (L2-normalised);
    unknown texts get a vector of their own, orthogonal to all others."""

    model_name = "fixed"

    def __init__(self, vectors: Mapping[str, Sequence[float]], dim: int = 64):
        self.dim = dim
        self.vectors = {t: np.pad(np.asarray(v, dtype=np.float64), (0, dim - len(v))) for t, v in vectors.items()}
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = []
        for text in texts:
            if text not in self.vectors:
                self.vectors[text] = np.eye(self.dim)[self.dim - 1 - len(self.vectors)]
            v = self.vectors[text]
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows).astype(np.float32)


def run(spec: str, judge: ScriptedJudge, encoder=None, params: dict | None = None, **fields) -> Score:
    judges = Judges(embedder=BatchingEmbedder(encoder or FixedVectors({})), llm=judge)
    metric = create_metric(spec, **(params or {}))
    score = asyncio.run(metric.score(Sample(**fields), judges))
    assert isinstance(score, Score)
    return score


# --- the double itself --------------------------------------------------------------------


def test_double_renders_real_prompts_and_rejects_unknown_fields():
    judge = ScriptedJudge()
    assert asyncio.run(judge.verdicts("supported", {"premise": ["a b c"]}, ["a b"], "en"))[0].p_yes == 1.0
    try:
        asyncio.run(judge.verdicts("supported", {"text": "a"}, ["a"], "en"))
    except KeyError as exc:
        assert "premise" in str(exc)
    else:
        raise AssertionError("a missing prompt field must fail")


def test_double_raises_context_too_long_for_the_whole_batch():
    judge = ScriptedJudge(context_window=20, overhead=10)
    try:
        asyncio.run(judge.verdicts("supported", {"premise": "one two three four five six"}, ["a b c d e"], "en"))
    except ContextTooLong as exc:
        assert (exc.tokens, exc.limit) == (21, 20)
    else:
        raise AssertionError("expected ContextTooLong")
