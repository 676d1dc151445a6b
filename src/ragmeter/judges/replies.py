"""Reading what a chat model answered: the first token's log-probabilities, yes/no words in
English and Chinese, one of a few options, JSON (repaired when broken, checked against a
schema) and the verdicts of a batched request.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragmeter.judges.base import Verdict
from ragmeter.judges.requests import short

YES = {"yes", "true", "是", "是的"}


NO = {"no", "false", "否", "不是"}


# What a batch reply must be to be used at all; entries are checked one by one.
BATCH_SHAPE: dict[str, Any] = {"type": "object", "properties": {"verdicts": {"type": "array"}}, "required": ["verdicts"]}


CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def content(response) -> str:
    """The text of the first choice's message: its content, or the text of its content parts
    (``[{"type": "text", "text": ...}]``, as some servers answer); ``""`` when it has none."""
    text = getattr(response.choices[0].message, "content", None)
    if isinstance(text, list):
        return "".join(part["text"] for part in text if isinstance(part, dict) and isinstance(part.get("text"), str))
    return text if isinstance(text, str) else ""


def shape_problem(response) -> str | None:
    """What makes ``response`` no chat completion to read (no choices, a first choice that is
    no object with a message, a message that is no object or whose content is neither text
    nor text parts), or ``None``. The server's words are quoted unredacted. (A message that is null, or without content, reads as an
    empty reply: asked again.)"""
    if isinstance(response, str):  # (the openai package's reading of a body that is no JSON)
        return f"a reply that is not JSON: {short(response, 100)}"
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        error = getattr(response, "error", None)  # a 200 carrying an error, as some proxies send
        said = error.get("message") if isinstance(error, dict) else None
        return "a response without choices" + (f": {short(str(said), 200)}" if said else "")
    if not hasattr(choices[0], "message"):
        return "a response whose choice is not an object with a message"
    message = choices[0].message
    if message is not None and not hasattr(message, "content"):
        return "a response whose message is not an object"
    if message is not None and not isinstance(message.content, (str, list, type(None))):
        return "a response whose message content is not text"
    return None


def finish_reason(response) -> str | None:
    return response.choices[0].finish_reason


def top_logprobs(response) -> list[tuple[str, float]]:
    """(token, logprob) of the first generated token's alternatives (see :func:`alternatives`);
    empty when none."""
    logprobs = getattr(response.choices[0], "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if not isinstance(content, list) or not content:
        return []
    first = content[0]
    return alternatives(getattr(first, "top_logprobs", None)) or alternatives([first])


def alternatives(entries: Any) -> list[tuple[str, float]]:
    """(token, logprob) of the ``entries`` (a token's ``top_logprobs``) that are what a
    server should send: a text token with a finite log-probability, at most 0 (a larger one,
    which no probability has, counts as 0). The rest are left out, so that a malformed entry
    is no answer (the reply's text is read instead), never an overflow or a NaN."""
    if not isinstance(entries, list):
        return []
    found = []
    for entry in entries:
        token, logprob = getattr(entry, "token", None), getattr(entry, "logprob", None)
        if isinstance(token, str) and isinstance(logprob, (int, float)) and not isinstance(logprob, bool) and math.isfinite(logprob):
            found.append((token, min(float(logprob), 0.0)))
    return found


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


#: Longest reply handed to the JSON repairer, in characters: well above a reply of the 2,048
#: tokens a JSON request allows. The repairer's time grows faster than the text (a reply of
#: nested brackets and 400 kB took it 5 minutes, the run's event loop blocked all along).
REPAIR_LIMIT = 20_000


def parse_json(text: str) -> tuple[Any | None, str]:
    """The JSON value in ``text`` (repaired if broken and not over :data:`REPAIR_LIMIT`
    characters), or ``None`` and the problem."""
    if not text.strip():
        return None, "the reply was empty"
    try:
        return json.loads(text), ""
    except ValueError:
        pass
    except RecursionError:
        return None, "the reply was JSON nested too deep to read"
    if len(text) > REPAIR_LIMIT:
        return None, f"the reply was not JSON, and too long to repair ({len(text)} characters)"
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


def extract_verdicts(entries: list[Any], n: int, probabilities: Sequence[float | None] | None = None) -> dict[int, Verdict]:
    """Usable entries of a batch reply by 0-based item index: ids 1..n (or, for an entry
    without an id, its position), each with a yes or no; the first entry for an id wins.

    ``probabilities``: P(yes) read from the log-probabilities at each ``"verdict"`` value
    of the reply (see :func:`verdict_probabilities`), one per entry object that has a
    ``"verdict"`` key, in order; an entry with a probability gets it (method
    ``"logprobs"``), the others their text's 1.0 or 0.0 (method ``"text"``). Ignored when
    their number differs from the number of such entries (the reply was repaired, say).
    """
    with_verdict = [entry for entry in entries if isinstance(entry, dict) and "verdict" in entry]
    if probabilities is not None and len(probabilities) != len(with_verdict):
        probabilities = None
    read = {id(entry): p for entry, p in zip(with_verdict, probabilities or [], strict=False)}
    found: dict[int, Verdict] = {}
    for position, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            continue
        p_yes = yes_no(entry.get("verdict"))
        if p_yes is None:
            continue
        from_logprobs = read.get(id(entry))
        ident = entry.get("id", position)
        try:
            ident = int(ident)
        except (TypeError, ValueError):
            continue
        if not 1 <= ident <= n or ident - 1 in found:
            continue
        reason = str(entry.get("reason") or "").strip()
        if from_logprobs is not None:
            found[ident - 1] = Verdict(p_yes=from_logprobs, reason=reason or None, method="logprobs")
        else:
            found[ident - 1] = Verdict(p_yes=p_yes, reason=reason or None, method="text")
    return found


# Where a verdict's value starts in a batch reply: after ``"verdict":`` and an opening quote.
# (A ``"verdict"`` inside a reason is escaped, ``\"verdict\"``, and does not match.)
VERDICT_VALUE = re.compile(r'(?<!\\)"verdict"\s*:\s*"?')


def token_stream(response) -> list[tuple[str, list[tuple[str, float]]]]:
    """Each generated token with its top alternatives (token, logprob; see
    :func:`alternatives`); empty when the server returned no log-probabilities, or tokens
    that are not text."""
    logprobs = getattr(response.choices[0], "logprobs", None)
    tokens = getattr(logprobs, "content", None) if logprobs is not None else None
    stream = []
    for token in tokens if isinstance(tokens, list) else []:
        if not isinstance(getattr(token, "token", None), str):
            return []
        stream.append((token.token, alternatives(getattr(token, "top_logprobs", None)) or alternatives([token])))
    return stream


def yes_share(alternatives: Sequence[tuple[str, float]], prefix: str = "") -> float | None:
    """P(yes) / (P(yes) + P(no)) among ``alternatives`` (token, logprob) that start with
    ``prefix`` and continue with a yes or no word (any case, English or Chinese); ``None``
    when none does."""
    yes = no = 0.0
    for token, logprob in alternatives:
        if not token.startswith(prefix):
            continue
        word = answer_word(token[len(prefix) :]).strip("\"'`")
        word = first_word(word).lower() if word else word
        if word in YES:
            yes += math.exp(logprob)
        elif word in NO:
            no += math.exp(logprob)
    if yes + no <= 0:
        return None
    return min(max(yes / (yes + no), 0.0), 1.0)


def verdict_probabilities(response) -> list[float | None] | None:
    """P(yes) at each ``"verdict"`` value of a batch reply, in the reply's order, from the
    top log-probabilities of the token where the value starts (alternatives that share the
    token's text before the value, then say yes or no); ``None`` for a value whose
    alternatives name neither. ``None`` when the reply carries no log-probabilities."""
    stream = token_stream(response)
    if not stream:
        return None
    text = "".join(token for token, _ in stream)
    ends, total = [], 0
    for token, _ in stream:
        total += len(token)
        ends.append(total)
    found: list[float | None] = []
    index = 0
    for match in VERDICT_VALUE.finditer(text):
        offset = match.end()
        while index < len(stream) and ends[index] <= offset:
            index += 1
        if index >= len(stream):
            found.append(None)
            continue
        start = ends[index] - len(stream[index][0])
        found.append(yes_share(stream[index][1], text[start:offset]))
    return found


def reask(messages: list[dict[str, str]], reply: str, instruction: str) -> list[dict[str, str]]:
    """The conversation with the unusable reply (its first :data:`REPAIR_LIMIT` characters: a
    server that ignored the reply limit does not make the next prompt too long for the window)
    and an instruction to answer again."""
    if reply.strip():
        return [*messages, {"role": "assistant", "content": reply[:REPAIR_LIMIT]}, {"role": "user", "content": instruction}]
    last = messages[-1]
    return [*messages[:-1], {"role": last["role"], "content": f"{last['content']}\n\n{instruction}"}]
