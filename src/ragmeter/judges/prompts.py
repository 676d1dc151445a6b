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

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ragmeter.data.files import yaml_value
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
        variant: A prompt file in the packaged files' format whose entries replace the
            packaged ones of this language (see :func:`load_variant`); ``None`` for the
            packaged prompts.
    """

    def __init__(self, lang: str, variant: str | Path | None = None):
        if lang not in LANGUAGES:
            raise ValueError(f"no prompts for language '{lang}'; available: {', '.join(LANGUAGES)}")
        self.lang = lang
        self._data = _load(lang) if variant is None else load_variant(lang, str(variant))

    def task_names(self) -> list[str]:
        """The names of every task of this language."""
        return list(self._data["tasks"])

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


#: Packaged prompt files whose tasks join those of ``<lang>.yaml``: ``testset_<lang>.yaml``
#: holds the test-set generation tasks (``ragmeter generate``), ``agents_<lang>.yaml`` the
#: judged agent metrics (``goal_accuracy_llm``).
EXTRA_PROMPT_FILES = ("testset", "agents")


def _packaged_text(name: str) -> str:
    return resources.files("ragmeter.judges").joinpath("prompts").joinpath(f"{name}.yaml").read_text(encoding="utf-8")


@lru_cache(maxsize=len(LANGUAGES))
def _load(lang: str) -> dict[str, Any]:
    data = yaml.safe_load(_packaged_text(lang))
    for extra in EXTRA_PROMPT_FILES:
        data["tasks"] = {**data["tasks"], **yaml.safe_load(_packaged_text(f"{extra}_{lang}"))["tasks"]}
    return data


@lru_cache(maxsize=256)
def task_version(lang: str, task: str) -> str | None:
    """Hash of the extra packaged prompt file that defines ``task`` (editing it invalidates
    that task's cached answers), or ``None`` for a task of the main file ``<lang>.yaml``."""
    for extra in EXTRA_PROMPT_FILES:
        text = _packaged_text(f"{extra}_{lang}")
        if task in (yaml.safe_load(text).get("tasks") or {}):
            return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return None


#: Top-level entries of a prompt file and the keys every task needs.
_SECTIONS = ("guard", "yes_no", "batch", "reask", "tasks")
_TASK_KEYS = ("system", "shared")


@lru_cache(maxsize=16)
def load_variant(lang: str, path: str) -> dict[str, Any]:
    """The prompts of ``lang`` with the entries of the file at ``path`` in place of the
    packaged ones: its ``guard``, ``yes_no``, ``batch`` and ``reask`` replace the packaged
    entries, and each task it defines replaces the packaged task of that name (or adds one).

    Raises:
        ValueError: The file cannot be read, is not YAML, or an entry has the wrong shape;
            the message names the file and the entry.
    """
    try:
        data = yaml_value(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the prompt file: {exc}") from None
    check_variant(data, path)
    merged = {**_load(lang), **{k: v for k, v in data.items() if k != "tasks"}}
    merged["tasks"] = {**_load(lang)["tasks"], **(data.get("tasks") or {})}
    return merged


def check_variant(data: Any, source: str) -> None:
    """Check a prompt file's shape (see :func:`load_variant`).

    Raises:
        ValueError: What is wrong and where, naming ``source``.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a prompt file is a mapping with {', '.join(_SECTIONS)} entries, like ragmeter's prompts/en.yaml")
    unknown = sorted(str(k) for k in set(data) - set(_SECTIONS))
    if unknown:
        raise ValueError(f"{source}: unknown prompt entries {', '.join(unknown)}; known: {', '.join(_SECTIONS)}")
    for key in ("guard", "yes_no", "batch"):
        if key in data and not isinstance(data[key], str):
            raise ValueError(f"{source}: {key}: expected text")
    if "reask" in data and not (isinstance(data["reask"], dict) and {"json", "yes_no", "option"} <= set(data["reask"])):
        raise ValueError(f"{source}: reask: expected a mapping with json, yes_no and option")
    tasks = data.get("tasks") or {}
    if not isinstance(tasks, dict):
        raise ValueError(f"{source}: tasks: expected a mapping of task names to prompts")
    for name, task in tasks.items():
        where = f"{source}: tasks.{name}"
        if not isinstance(task, dict):
            raise ValueError(f"{where}: expected a mapping (system, shared, item and asks, or ask)")
        missing = [k for k in _TASK_KEYS if k not in task] + ([] if "asks" in task or "ask" in task else ["asks (or ask)"])
        if missing:
            raise ValueError(f"{where}: missing {', '.join(missing)}")
        if "asks" in task and not isinstance(task.get("item"), str):
            raise ValueError(f"{where}: a verdict task (with asks) needs item: the tag of the item judged")
        if not isinstance(task["shared"], list) or not all(isinstance(f, str) for f in task["shared"]):
            raise ValueError(f"{where}.shared: expected a list of field names")
        if not isinstance(task["system"], str):
            raise ValueError(f"{where}.system: expected text")


def variant_version(path: str | Path) -> str:
    """Hash of a prompt file: editing it invalidates cached answers."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
