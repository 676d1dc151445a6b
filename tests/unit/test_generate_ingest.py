"""ragmeter generate, reading and chunking: every format, bad files reported by name and skipped,
language per document, headline-aware chunks with stable ids."""

from __future__ import annotations

import itertools
import json
import logging
import os

import pytest

from ragmeter.cli import generate as cli_generate
from ragmeter.data.issues import InputIssue
from ragmeter.generate import documents
from ragmeter.generate.chunking import check_chunking, chunk_document
from ragmeter.generate.documents import Document, html_text, ingest


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF whose text layer holds ``text`` (ASCII)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_every_format_is_read_with_its_language(tmp_path):
    (tmp_path / "guide.md").write_text("# Guide\n\n## Backups\n\nBackups run nightly.", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("部署冻结期间禁止发布。", encoding="utf-8")
    (tmp_path / "page.html").write_text(
        "<html><head><title>Leave</title><style>p {color: red}</style></head>"
        "<body><h2>Annual leave</h2><p>Staff get 25 days.</p><script>alert(1)</script></body></html>",
        encoding="utf-8",
    )
    (tmp_path / "manual.pdf").write_bytes(minimal_pdf("Backups run every night at 02:00."))
    rows = [{"id": "p1", "title": "T", "passage": "Seasonality recurs every year.", "source": "wiki"}, {"text": "第二条文档。"}]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    read = ingest([tmp_path])
    by_id = {d.id: d for d in read.documents}
    assert read.issues == []
    assert set(by_id) == {"guide", "notes", "page", "manual", "p1", "docs-2"}
    assert by_id["notes"].lang == "zh" and by_id["docs-2"].lang == "zh" and by_id["guide"].lang == "en"
    assert by_id["page"].title == "Leave"
    assert "## Annual leave" in by_id["page"].text and "Staff get 25 days." in by_id["page"].text
    assert "alert" not in by_id["page"].text and "color" not in by_id["page"].text
    assert by_id["manual"].text == "Backups run every night at 02:00."
    assert by_id["p1"].text == "Seasonality recurs every year." and by_id["p1"].metadata == {"source": "wiki"}
    assert by_id["p1"].source.endswith("docs.jsonl:1")


def test_bad_files_and_lines_are_reported_by_name_and_skipped(tmp_path):
    (tmp_path / "good.md").write_text("Fine text.", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (tmp_path / "empty.md").write_text("   \n", encoding="utf-8")
    (tmp_path / "docs.jsonl").write_text('{"text": "ok"}\nnot json\n{"title": "no text"}\n[1]\n', encoding="utf-8")
    (tmp_path / "table.xlsx").write_bytes(b"x")
    read = ingest([tmp_path, tmp_path / "table.xlsx", tmp_path / "missing.md"])
    assert sorted(d.id for d in read.documents) == ["docs-1", "good"]
    messages = {(i.source.rsplit("/", 1)[-1], i.location, i.field): i.message for i in read.issues}
    assert messages[("latin1.txt", "file", None)].startswith("invalid UTF-8 (byte 0xe9 at byte 4); the file may be in Windows-1252")
    assert messages[("broken.pdf", "file", None)].startswith("not a readable PDF (damaged, or another kind of file): ")
    assert messages[("empty.md", "file", None)] == "the document has no text"
    assert messages[("docs.jsonl", "line 2", None)].startswith("invalid JSON")
    assert "no document text" in messages[("docs.jsonl", "line 3", "text")]
    assert messages[("docs.jsonl", "line 4", None)] == "expected a JSON object, got list (a document)"
    assert "unsupported file type .xlsx" in messages[("table.xlsx", "file", None)]
    assert messages[("missing.md", "file", None)] == "no such file or folder"
    assert all(i.skipped for i in read.issues)


def test_files_with_the_same_name_in_two_folders_get_distinct_ids(tmp_path):
    for folder in ("en", "zh"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "faq.md").write_text(f"{folder} text", encoding="utf-8")
    assert [d.id for d in ingest([tmp_path]).documents] == ["faq", "zh/faq"]


def test_html_headings_become_markdown_headings():
    title, text = html_text(b"<html><body><h1>A</h1><p>one</p><h3>B <b>c</b></h3><p>two</p></body></html>")
    assert title is None
    assert text.split("\n\n") == ["# A", "one", "### B c", "two"]


def _doc(text: str, lang: str = "en") -> Document:
    return Document("guide", text, "guide.md", lang)


def test_chunks_follow_headings_and_carry_the_heading_path():
    text = "# Guide\n\n## Backups\n\n" + "Backups run nightly. " * 8 + "\n\n## Restores\n\n" + "Restores take an hour. " * 8
    chunks = chunk_document(_doc(text), size=200, overlap=0)
    assert [c.id for c in chunks] == ["guide#1", "guide#2"]
    assert chunks[0].headings == ("Guide", "Backups") and chunks[1].headings == ("Guide", "Restores")
    assert "Restores" not in chunks[0].text and "Backups" not in chunks[1].text


def test_long_sections_are_cut_at_sentences_with_overlap_and_the_heading_repeated():
    sentences = [f"Rule {n} says step {n} comes after step {n - 1}." for n in range(1, 31)]
    chunks = chunk_document(_doc("## Steps\n\n" + " ".join(sentences)), size=300, overlap=100)
    assert len(chunks) > 3
    assert all(len(c.text) <= 300 + len("## Steps\n") for c in chunks)
    for previous, chunk in itertools.pairwise(chunks):
        assert chunk.text.startswith("## Steps\n")
        first_sentence = chunk.text.split("\n", 1)[1].split(". ")[0]
        assert first_sentence in previous.text  # the overlap repeats the end of the previous piece
    everything = " ".join(c.text for c in chunks)
    assert all(s in everything for s in sentences)


def test_small_sections_are_joined_and_ids_are_stable():
    text = "## A\n\nOne line.\n\n## B\n\nAnother line.\n\n## C\n\n" + "Long text here. " * 30
    first = chunk_document(_doc(text), size=300, overlap=50)
    assert "One line." in first[0].text and "Another line." in first[0].text
    assert first == chunk_document(_doc(text), size=300, overlap=50)


def test_chinese_sections_are_cut_at_chinese_sentence_ends():
    text = "## 规定\n\n" + "".join(f"第{n}条规定要求每个变更都要审批。" for n in range(1, 40))
    chunks = chunk_document(_doc(text, "zh"), size=120, overlap=30)
    assert len(chunks) > 3 and all(c.lang == "zh" for c in chunks)
    assert all(c.text.split("\n", 1)[-1].endswith("。") for c in chunks)


@pytest.mark.parametrize(("size", "overlap"), [(50, 0), (1000, 600), (1000, -1), (True, 0)])
def test_chunking_settings_out_of_range_are_refused(size, overlap):
    with pytest.raises(ValueError, match="chunk"):
        check_chunking(size, overlap)


def test_a_line_separator_inside_a_jsonl_document_is_text_not_a_line_end(tmp_path):
    """U+2028 inside a JSON string is legal JSON: the document stays one document."""
    (tmp_path / "docs.jsonl").write_text('{"text": "First part.\u2028Second part."}\n{"text": "Next."}\n', encoding="utf-8")
    read = ingest([tmp_path / "docs.jsonl"])
    assert not read.issues
    assert [d.id for d in read.documents] == ["docs-1", "docs-2"]
    assert "Second part." in read.documents[0].text


def test_unicode_text_from_windows_is_read_and_a_legacy_encoding_is_named(tmp_path):
    """UTF-16 and UTF-32 documents (Windows' "Unicode" text, with a byte-order mark or without
    one, in ASCII or Chinese) are read; a document in GBK is skipped with the encoding named and how
    to convert it, a JSON-lines file of documents too (it used to say "UnicodeDecodeError")."""
    (tmp_path / "bom16.txt").write_text("部署冻结期间禁止发布。", encoding="utf-16")
    (tmp_path / "bom32.md").write_text("# Backups\n\nBackups run nightly.", encoding="utf-32")
    (tmp_path / "plain16.txt").write_bytes("Forge CI runs every job on a shared pool.".encode("utf-16-le"))
    # Chinese in UTF-16 without a mark has few NUL bytes: it was called GBK.
    (tmp_path / "zh16.md").write_bytes("# 审批\n\n数据库变更必须经过 DBA 审批，通常在两个工作日内完成。".encode("utf-16-be"))
    (tmp_path / "gbk.txt").write_bytes("数据库变更需要审批。".encode("gbk"))
    (tmp_path / "gbk.jsonl").write_bytes(json.dumps({"text": "数据库变更需要审批。"}, ensure_ascii=False).encode("gbk") + b"\n")
    read = ingest([tmp_path])
    texts = {d.id: (d.text, d.lang) for d in read.documents}
    assert texts == {
        "bom16": ("部署冻结期间禁止发布。", "zh"),
        "bom32": ("# Backups\n\nBackups run nightly.", "en"),
        "plain16": ("Forge CI runs every job on a shared pool.", "en"),
        "zh16": ("# 审批\n\n数据库变更必须经过 DBA 审批，通常在两个工作日内完成。", "zh"),
    }
    messages = {i.source.rsplit("/", 1)[-1]: i.message for i in read.issues}
    assert messages["gbk.txt"] == (
        "invalid UTF-8 (byte 0xca at byte 1); the file may be in GBK/GB18030: convert it to UTF-8, e.g. iconv -f GB18030 -t UTF-8 in > out"
    )
    assert messages["gbk.jsonl"].startswith("invalid UTF-8 (byte 0xca at column 11); the file may be in GBK/GB18030")
    assert all(i.skipped for i in read.issues) and len(read.issues) == 2


def test_binary_files_broken_links_and_pipes_in_a_folder_are_named_and_skipped(tmp_path):
    """They used to pass in silence: a binary file that decodes as UTF-8 became a document full
    of NUL characters, and a broken link or a named pipe with a document's suffix vanished."""
    (tmp_path / "ok.md").write_text("# Backups\n\nBackups run nightly.", encoding="utf-8")
    (tmp_path / "image.md").write_bytes(b"GIF89a\x01\x00\x01\x00\x00\xff\x00,")
    (tmp_path / "record.txt").write_bytes(b"id=7\x00name=Forge\x00")  # valid UTF-8, still binary
    (tmp_path / "gone.md").symlink_to(tmp_path / "missing.md")
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "notes.md").mkdir()  # a folder named like a document is searched, not reported
    read = ingest([tmp_path, tmp_path / "pipe.txt"])
    assert [d.id for d in read.documents] == ["ok"]
    assert [(i.source.rsplit("/", 1)[-1], i.message, i.skipped) for i in read.issues] == [
        ("gone.md", "a broken symbolic link", True),
        ("pipe.txt", "not a regular file (a pipe, socket or device)", True),
        ("pipe.txt", "not a regular file (a pipe, socket or device)", True),
        ("image.md", "invalid UTF-8 (byte 0xff at byte 12); it holds NUL bytes: binary data, not text", True),
        ("record.txt", "binary data, not text (a NUL character at character 5)", True),
    ]


def test_a_text_file_past_the_size_limit_is_named_and_skipped_and_json_lines_are_not_limited(tmp_path, monkeypatch):
    """A text file is read whole: a multi-gigabyte log saved as .txt filled the memory."""
    monkeypatch.setattr(documents, "MAX_TEXT_BYTES", 10**6)
    (tmp_path / "huge.txt").write_text("The Forge pipeline runs every job. " * 36_000, encoding="utf-8")  # 1.26 MB
    (tmp_path / "small.md").write_text("# Backups\n\nBackups run nightly.", encoding="utf-8")
    (tmp_path / "docs.jsonl").write_text(
        "\n".join(json.dumps({"text": f"Document {n} about backups."}) for n in range(60)), encoding="utf-8"
    )
    read = ingest([tmp_path])
    assert len(read.documents) == 61 and "small" in {d.id for d in read.documents}
    assert [(i.source.rsplit("/", 1)[-1], i.message) for i in read.issues] == [
        ("huge.txt", "1.3 MB, more than the 1 MB a text document may have: it is read whole; split it")
    ]


def test_an_empty_json_lines_file_is_named_and_skipped_like_an_empty_markdown_file(tmp_path):
    """An empty (or blank) .jsonl passed in silence while an empty .md was reported."""
    (tmp_path / "ok.md").write_text("# Backups\n\nBackups run nightly.", encoding="utf-8")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "blank.jsonl").write_text("\n  \n", encoding="utf-8")
    read = ingest([tmp_path])
    assert [d.id for d in read.documents] == ["ok"]
    assert [(i.source.rsplit("/", 1)[-1], i.location, i.message, i.skipped) for i in read.issues] == [
        ("blank.jsonl", "file", "the file is empty: no JSON line of a document", True),
        ("empty.jsonl", "file", "the file is empty: no JSON line of a document", True),
    ]


