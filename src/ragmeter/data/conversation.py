"""Conversations and agent traces, in the form of RAGAS's ``MultiTurnSample``.

A record whose ``user_input`` is a list of messages is a conversation::

    {"id": "c1",
     "user_input": [
        {"type": "human", "content": "Book me a table for two tonight"},
        {"type": "ai", "content": "", "tool_calls": [{"name": "find_restaurant", "args": {"party": 2}}]},
        {"type": "tool", "content": "Chez Lu: free at 20:00"},
        {"type": "ai", "content": "Chez Lu has a table at 20:00.", "retrieved_contexts": ["..."]}],
     "reference": "table booked at Chez Lu",
     "reference_tool_calls": [{"name": "find_restaurant", "args": {"party": 2}}]}

Messages are ``human``, ``ai`` or ``tool`` (RAGAS's ``type`` values); an ``ai`` message may
carry ``tool_calls`` (``name`` and ``args``) and, as ragmeter's addition for per-turn
retrieval, the ``retrieved_contexts`` its turn was given. A conversation becomes one
:class:`~ragmeter.data.schema.Sample` so every part of a run (resume, reports, comparisons)
works unchanged: the messages go to ``metadata.conversation`` and the expected calls to
``metadata.reference_tool_calls``; ``user_input`` is the last human message, ``response`` the
last ai message with text, and ``retrieved_contexts`` every context the conversation saw
(per-turn contexts and tool results, in order), so single-turn metrics score the final turn.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: Metadata keys a conversation fills.
CONVERSATION = "conversation"
REFERENCE_TOOL_CALLS = "reference_tool_calls"


class ToolCall(BaseModel):
    """A call an agent made (or should make): the tool's name and its arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class Message(BaseModel):
    """One message of a conversation.

    Attributes:
        type: ``human`` (the user), ``ai`` (the system) or ``tool`` (a tool's result).
        content: The message's text (an ai message that only calls tools may leave it empty).
        tool_calls: The tools an ai message called.
        retrieved_contexts: The contexts retrieved for an ai message's turn.
        metadata: Anything else about the message.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["human", "ai", "tool"]
    content: str = ""
    tool_calls: list[ToolCall] | None = None
    retrieved_contexts: list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class _Conversation(BaseModel):
    """The conversation fields of a record, validated (errors name ``user_input[2].type``)."""

    model_config = ConfigDict(extra="ignore")

    user_input: list[Message] = Field(min_length=1)
    reference_tool_calls: list[ToolCall] | None = None


def is_conversation(record: dict[str, Any]) -> bool:
    """Whether ``record`` is a conversation (its ``user_input`` is a list of messages)."""
    return isinstance(record.get("user_input"), list)


def conversation_record(record: dict[str, Any]) -> dict[str, Any]:
    """The single-turn record a conversation record stands for (see the module docstring).

    Raises:
        pydantic.ValidationError: A message or expected call is malformed; the error's
            location names it (``user_input``, 2, ``type``).
    """
    parsed = _Conversation.model_validate(record)
    messages = parsed.user_input
    humans = [m.content for m in messages if m.type == "human"]
    answers = [m.content for m in messages if m.type == "ai" and m.content.strip()]
    contexts = [text for m in messages for text in contexts_of(m)]
    metadata = record.get("metadata") if record.get("metadata") is not None else {}
    if isinstance(metadata, dict):  # otherwise the sample's validation names the bad field
        metadata = {**metadata, CONVERSATION: [m.model_dump(exclude_none=True) for m in messages]}
        if parsed.reference_tool_calls is not None:
            metadata[REFERENCE_TOOL_CALLS] = [c.model_dump() for c in parsed.reference_tool_calls]
    single = {k: v for k, v in record.items() if k not in ("user_input", REFERENCE_TOOL_CALLS)}
    single |= {"user_input": humans[-1] if humans else None, "response": answers[-1] if answers else None, "metadata": metadata}
    if contexts and "retrieved_contexts" not in record and "contexts" not in record:
        single["retrieved_contexts"] = contexts
    return single


def contexts_of(message: Message | dict[str, Any]) -> list[str]:
    """The contexts a message brings: an ai message's retrieved contexts, a tool's result."""
    message = message if isinstance(message, Message) else Message.model_validate(message)
    if message.type == "tool":
        return [message.content] if message.content.strip() else []
    return list(message.retrieved_contexts or []) if message.type == "ai" else []
