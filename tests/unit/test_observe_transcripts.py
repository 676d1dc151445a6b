"""Agent transcripts in the OpenAI chat format become samples whose retrieved contexts are the
results of the agent's tool calls."""

from __future__ import annotations

import json

import pytest

from ragmeter.observe import TranscriptError, read_transcripts, transcript_samples


def _call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


TRANSCRIPT = {
    "id": "session-7",
    "metadata": {"agent": "docs-bot"},
    "messages": [
        {"role": "system", "content": "You answer from the docs."},
        {"role": "user", "content": "How big is the small runner?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "search", {"query": "small runner"})]},
        {"role": "tool", "tool_call_id": "c1", "content": "docs/runners.md: small = 2 vCPU"},
        {"role": "assistant", "content": "Let me read it.", "tool_calls": [_call("c2", "read", {"path": "docs/runners.md"})]},
        {
            "role": "tool",
            "tool_call_id": "c2",
            "content": [{"type": "text", "text": "Small runners have 2 vCPU"}, {"type": "text", "text": "and 4 GB RAM."}],
        },
        {"role": "assistant", "content": "2 vCPU and 4 GB RAM."},
        {"role": "user", "content": [{"type": "text", "text": "And medium?"}]},
        {"role": "assistant", "tool_calls": [_call("c3", "grep", {"pattern": "medium"}), _call("c4", "list_files", {})]},
        {"role": "tool", "tool_call_id": "c3", "content": "medium = 4 vCPU"},
        {"role": "tool", "tool_call_id": "c4", "content": "docs/runners.md"},
        {"role": "assistant", "content": "4 vCPU."},
        {"role": "user", "content": "Thanks"},
    ],
}


def test_each_answered_user_turn_becomes_a_sample_with_tool_results_as_contexts():
    first, second = transcript_samples(TRANSCRIPT, where="t.jsonl, line 1")
    assert first.id == "session-7#1" and first.user_input == "How big is the small runner?"
    assert first.retrieved_contexts == ["docs/runners.md: small = 2 vCPU", "Small runners have 2 vCPU\nand 4 GB RAM."]
    assert first.retrieved_context_ids == ["search(query=small runner)", "read(path=docs/runners.md)"]
    assert first.response == "2 vCPU and 4 GB RAM."
    assert first.metadata == {
        "agent": "docs-bot",
        "source": "t.jsonl, line 1",
        "turn": 1,
        "tool_calls": [
            {"name": "search", "arguments": {"query": "small runner"}},
            {"name": "read", "arguments": {"path": "docs/runners.md"}},
        ],
    }
    assert second.user_input == "And medium?" and second.response == "4 vCPU."
    assert second.retrieved_contexts == ["medium = 4 vCPU", "docs/runners.md"]


def test_only_the_chosen_tools_count_as_retrieval():
    _, second = transcript_samples(TRANSCRIPT, tools={"grep", "read"})
    assert second.retrieved_contexts == ["medium = 4 vCPU"] and second.retrieved_context_ids == ["grep(pattern=medium)"]
    assert [c["name"] for c in second.metadata["tool_calls"]] == ["grep", "list_files"]


def test_files_of_either_shape_are_read(tmp_path):
    lines = tmp_path / "t.jsonl"
    lines.write_text(json.dumps(TRANSCRIPT) + "\n\n" + json.dumps(TRANSCRIPT["messages"][:7]) + "\n")
    samples = read_transcripts(lines)
    assert [s.id for s in samples] == ["session-7#1", "session-7#2", f"{lines}, line 3#1"]
    whole = tmp_path / "t.json"
    whole.write_text(json.dumps([TRANSCRIPT, TRANSCRIPT]))
    assert len(read_transcripts(whole)) == 4
    single = tmp_path / "one.json"
    single.write_text(json.dumps(TRANSCRIPT["messages"]))
    assert len(read_transcripts(single)) == 2


@pytest.mark.parametrize(
    "messages, message",
    [
        ([{"content": "no role"}], r"line 1: messages\[0\]: expected an object with a 'role'"),
        ([{"role": "user", "content": 5}], r"line 1: messages\[0\]\.content: expected text or a list of text parts"),
        (
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "s", "arguments": "{oops"}}]},
            ],
            r"line 1: messages\[1\]\.tool_calls\[0\]\.function\.arguments: invalid JSON",
        ),
        ([{"role": "assistant", "tool_calls": [{"id": "c"}]}], r"messages\[0\]\.tool_calls\[0\]\.function\.name: missing"),
        ([{"role": "tool", "tool_call_id": "nope", "content": "x"}], r"messages\[0\]\.tool_call_id: 'nope' answers no earlier tool call"),
        (  # ids of a type no tool call has (a list cannot even be looked up): named, not an unexpected TypeError
            [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"id": ["c"], "function": {"name": "s"}}]}],
            r"messages\[1\]\.tool_calls\[0\]\.id: expected a string, got \['c'\]",
        ),
        ([{"role": "tool", "tool_call_id": ["c"], "content": "x"}], r"messages\[0\]\.tool_call_id: \['c'\] answers no earlier tool call"),
    ],
)
def test_malformed_transcripts_name_the_file_line_and_field(tmp_path, messages, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(messages) + "\n")
    with pytest.raises(TranscriptError, match=message):
        read_transcripts(path)


def test_a_transcript_id_that_is_no_text_or_number_is_named(tmp_path):
    """An object as id made the samples' ids "{'a': 1}#1", without a word."""
    with pytest.raises(TranscriptError, match=r"'id' must be a string, got \{'a': 1\}"):
        transcript_samples({"id": {"a": 1}, "messages": TRANSCRIPT["messages"]})
    assert transcript_samples({"id": 7, "messages": TRANSCRIPT["messages"]})[0].id == "7#1"


def test_unreadable_files_fail_clearly(tmp_path):
    with pytest.raises(TranscriptError, match="not found"):
        read_transcripts(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n{broken\n')
    with pytest.raises(TranscriptError, match=r"bad\.jsonl, line 2: invalid JSON"):
        read_transcripts(bad)
    with pytest.raises(TranscriptError, match="expected a list of messages"):
        transcript_samples({"messages": "text"})