def test_an_empty_html_file_logs_nothing_of_its_own(tmp_path, caplog):
    """Beautiful Soup logged "Some characters could not be decoded..." for an empty .html: a raw
    line on the console naming no file, beside the issue that names it."""
    (tmp_path / "empty.html").write_bytes(b"")
    with caplog.at_level(logging.DEBUG):
        read = ingest([tmp_path])
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert [(i.source.rsplit("/", 1)[-1], i.message) for i in read.issues] == [("empty.html", "the document has no text")]


def test_a_link_to_a_folder_inside_the_knowledge_base_is_named_not_passed_over(tmp_path):
    """A linked folder of documents (or a link looping back up) went unread and unreported."""
    (tmp_path / "kb").mkdir()
    (tmp_path / "real").mkdir()
    (tmp_path / "kb" / "ok.md").write_text("# Backups\n\nBackups run nightly.", encoding="utf-8")
    (tmp_path / "real" / "leave.md").write_text("Staff get 25 days of leave.", encoding="utf-8")
    (tmp_path / "kb" / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "kb" / "up").symlink_to(tmp_path / "kb")
    read = ingest([tmp_path / "kb"])
    assert [d.id for d in read.documents] == ["ok"]
    assert [(i.source.rsplit("/", 1)[-1], i.message, i.skipped) for i in read.issues] == [
        ("linked", documents._LINKED_FOLDER, True),
        ("up", documents._LINKED_FOLDER, True),
    ]


