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

from ragmeter.data.encodings import decode_text, not_utf8
from ragmeter.data.files import json_value, read_json_lines
from ragmeter.data.issues import InputIssue, describe_briefly
from ragmeter.data.schema import Sample


class TranscriptError(ValueError):
    """A transcript that cannot be read; the message names the file, line and field."""


def read_transcripts(path: str | Path, *, tools: Collection[str] | None = None, issues: list[InputIssue] | None = None) -> list[Sample]:
    """The samples of every transcript in a file (see the module's description).

    Args:
        path: A ``.jsonl`` file (one transcript per line) or a ``.json`` file.
        tools: Names of the tools whose results count as retrieved contexts (default: all).
        issues: Where to note each transcript that is malformed (a line that is not JSON, a
            field of the wrong type) as an :class:`~ragmeter.data.issues.InputIssue`, the
            transcript skipped and the others read. Without it, the first one raises.

    Raises:
        TranscriptError: The file is missing, cannot be read or is not JSON as a whole, or
            (without ``issues``) a transcript is malformed (the message names the file, the line
            and the field).
    """
    path = Path(path)
    samples: list[Sample] = []
    for location, transcript, problem in _transcripts(path):
        where = f"{path}, {location}"
        try:
            if problem is not None:
                raise TranscriptError(f"{where}: {problem}")
            samples += transcript_samples(transcript, where=where, tools=tools)
        except TranscriptError as exc:
            if issues is None:
                raise
            issues.append(InputIssue(str(path), location, None, str(exc).removeprefix(f"{where}: ")))
    return samples


def _transcripts(path: Path) -> Iterator[tuple[str, Any, str | None]]:
    """``(location, parsed transcript, None)`` for each transcript of the file, or ``(location,
    None, why)`` for a line that is not JSON.

    Raises:
        TranscriptError: The file cannot be read, is not UTF-8 (a ``.json`` file may be in the
            encoding a byte-order mark names) or a ``.json`` file is not JSON.
    """
    try:
        if path.suffix.lower() == ".json":
            try:
                data = json_value(decode_text(path.read_bytes()))
            except ValueError as exc:
                raise TranscriptError(f"{path}: {exc}") from None
            items = data if isinstance(data, list) and data and not _is_message(data[0]) else [data]
            for index, item in enumerate(items):
                yield f"transcript {index + 1}", item, None
            return
        for number, line in read_json_lines(path):
            try:
                yield f"line {number}", json_value(line), None
            except ValueError as exc:
                yield f"line {number}", None, str(exc)
    except FileNotFoundError:
        raise TranscriptError(f"{path} not found") from None
    except UnicodeDecodeError as exc:
        where, said = not_utf8(path, exc)
        raise TranscriptError(f"{path}, {where}: {said}" if where != "file" else f"{path}: {said}") from None
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None


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
        if base_id is not None and (isinstance(base_id, bool) or not isinstance(base_id, (str, int))):
            raise TranscriptError(f"{where}: 'id' must be a string, got {describe_briefly(base_id)}")
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
