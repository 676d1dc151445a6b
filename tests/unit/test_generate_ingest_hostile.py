"""ragmeter generate, reading and chunking hostile input: a pathological heading line, a broken,
encrypted or unreadable file, a folder with nothing to read, a looping link, a JSON-lines file
that is not UTF-8."""

from __future__ import annotations

import time
from pathlib import Path

from ragmeter.generate.chunking import chunk_document
from ragmeter.generate.documents import Document, ingest


def _said(folder: Path) -> dict[str, str]:
    """What ingesting ``folder`` said of each file, by file name."""
    return {Path(issue.source).name: issue.message for issue in ingest([folder]).issues}


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


def test_a_damaged_encrypted_empty_or_scanned_pdf_is_named_with_why_in_plain_words(tmp_path):
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("secret")
    writer.write(tmp_path / "locked.pdf")
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.write(tmp_path / "scan.pdf")
    (tmp_path / "damaged.pdf").write_bytes(b"%PDF-1.4\n cut short")
    (tmp_path / "empty.pdf").write_bytes(b"")
    said = _said(tmp_path)
    assert said == {
        "damaged.pdf": "not a readable PDF (damaged, or another kind of file): Stream has ended unexpectedly",
        "empty.pdf": "the file is empty",
        "locked.pdf": "the PDF is encrypted with a password: save a copy without one",
        "scan.pdf": "the PDF has no text layer (a scanned document?)",
    }


def test_a_file_that_cannot_be_opened_or_went_away_is_named_with_the_reason_once(tmp_path, monkeypatch):
    for name in ("locked.md", "locked.jsonl", "gone.txt"):
        (tmp_path / name).write_text('{"text": "Some text."}\n', encoding="utf-8")
    real_open = open

    def refusing(file, *args, **kwargs):  # tests may run as root, whom chmod does not stop
        if str(file).endswith(("locked.md", "locked.jsonl")):
            raise PermissionError(13, "Permission denied", str(file))
        if str(file).endswith("gone.txt"):
            raise FileNotFoundError(2, "No such file or directory", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing)
    monkeypatch.setattr("io.open", refusing)
    said = _said(tmp_path)
    assert said == {
        "gone.txt": "the file was removed while the knowledge base was read",
        "locked.jsonl": "cannot read the file: Permission denied",
        "locked.md": "cannot read the file: Permission denied",
    }


def test_an_empty_folder_or_one_of_other_files_only_is_named(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "office").mkdir()
    (tmp_path / "office" / "plan.docx").write_bytes(b"x")
    (tmp_path / "office" / ".hidden.md").write_text("Hidden.", encoding="utf-8")
    read = ingest([tmp_path / "empty", tmp_path / "office"])
    assert [str(issue) for issue in read.issues] == [
        f"{tmp_path / 'empty'}, folder: no file in the folder (known types: .htm, .html, .jsonl, .markdown, .md, .pdf, .txt)",
        f"{tmp_path / 'office'}, folder: no document in the folder: 1 file(s) of other types ('plan.docx'); "
        "known types: .htm, .html, .jsonl, .markdown, .md, .pdf, .txt",
    ]


def test_a_link_that_loops_is_said_to_loop_not_to_be_broken(tmp_path):
    (tmp_path / "self.md").symlink_to(tmp_path / "self.md")
    (tmp_path / "a.md").symlink_to(tmp_path / "b.md")
    (tmp_path / "b.md").symlink_to(tmp_path / "a.md")
    (tmp_path / "gone.md").symlink_to(tmp_path / "nowhere.md")
    said = _said(tmp_path)
    looping = "a symbolic link that loops (to itself, or through other links back to it)"
    assert said == {"a.md": looping, "b.md": looping, "self.md": looping, "gone.md": "a broken symbolic link"}


def test_a_json_lines_file_of_documents_saved_with_a_utf8_byte_order_mark_is_read_whole(tmp_path):
    (tmp_path / "docs.jsonl").write_bytes(b'\xef\xbb\xbf{"id": "one", "text": "First."}\n{"id": "two", "text": "Second."}\n')
    read = ingest([tmp_path / "docs.jsonl"])
    assert [d.id for d in read.documents] == ["one", "two"] and read.issues == []


def test_a_json_lines_file_of_documents_in_utf16_without_a_mark_is_named_once_with_how_to_convert_it(tmp_path):
    (tmp_path / "docs.jsonl").write_bytes('{"text": "First."}\n{"text": "Second."}\n'.encode("utf-16-le"))
    read = ingest([tmp_path / "docs.jsonl"])
    assert [str(issue) for issue in read.issues] == [
        f"{tmp_path / 'docs.jsonl'}, file: the file looks like UTF-16LE without a byte-order mark (every other byte of its start "
        "is NUL): convert it to UTF-8, e.g. iconv -f UTF-16LE -t UTF-8 in > out; the file is skipped"
    ]


def test_a_json_lines_file_of_documents_that_is_not_utf8_is_named_with_its_first_bad_line(tmp_path):
    lines = '{"text": "First."}\n{"text": "Second."}\n{"text": "Caf\xe9 au lait."}\n'
    (tmp_path / "docs.jsonl").write_bytes(lines.encode("latin-1"))
    read = ingest([tmp_path / "docs.jsonl"])
    assert [str(issue) for issue in read.issues] == [
        f"{tmp_path / 'docs.jsonl'}, line 3: invalid UTF-8 (byte 0xe9 at column 14); the file may be in Windows-1252: "
        "convert it to UTF-8, e.g. iconv -f CP1252 -t UTF-8 in > out; the file is skipped"
    ]


def test_cli_says_the_documents_read_held_only_boilerplate_not_that_none_was_readable(tmp_path):
    from typer.testing import CliRunner

    from ragmeter.cli import app

    (tmp_path / "stub.md").write_text("This article needs additional citations for verification.", encoding="utf-8")
    result = CliRunner().invoke(app, ["generate", str(tmp_path / "stub.md"), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert "no readable document" not in result.output
    assert "error: the 1 document(s) read hold nothing but boilerplate" in result.output and "dropped: 'stub'" in result.output
