"""ragmeter generate, reading and chunking hostile input: a pathological heading line, a broken,
encrypted or unreadable file, a folder with nothing to read, a looping link, a JSON-lines file
that is not UTF-8."""

from __future__ import annotations

import time

from ragmeter.generate.chunking import chunk_document
from ragmeter.generate.documents import Document


def test_a_heading_line_with_a_long_run_of_spaces_is_chunked_at_once():
    # the old heading pattern backtracked cubically: 1,500 spaces took seconds, 10,000 half an hour
    text = "# Setup" + " " * 1500 + "guide ##\n\nInstall the tool first."
    started = time.perf_counter()
    chunks = chunk_document(Document("guide", text, "guide.md", "en"))
    assert time.perf_counter() - started < 1
    assert chunks[0].headings == ("Setup" + " " * 1500 + "guide",)


def test_closing_hashes_of_a_heading_are_not_its_title():
    chunks = chunk_document(Document("guide", "## Backups ##\n\nThey run nightly.", "guide.md", "en"))
    assert chunks[0].headings == ("Backups",)


def test_a_long_run_of_spaces_in_a_sentence_makes_no_blank_chunk():
    text = "Intro line here.\n\nThe value is" + " " * 5000 + "forty-two."
    chunks = chunk_document(Document("guide", text, "guide.md", "en"), size=1200, overlap=150)
    assert [c.text for c in chunks] == ["Intro line here.\nThe value is\nforty-two."]  # 5,000 spaces made four blank chunks
