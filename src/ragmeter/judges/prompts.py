"""Judge prompts, read from ``judges/prompts/<lang>.yaml``, rendered for any backend.

Untrusted text (questions, contexts, responses, references, claims) is fenced in tags
(``<premise>``, ``<context id="2">``...) and the system prompt tells the judge that text
inside tags is data, never instructions. Fencing neutralises closing tags and chat-template
markers (``<|im_end|>``) inside the data, so data cannot end its fence or open a new turn.

A verdict prompt has three parts, in this order, so that a backend can reuse the work done
on the first two: the constant head (system prompt and few-shot examples), the shared
fields (one sample's contexts, say), and the item with the question asked about it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from ragmeter.judges.base import FieldValue

LANGUAGES = ("en", "zh")

#: JSON schema of the reply to :meth:`PromptBook.batch_messages`.
BATCH_VERDICTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "reason": {"type": "string"},
                    "verdict": {"type": "string", "enum": ["yes", "no"]},
                },
                "required": ["id", "reason", "verdict"],
            },
        }
    },
    "required": ["verdicts"],
}
_MARKER = re.compile(r"<\|")  # chat-template special tokens: <|im_start|>, <|endoftext|>...


def fence(tag: str, value: str | Sequence[str]) -> str:
    """``value`` inside ``<tag>`` ... ``</tag>``; a list becomes numbered ``<context>`` tags."""
    if isinstance(value, str):
        return f"<{tag}>\n{_neutralise(value)}\n</{tag}>"
    inner = "\n".join(f'<context id="{i}">\n{_neutralise(v)}\n</context>' for i, v in enumerate(value, start=1))
    return f"<{tag}>\n{inner}\n</{tag}>"


def _neutralise(text: str) -> str:
    # "</" starts any closing tag; a space after "<" keeps the text readable but inert.
    return _MARKER.sub("< |", text.replace("</", "< /"))


@dataclass(frozen=True)
class VerdictPrompt:
    """A single-item verdict prompt in parts.

    Attributes:
        system: System prompt, with the rule about fenced data.
        examples: Few-shot turns, as (user, assistant) pairs, in the single-item format.
        shared: The fenced shared fields: the start of the user turn.
        asks: Template of the rest of the user turn; ``{item}`` is the fenced item.
        answers: The two answers the judge chooses between, yes first.
    """

    system: str
    examples: tuple[tuple[str, str], ...]
    shared: str
    asks: str
    answers: tuple[str, str] = ("Yes", "No")

    def item(self, item: str, tag: str) -> str:
        """The rest of the user turn for one item."""
        return self.asks.format(item=fence(tag, item))

    def messages(self, item: str, tag: str) -> list[dict[str, str]]:
        """The whole prompt for one item as chat messages (for backends without prefix reuse)."""
        return self.chat(self.item(item, tag))

    def chat(self, rest: str) -> list[dict[str, str]]:
        """Chat messages whose last user turn is the shared fields followed by ``rest``."""
        messages = [{"role": "system", "content": self.system}]
        for user, assistant in self.examples:
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        messages.append({"role": "user", "content": self.shared + rest})
        return messages


class PromptBook:
    """The prompts of one language.

    Args:
        lang: ``"en"`` or ``"zh"``.
    """

    def __init__(self, lang: str):
        if lang not in LANGUAGES:
            raise ValueError(f"no prompts for language '{lang}'; available: {', '.join(LANGUAGES)}")
        self.lang = lang
        self._data = _load(lang)

    def task(self, name: str) -> dict[str, Any]:
        try:
            return self._data["tasks"][name]
        except KeyError:
            raise KeyError(f"no prompt '{name}' in prompts/{self.lang}.yaml") from None

    def item_tag(self, task: str) -> str:
        return self.task(task)["item"]

    def _system(self, spec: dict[str, Any]) -> str:
        return f"{spec['system'].strip()}\n\n{self._data['guard'].strip()}"

    def _shared(self, spec: dict[str, Any], shared: Mapping[str, FieldValue]) -> str:
        missing = [f for f in spec["shared"] if f not in shared]
        if missing:
            raise KeyError(f"prompt needs field(s) {', '.join(missing)}")
        fenced = []
        for name in spec["shared"]:
            value = shared[name]
            if value is not None:
                fenced.append(fence(name, value) + "\n")
        return "".join(fenced)

    def verdict(self, task: str, shared: Mapping[str, FieldValue]) -> VerdictPrompt:
        """The single-item verdict prompt of ``task`` for these shared fields."""
        spec = self.task(task)
        asks = "{item}\n" + spec["asks"].strip() + " " + self._data["yes_no"].strip() + "\n"
        examples = []
        for example in spec.get("examples", []):
            head = self._shared(spec, example["shared"])
            for case in example["items"]:
                user = head + asks.format(item=fence(spec["item"], case["item"]))
                examples.append((user, case["answer"]))
        return VerdictPrompt(self._system(spec), tuple(examples), self._shared(spec, shared), asks)

    def batch_messages(self, task: str, shared: Mapping[str, FieldValue], items: Sequence[str]) -> list[dict[str, str]]:
        """Chat messages judging all ``items`` in one call; the reply is JSON following
        :data:`BATCH_VERDICTS_SCHEMA`: ``{"verdicts": [{"id": 1, "reason": "...", "verdict": "yes"}]}``."""
        spec = self.task(task)
        instruction = self._data["batch"].strip()
        messages = [{"role": "system", "content": self._system(spec)}]
        for example in spec.get("examples", []):
            texts = [case["item"] for case in example["items"]]
            messages.append({"role": "user", "content": self._batch_user(spec, example["shared"], texts, instruction)})
            reply = {
                "verdicts": [
                    {"id": i, "reason": case.get("reason", ""), "verdict": case["answer"].lower()}
                    for i, case in enumerate(example["items"], start=1)
                ]
            }
            messages.append({"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)})
        messages.append({"role": "user", "content": self._batch_user(spec, shared, items, instruction)})
        return messages

    def _batch_user(self, spec, shared, items, instruction) -> str:
        listed = "\n".join(f'<{spec["item"]} id="{i}">\n{_neutralise(text)}\n</{spec["item"]}>' for i, text in enumerate(items, start=1))
        return f"{self._shared(spec, shared)}{listed}\n{instruction.format(question=spec['asks'].strip(), n=len(items))}"

    def scale(self, task: str, shared: Mapping[str, FieldValue]) -> VerdictPrompt:
        """A prompt whose answer is one of a few options (a rubric score)."""
        spec = self.task(task)
        examples = tuple(
            (self._shared(spec, example["shared"]) + spec["ask"].strip() + "\n", example["answer"]) for example in spec.get("examples", [])
        )
        return VerdictPrompt(self._system(spec), examples, self._shared(spec, shared), spec["ask"].strip() + "\n")

    def reask(self, kind: str, **values: str) -> str:
        """The instruction that asks again after an unusable reply: ``"json"`` (with
        ``problem``), ``"yes_no"`` or ``"option"`` (with ``options``)."""
        return self._data["reask"][kind].format(**values)

    def generation_messages(self, task: str, fields: Mapping[str, FieldValue]) -> list[dict[str, str]]:
        """Chat messages asking for a JSON object (the task's ``ask`` says which)."""
        spec = self.task(task)
        messages = [{"role": "system", "content": self._system(spec)}]
        for example in spec.get("examples", []):
            messages.append({"role": "user", "content": self._shared(spec, example["shared"]) + spec["ask"].strip()})
            messages.append({"role": "assistant", "content": json.dumps(example["answer"], ensure_ascii=False)})
        messages.append({"role": "user", "content": self._shared(spec, fields) + spec["ask"].strip()})
        return messages


@lru_cache(maxsize=len(LANGUAGES))
def _load(lang: str) -> dict[str, Any]:
    text = resources.files("ragmeter.judges").joinpath("prompts").joinpath(f"{lang}.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)
