"""Reading what a chat model answered: the first token's log-probabilities, yes/no words in
English and Chinese, one of a few options, JSON (repaired when broken, checked against a
schema) and the verdicts of a batched request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.judges.base import Verdict

YES = {"yes", "true", "是", "是的"}


NO = {"no", "false", "否", "不是"}


# What a batch reply must be to be used at all; entries are checked one by one.
BATCH_SHAPE: dict[str, Any] = {"type": "object", "properties": {"verdicts": {"type": "array"}}, "required": ["verdicts"]}


CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def content(response) -> str:
    message = response.choices[0].message
    return (message.content if message is not None else None) or ""


def finish_reason(response) -> str | None:
    return response.choices[0].finish_reason


def top_logprobs(response) -> list[tuple[str, float]]:
    """(token, logprob) of the first generated token's alternatives; empty when none."""
    logprobs = getattr(response.choices[0], "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if not content:
        return []
    first = content[0]
    top = list(getattr(first, "top_logprobs", None) or [])
    if not top and getattr(first, "token", None) is not None:
        top = [first]
    return [(t.token, float(t.logprob)) for t in top if t.token is not None and t.logprob is not None]


def answer_word(token: str) -> str:
    return token.strip().lower()


def first_word(text: str) -> str:
    match = re.match(r"\s*([A-Za-z]+|[\u4e00-\u9fff]{1,2})", text)
    return match.group(1) if match else text.strip()


def yes_no(value: Any) -> float | None:
    """1.0 for a yes, 0.0 for a no, ``None`` for anything else."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if not isinstance(value, str):
        return None
    word = value.strip().strip(".。!！\"'` ").lower()
    if word in YES:
        return 1.0
    if word in NO:
        return 0.0
    return None


def option_in(text: str, options: Sequence[str]) -> str | None:
    """The option the reply names first (as a whole word)."""
    best: tuple[int, str] | None = None
    for option in options:
        match = re.search(rf"(?<![\w.]){re.escape(option)}(?![\w])", text)
        if match and (best is None or match.start() < best[0]):
            best = (match.start(), option)
    return best[1] if best else None


def parse_json(text: str) -> tuple[Any | None, str]:
    """The JSON value in ``text`` (repaired if broken), or ``None`` and the problem."""
    if not text.strip():
        return None, "the reply was empty"
    try:
        return json.loads(text), ""
    except ValueError:
        pass
    try:
        import json_repair

        value = json_repair.loads(text)
    except Exception:  # the repairer gives up in its own ways
        value = None
    if value in (None, "") or not isinstance(value, (dict, list)):
        return None, "the reply was not JSON"
    return value, ""


def schema_problem(value: Any, schema: Mapping[str, Any], path: str = "") -> str | None:
    """A minimal check: objects are objects with their required properties, arrays are arrays."""
    kind = schema.get("type")
    where = path or "the reply"
    if kind == "object" or (kind is None and "properties" in schema):
        if not isinstance(value, dict):
            return f"{where} is not a JSON object"
        for key in schema.get("required", []):
            if key not in value:
                return f"{where} lacks the required property '{key}'"
        for key, sub in (schema.get("properties") or {}).items():
            if key in value and isinstance(sub, Mapping):
                problem = schema_problem(value[key], sub, f"{path}.{key}" if path else key)
                if problem:
                    return problem
    elif kind == "array":
        if not isinstance(value, list):
            return f"{where} is not a JSON array"
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, entry in enumerate(value):
                problem = schema_problem(entry, items, f"{where}[{index}]")
                if problem:
                    return problem
    return None


def wrap_verdicts(value: Any) -> Any:
    """A bare list of verdict entries, as small models sometimes reply, in its wrapper."""
    if isinstance(value, list) and all(isinstance(entry, dict) for entry in value):
        return {"verdicts": value}
    return value


def extract_verdicts(entries: list[Any], n: int) -> dict[int, Verdict]:
    """Usable entries of a batch reply by 0-based item index: ids 1..n (or, for an entry
    without an id, its position), each with a yes or no; the first entry for an id wins."""
    found: dict[int, Verdict] = {}
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            continue
        p_yes = yes_no(entry.get("verdict"))
        if p_yes is None:
            continue
        ident = entry.get("id", position)
        try:
            ident = int(ident)
        except (TypeError, ValueError):
            continue
        if not 1 <= ident <= n or ident - 1 in found:
            continue
        reason = str(entry.get("reason") or "").strip()
        found[ident - 1] = Verdict(p_yes=p_yes, reason=reason or None, method="text")
    return found


def reask(messages: list[dict[str, str]], reply: str, instruction: str) -> list[dict[str, str]]:
    """The conversation with the unusable reply and an instruction to answer again."""
    if reply.strip():
        return [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": instruction}]
    last = messages[-1]
    return [*messages[:-1], {"role": last["role"], "content": f"{last['content']}\n\n{instruction}"}]
