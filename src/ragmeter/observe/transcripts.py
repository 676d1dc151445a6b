"""Agent transcripts in the OpenAI chat format to samples.

An agent that answers by calling tools (search, grep, read a file...) retrieves through those
calls: each user turn becomes a sample whose retrieved contexts are the results of the tool
calls made before the answer, and whose response is the assistant's last text of the turn.

Input: a JSON-lines file with one transcript per line, either a list of messages or an object
with ``messages`` (and optionally ``id`` and ``metadata``); or a ``.json`` file holding one
such transcript or a list of them. Messages follow the Chat Completions format: ``role``
(``system``, ``user``, ``assistant``, ``tool``), ``content`` (text or a list of ``{"type":
"text", "text": ...}`` parts), ``tool_calls`` on assistant messages (``id``, ``function.name``,
``function.arguments`` as JSON text) and ``tool_call_id`` on tool messages.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from ragmeter.data.encodings import UnmarkedUtf16Error, not_utf8, unmarked_utf16_file
from ragmeter.data.files import json_value, read_json_lines
from ragmeter.data.issues import describe_briefly
from ragmeter.data.schema import Sample


class TranscriptError(ValueError):
    """A transcript that cannot be read; the message names the file, line and field."""


def read_transcripts(path: str | Path, *, tools: Collection[str] | None = None) -> list[Sample]:
    """The samples of every transcript in a file (see the module's description).

    Args:
        path: A ``.jsonl`` file (one transcript per line) or a ``.json`` file.
        tools: Names of the tools whose results count as retrieved contexts (default: all).

    Raises:
        TranscriptError: The file is missing or unreadable, is not UTF-8 (the message names its
            first line that is not and the encoding it may be in: UTF-16 with or without its
            byte-order mark, Windows-1252...), or a transcript is malformed (the message names
            the file, the line and the field).
    """
    path = Path(path)
    samples: list[Sample] = []
    for where, transcript in _transcripts(path):
        samples += transcript_samples(transcript, where=where, tools=tools)
    return samples


def _transcripts(path: Path) -> Iterator[tuple[str, Any]]:
    """``(location, parsed transcript)`` for each transcript of the file."""
    try:
        if path.suffix.lower() == ".json":
            unmarked = unmarked_utf16_file(path)
            if unmarked:  # valid UTF-8 all the same: the JSON would only be found invalid
                raise UnmarkedUtf16Error(unmarked)
            text = path.read_text(encoding="utf-8")
            try:
                data = json_value(text)
            except ValueError as exc:
                raise TranscriptError(f"{path}: {exc}") from None
            items = data if isinstance(data, list) and data and not _is_message(data[0]) else [data]
            for index, item in enumerate(items):
                yield f"{path}, transcript {index + 1}", item
            return
        for number, line in read_json_lines(path):
            try:
                yield f"{path}, line {number}", json_value(line)
            except ValueError as exc:
                raise TranscriptError(f"{path}, line {number}: {exc}") from None
    except FileNotFoundError:
        raise TranscriptError(f"{path} not found") from None
    except UnicodeDecodeError as exc:  # "cannot read: 'utf-8' codec can't decode byte 0xff in position 0" named no line or encoding
        where, said = not_utf8(path, exc)
        raise TranscriptError(f"{path}: {said}" if where == "file" else f"{path}, {where}: {said}") from None
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc}") from None


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value


def transcript_samples(transcript: Any, *, where: str = "transcript", tools: Collection[str] | None = None) -> list[Sample]:
    """The samples of one transcript: one per user turn that got an answer.

    Args:
        transcript: A list of messages, or an object with ``messages`` (and ``id``, ``metadata``).
        where: Where it came from, for error messages and the samples' ``metadata.source``.
        tools: Names of the tools whose results count as retrieved contexts (default: all).

    Raises:
        TranscriptError: It is malformed (the message names ``where`` and the field).
    """
    if isinstance(transcript, dict):
        messages, base_id, extra = transcript.get("messages"), transcript.get("id"), transcript.get("metadata") or {}
        if not isinstance(extra, dict):
            raise TranscriptError(f"{where}: 'metadata' must be an object")
    else:
        messages, base_id, extra = transcript, None, {}
    if not isinstance(messages, list):
        raise TranscriptError(f"{where}: expected a list of messages or an object with 'messages'")
    samples = []
    for turn, (question, steps, response) in enumerate(_turns(messages, where), start=1):
        if response is None:
            continue
        used = [s for s in steps if tools is None or s["name"] in tools]
        with_result = [s for s in used if s["result"] is not None]
        sample_id = f"{base_id if base_id is not None else where}#{turn}"
        metadata = {**extra, "source": where, "turn": turn, "tool_calls": [{"name": s["name"], "arguments": s["arguments"]} for s in steps]}
        samples.append(
            Sample(
                id=sample_id,
                user_input=question,
                retrieved_contexts=[s["result"] for s in with_result] or None,
                retrieved_context_ids=[_call_id(s) for s in with_result] or None,
                response=response,
                metadata=metadata,
            )
        )
    return samples


def _call_id(step: dict[str, Any]) -> str:
    """A readable identifier of a tool call: ``read(path=docs/a.md)``."""
    arguments = step["arguments"]
    if isinstance(arguments, dict):
        inside = ", ".join(f"{k}={v}" for k, v in arguments.items())
    else:
        inside = str(arguments)
    return f"{step['name']}({inside})"


def _turns(messages: list[Any], where: str) -> Iterator[tuple[str, list[dict[str, Any]], str | None]]:
    """``(question, tool steps, last assistant text)`` of each user turn."""
    question: str | None = None
    steps: list[dict[str, Any]] = []
    by_call: dict[str, dict[str, Any]] = {}
    response: str | None = None
    for index, message in enumerate(messages):
        field = f"messages[{index}]"
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise TranscriptError(f"{where}: {field}: expected an object with a 'role'")
        role = message["role"]
        if role == "user":
            if question is not None:
                yield question, steps, response
            question, steps, by_call, response = _text(message.get("content"), f"{where}: {field}.content"), [], {}, None
        elif role == "assistant":
            for position, call in enumerate(message.get("tool_calls") or []):
                step = _tool_call(call, f"{where}: {field}.tool_calls[{position}]")
                steps.append(step)
                by_call[step["id"]] = step
            text = _text(message.get("content"), f"{where}: {field}.content") if message.get("content") is not None else ""
            if text.strip():
                response = text
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in by_call:
                raise TranscriptError(f"{where}: {field}.tool_call_id: {call_id!r} answers no earlier tool call")
            by_call[call_id]["result"] = _text(message.get("content"), f"{where}: {field}.content")
    if question is not None:
        yield question, steps, response


def _tool_call(call: Any, where: str) -> dict[str, Any]:
    """``{"id", "name", "arguments", "result"}`` of one assistant tool call."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise TranscriptError(f"{where}.function.name: missing; expected {{'id', 'function': {{'name', 'arguments'}}}}")
    if call.get("id") is not None and not isinstance(call["id"], str):
        raise TranscriptError(f"{where}.id: expected a string, got {describe_briefly(call['id'])}")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise TranscriptError(f"{where}.function.arguments: invalid JSON: {exc.msg}") from None
    return {"id": call.get("id"), "name": function["name"], "arguments": arguments, "result": None}


def _text(content: Any, where: str) -> str:
    """Message content as text: a string, or the text parts of a list joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if all(isinstance(p, str) for p in parts):
            return "\n".join(parts)  # type: ignore[arg-type]
    raise TranscriptError(f"{where}: expected text or a list of text parts")
