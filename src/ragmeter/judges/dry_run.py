"""Estimate what a run would cost before spending anything (``ragmeter eval --dry-run``).

The metrics run as usual, but against :class:`DryRunJudge`: it renders every prompt the
real judge would receive, counts its tokens with the real judge's tokenizer (an estimate
for endpoints), prices them, and answers with neutral placeholders instead of calling a
model. Calls that depend on earlier answers (claims extracted by the model) are estimated
from placeholder answers, so treat the figures as estimates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.judges.base import FieldValue, LLMJudge, Verdict
from ragmeter.judges.metering import PriceTable, Usage, record
from ragmeter.judges.prompts import PromptBook

#: Tokens a judge writes per item of a batched verdict ({"id", "reason", "verdict"}).
BATCH_TOKENS_PER_ITEM = 30
#: Tokens a judge writes for a JSON answer (questions, entities, statements).
GENERATED_TOKENS = 80
#: Throughput of the packaged local model on 2 CPU cores (benchmarks/local_judge_speed.py).
LOCAL_PROMPT_TOKENS_PER_SECOND = 52.0
LOCAL_GENERATED_TOKENS_PER_SECOND = 14.0


class DryRunJudge(LLMJudge):
    """Stands in for ``target``: same prompts and token counts, no model calls.

    Args:
        target: The judge whose cost is estimated (its tokenizer and prices are used).
        per_item: One call per verdict item (the local judge, or an endpoint in single
            mode) instead of one call per verdict request (an endpoint in batch mode).
        price: ``(input, output)`` US dollars per million tokens, or ``None`` if unknown;
            the local judge costs nothing.
    """

    placeholders = True  # see LLMJudge.placeholders

    def __init__(self, target: LLMJudge, per_item: bool, price: tuple[float, float] | None):
        self.target, self.per_item, self.price = target, per_item, price
        self.backend, self.model, self.context_window = target.backend, target.model, target.context_window
        self.evidence_sentences = target.evidence_sentences
        self._heads_seen: set[tuple[str, str]] = set()

    def count_tokens(self, text: str) -> int:
        return self.target.count_tokens(text)

    def _messages_tokens(self, messages: list[dict[str, str]]) -> int:
        return sum(self.count_tokens(m["content"]) + 4 for m in messages)

    def _record(self, prompt: int, completion: int, evaluated: int | None = None) -> None:
        cost = None if self.price is None else (prompt * self.price[0] + completion * self.price[1]) / 1e6
        record(
            Usage(
                calls=1,
                prompt_tokens=prompt,
                prompt_tokens_evaluated=prompt if evaluated is None else evaluated,
                completion_tokens=completion,
                cost_usd=cost,
            )
        )

    async def verdicts(self, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
        book = PromptBook(lang)
        if not self.per_item:
            prompt = self._messages_tokens(book.batch_messages(task, shared, items))
            self._record(prompt, BATCH_TOKENS_PER_ITEM * len(items))
            return [Verdict(0.5) for _ in items]
        verdict = book.verdict(task, shared)
        head = self._messages_tokens(verdict.messages("", book.item_tag(task))[:-1])
        shared_tokens = self.count_tokens(verdict.shared)
        # The local judge reads the head once per run and the shared fields once per request.
        head_new = 0 if (task, lang) in self._heads_seen else head
        self._heads_seen.add((task, lang))
        for number, item in enumerate(items):
            item_tokens = self.count_tokens(verdict.item(item, book.item_tag(task))) + 4
            evaluated = item_tokens + (shared_tokens + head_new if number == 0 else 0)
            self._record(head + shared_tokens + item_tokens, 1, evaluated)
        return [Verdict(0.5) for _ in items]

    async def scale(self, task: str, shared: Mapping[str, FieldValue], options: Sequence[str], lang: str) -> dict[str, float]:
        prompt = PromptBook(lang).scale(task, shared)
        tokens = self._messages_tokens(prompt.messages("", "response")) + self.count_tokens(prompt.asks)
        self._record(tokens, 1)
        return {option: 1 / len(options) for option in options}

    async def generate(self, task: str, fields: Mapping[str, FieldValue], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        self._record(self._messages_tokens(PromptBook(lang).generation_messages(task, fields)), GENERATED_TOKENS)
        return placeholder(schema)


def placeholder(schema: Mapping[str, Any]) -> Any:
    """A small value that satisfies ``schema``: required properties, minimum array lengths."""
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: placeholder(properties.get(name, {})) for name in schema.get("required", properties)}
    if kind == "array":
        return [placeholder(schema.get("items", {})) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return "placeholder"


def estimated_local_seconds(usage: Usage) -> float:
    """Rough seconds the packaged local judge needs for ``usage`` on 2 CPU cores."""
    return usage.prompt_tokens_evaluated / LOCAL_PROMPT_TOKENS_PER_SECOND + usage.completion_tokens / LOCAL_GENERATED_TOKENS_PER_SECOND


def stand_in(judge: LLMJudge, verdict_mode: str, prices: PriceTable) -> LLMJudge:
    """The stand-in for ``judge`` (a caching wrapper is looked through): a
    :class:`DryRunJudge` with one call per item for the local judge and for endpoints in
    ``single`` verdict mode (``auto`` is estimated as ``batch``, its usual choice, plus
    nothing for the probe), and the price of the judge's model from ``prices`` (nothing
    for the local judge); an ensemble of such stand-ins for an ensemble.

    Args:
        judge: The judge of the run.
        verdict_mode: The verdict mode of the settings, for a judge that does not say its own.
        prices: The price table.
    """
    target = getattr(judge, "judge", judge)
    members = getattr(target, "members", None)
    if members is not None:
        from ragmeter.judges.ensemble import EnsembleJudge

        return EnsembleJudge([stand_in(member, verdict_mode, prices) for member in members], getattr(target, "combine", "mean"))
    if target.backend == "local":
        return DryRunJudge(target, per_item=True, price=(0.0, 0.0))
    found = prices.price(target.model)
    price = (found.input_per_million, found.output_per_million) if found else None
    return DryRunJudge(target, per_item=getattr(target, "verdict_mode", verdict_mode) == "single", price=price)
