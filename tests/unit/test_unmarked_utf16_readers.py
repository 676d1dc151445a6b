"""Every reader of a user's JSON-lines file names UTF-16 without a byte-order mark as such.

ASCII text in UTF-16 without a mark is valid UTF-8 with a NUL byte beside each letter: the
samples reader refused it with the encoding named, but a labels, preferences, traces, probes
or transcripts file was read as UTF-8 and every line was found to be invalid JSON, which hid
the cause. They now share the samples reader's check (``unmarked_utf16_file``)."""

from __future__ import annotations

import json

import pytest

from ragmeter.data.files import read_json_lines
from ragmeter.decide.labels import read_labels, score
from ragmeter.decide.pairs import read_preferences
from ragmeter.decide.probe_files import ProbeFileError, load_probe_file
from ragmeter.observe.export import TraceFileError, read_spans
from ragmeter.observe.transcripts import TranscriptError, read_transcripts

SAID = "the file looks like UTF-16LE without a byte-order mark (every other byte of its start is NUL): convert it to UTF-8, e.g. iconv -f UTF-16LE -t UTF-8 in > out"


def utf16(tmp_path, name: str, *rows: dict) -> str:
    path = tmp_path / name
    path.write_bytes("".join(json.dumps(row) + "\n" for row in rows).encode("utf-16-le"))
    return str(path)


def test_a_labels_or_preferences_file_says_it_is_utf16(tmp_path):
    with pytest.raises(ValueError) as refused:
        read_labels(utf16(tmp_path, "labels.jsonl", {"id": "a", "label": 1}, {"id": "b", "label": 0}), "label", score)
    assert str(refused.value) == f"{tmp_path / 'labels.jsonl'}: {SAID}"
    with pytest.raises(ValueError) as refused:
        read_preferences(utf16(tmp_path, "prefs.jsonl", {"id": "a", "better": "A"}))
    assert str(refused.value) == f"{tmp_path / 'prefs.jsonl'}: {SAID}"


def test_a_traces_file_says_it_is_utf16(tmp_path):
    path = utf16(tmp_path, "traces.jsonl", {"trace_id": "t", "name": "retrieve"})
    with pytest.raises(TraceFileError, match="UTF-16LE without a byte-order mark"):
        list(read_spans(path, issues=[]))


def test_a_probes_file_says_it_is_utf16(tmp_path):
    path = utf16(tmp_path, "probes.jsonl", {"id": "p", "question": "q", "forbidden": ["x"]})
    with pytest.raises(ProbeFileError, match="UTF-16LE without a byte-order mark"):
        load_probe_file(path)


def test_a_transcripts_file_and_every_json_lines_reader_say_it_is_utf16(tmp_path):
    path = utf16(tmp_path, "chat.jsonl", {"messages": [{"role": "user", "content": "hi"}]})
    with pytest.raises(TranscriptError, match="UTF-16LE without a byte-order mark"):
        read_transcripts(path)
    with pytest.raises(UnicodeDecodeError) as refused:
        list(read_json_lines(path))
    assert str(refused.value) == SAID


@pytest.mark.parametrize("name", ["probes.yaml", "probes.jsonl", "chat.jsonl"])
def test_a_probes_or_transcripts_file_with_a_utf16_mark_names_the_encoding_and_the_conversion(tmp_path, name):
    """They said Python's "cannot read it: 'utf-8' codec can't decode byte 0xff in position 0:
    invalid start byte", naming no encoding and nothing to do."""
    path = tmp_path / name
    row = (
        {"id": "p", "question": "q", "forbidden": ["x"]} if name.startswith("probes") else {"messages": [{"role": "user", "content": "hi"}]}
    )
    path.write_bytes((json.dumps(row) + "\n").encode("utf-16"))
    with pytest.raises((ProbeFileError, TranscriptError)) as refused:
        load_probe_file(path) if name.startswith("probes") else read_transcripts(path)
    line = f"{path}:1" if name.startswith("probes") else f"{path}, line 1"
    said = (
        f"{line}: invalid UTF-8 (byte 0xff at column 1); the file is in UTF-16: convert it to UTF-8, e.g. iconv -f UTF-16 -t UTF-8 in > out"
    )
    assert str(refused.value) == said
    path.write_bytes(b"\n" + (json.dumps(row) + " caf\xe9\n").encode("latin-1"))
    with pytest.raises(
        (ProbeFileError, TranscriptError), match=r"(:2|, line 2): invalid UTF-8 \(byte 0xe9 at column \d+\); the file may be in"
    ):
        load_probe_file(path) if name.startswith("probes") else read_transcripts(path)


@pytest.mark.parametrize("marked", [True, False])
def test_a_json_transcript_file_in_utf16_is_read_as_a_json_samples_file_is(tmp_path, marked):
    """A whole .json file is decoded as the samples reader decodes one (decode_text): UTF-16 with
    its byte-order mark, or without one when its start reads as UTF-16."""
    path = tmp_path / "chat.json"
    text = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})
    path.write_bytes(text.encode("utf-16" if marked else "utf-16-le"))
    (sample,) = read_transcripts(path)
    assert (sample.user_input, sample.response) == ("hi", "hello")