def test_a_jsonl_document_id_that_is_repeated_or_unusable_is_changed_with_a_note(tmp_path, capsys):
    """A repeated id became "kb/a", and an id of 1.5, null, a list, true or blank text became
    "docs-<line>", without a word: a user matching ids against their own corpus never knew."""
    rows = [{"id": "a", "text": "One."}, {"id": "a", "text": "Two."}, {"id": 1.5, "text": "Three."}, {"id": None, "text": "Four."}]
    rows += [{"id": True, "text": "Five."}, {"id": " ", "text": "Six."}, {"id": 7, "text": "Seven."}, {"text": "Eight."}]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    read = ingest([tmp_path / "docs.jsonl"])
    ids = [d.id for d in read.documents]
    assert ids == ["a", f"{tmp_path.name}/a", "docs-3", "docs-4", "docs-5", "docs-6", "7", "docs-8"]
    notes = {(i.location, i.field): i.message for i in read.issues}
    assert all(not i.skipped for i in read.issues) and len(notes) == 5  # no note for a record without an id
    assert notes[("line 2", "id")] == f"id 'a' is an earlier document's: this one is '{tmp_path.name}/a'"
    assert notes[("line 3", "id")] == "1.5 is not a usable id (text or an integer): the document is 'docs-3'"
    assert notes[("line 5", "id")] == "True is not a usable id (text or an integer): the document is 'docs-5'"
    # On the console the notes are not listed as skipped lines.
    cli_generate._print_issues([*read.issues, InputIssue("kb/x.md", "file", None, "the document has no text")], written=True)
    err = capsys.readouterr().err
    assert "1 file(s) or line(s) skipped:" in err and "5 document(s) read, with a note:" in err
