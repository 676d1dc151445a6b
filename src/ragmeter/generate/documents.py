"""Reading a knowledge base: Markdown, plain text, HTML, PDF and JSON lines of documents.

:func:`ingest` takes files and folders (searched recursively) and returns one
:class:`Document` per file (per line for JSON lines), each with its language detected from its
own text. A file that cannot be read (unknown type, broken PDF, invalid UTF-8, a JSON line
without text) is reported as an :class:`~ragmeter.data.issues.InputIssue` naming the file, the
line and the field, and skipped: one bad document never stops the others. A JSON-lines
document whose ``id`` repeats an earlier one's or cannot be one is read under another id, with
a note (an issue that is not skipped).

HTML is turned into text with Beautiful Soup; headings become Markdown headings, so the
chunker sees the same structure as in a Markdown file. PDF text comes from its text layer
(pypdf); a scanned PDF without one is reported.
"""

from __future__ import annotations

import errno
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragmeter.data.encodings import decode_text, not_utf8
from ragmeter.data.files import json_object, read_json_lines
from ragmeter.data.issues import InputIssue, describe_briefly
from ragmeter.data.text import detect_language

#: File suffixes read, by kind.
SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".html": "html", ".htm": "html", ".pdf": "pdf", ".jsonl": "jsonl"}
#: Largest Markdown, text or HTML file read (it is read whole; JSON lines are read a line at a
#: time): a multi-gigabyte log saved as .txt is refused instead of filling the memory. 256 MB
#: is some 200,000 chunks of the default 1,200 characters, 40 times the 5 MB measured in
#: benchmarks/results/generate_scale.md.
MAX_TEXT_BYTES = 256 * 10**6
#: Fields of a JSON-lines document that may hold its text, tried in this order.
TEXT_FIELDS = ("text", "content", "passage", "body", "page_content")
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
#: Why a symbolic link to a folder inside a given folder is skipped.
_LINKED_FOLDER = "a symbolic link to a folder, not followed (a link may loop back): give the folder it points to"


@dataclass(frozen=True)
class Document:
    """One document of the knowledge base.

    Attributes:
        id: Stable identifier: the file name without its suffix (made unique with its folder
            when two files share a name), or a JSON-lines record's ``id``.
        text: The document's text; headings as Markdown ``#`` lines where the format has them.
        source: The file it came from (with ``:line`` for JSON lines).
        lang: ``"zh"`` or ``"en"``, detected from the text.
        title: The record's or the page's title, when it has one.
        metadata: Other fields of a JSON-lines record.
    """

    id: str
    text: str
    source: str
    lang: str
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Ingested:
    """What :func:`ingest` read: the documents, and the problems of what it skipped."""

    documents: list[Document]
    issues: list[InputIssue]


def ingest(paths: Iterable[str | Path]) -> Ingested:
    """Read every supported file in ``paths`` (files, or folders searched recursively).

    Args:
        paths: Files and folders of the knowledge base.

    Returns:
        The documents in a stable order (sorted paths), and an issue for each file or line
        that was skipped. A path that does not exist is an issue too.
    """
    documents: list[Document] = []
    issues: list[InputIssue] = []
    taken: set[str] = set()
    for path in _files(paths, issues):
        try:
            found = list(_read(path, issues))
        except UnicodeDecodeError as exc:  # a JSON-lines file of documents that is not UTF-8 (or UTF-16 without a mark)
            where, said = not_utf8(path, exc)
            issues.append(InputIssue(str(path), where, None, f"{said}; the file is skipped", skipped=True))
            continue
        except Exception as exc:  # any reader's failure on one file: report it and go on
            issues.append(InputIssue(str(path), "file", None, _failure(exc), skipped=True))
            continue
        for document in found:
            if not document.text.strip():
                issues.append(InputIssue(document.source, "file", None, "the document has no text", skipped=True))
                continue
            unique = _unique(document.id, path, taken)
            if unique != document.id and SUFFIXES[path.suffix.lower()] == "jsonl":  # an id the user gave, maybe to match
                said = f"id {describe_briefly(document.id)} is an earlier document's: this one is {unique!r}"
                issues.append(InputIssue(str(path), f"line {document.source.rpartition(':')[2]}", "id", said, skipped=False))
            documents.append(Document(unique, document.text, document.source, document.lang, document.title, document.metadata))
    return Ingested(documents, issues)


def _files(paths: Iterable[str | Path], issues: list[InputIssue]) -> list[Path]:
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found_here = sorted(p for p in path.rglob("*") if _candidate(p))
            if not found_here:  # else "no readable document", naming no folder, when it was the wrong one
                issues.append(InputIssue(str(path), "folder", None, _no_document(path), skipped=True))
            for found in found_here:
                if found.is_symlink() and found.is_dir():  # rglob does not follow it: a link may loop
                    issues.append(InputIssue(str(found), "file", None, _LINKED_FOLDER, skipped=True))
                elif found.is_file():
                    files.append(found)
                elif not found.is_dir():
                    issues.append(InputIssue(str(found), "file", None, _not_a_file(found), skipped=True))
        elif path.is_file():
            if path.suffix.lower() in SUFFIXES:
                files.append(path)
            else:
                known = ", ".join(sorted(SUFFIXES))
                issues.append(
                    InputIssue(str(path), "file", None, f"unsupported file type {path.suffix or '(none)'}; known: {known}", skipped=True)
                )
        else:
            issues.append(InputIssue(str(path), "file", None, _not_a_file(path), skipped=True))
    return files


def _candidate(path: Path) -> bool:
    """Whether ``path``, found in a folder, is read or reported: a document's suffix, or a link
    to a folder (which went unread in silence), and not hidden."""
    return not path.name.startswith(".") and (path.suffix.lower() in SUFFIXES or (path.is_symlink() and path.is_dir()))


def _failure(exc: Exception) -> str:
    """What to tell the user of a file whose reader raised ``exc``: the system's reason for a
    file that cannot be opened (no exception name, no path said twice), else the exception."""
    if isinstance(exc, FileNotFoundError):
        return "the file was removed while the knowledge base was read"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read the file: {exc.strerror}"
    return f"cannot read the file: {type(exc).__name__}: {exc}"


def _no_document(folder: Path) -> str:
    """Why ``folder`` gave no document: it is empty, or none of its files has a known suffix."""
    others = sorted(p.name for p in folder.rglob("*") if not p.name.startswith(".") and p.is_file())
    known = ", ".join(sorted(SUFFIXES))
    if not others:
        return f"no file in the folder (known types: {known})"
    shown = ", ".join(describe_briefly(name) for name in others[:3]) + (", …" if len(others) > 3 else "")
    return f"no document in the folder: {len(others)} file(s) of other types ({shown}); known types: {known}"


def _not_a_file(path: Path) -> str:
    """Why ``path``, neither a regular file nor a folder, cannot be read."""
    if path.is_symlink() and not path.exists():
        try:
            path.stat()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "a symbolic link that loops (to itself, or through other links back to it)"
        return "a broken symbolic link"
    if path.exists():
        return "not a regular file (a pipe, socket or device)"
    return "no such file or folder"


def _unique(name: str, path: Path, taken: set[str]) -> str:
    candidate = name
    if candidate in taken:
        candidate = f"{path.parent.name}/{name}"
    number = 2
    while candidate in taken:
        candidate, number = f"{path.parent.name}/{name}-{number}", number + 1
    taken.add(candidate)
    return candidate


def _read(path: Path, issues: list[InputIssue]) -> Iterable[Document]:
    kind = SUFFIXES[path.suffix.lower()]
    if kind == "jsonl":
        yield from _json_lines(path, issues)
        return
    title = None
    size = path.stat().st_size
    if kind != "pdf" and size > MAX_TEXT_BYTES:  # a PDF's size is mostly images; its text is read page by page
        message = f"{size / 1e6:,.1f} MB, more than the {MAX_TEXT_BYTES / 1e6:g} MB a text document may have: it is read whole; split it"
        issues.append(InputIssue(str(path), "file", None, message, skipped=True))
        return
    if kind == "html":
        title, text = html_text(path.read_bytes())
    else:
        try:
            text = pdf_text(path) if kind == "pdf" else decode_text(path.read_bytes())
        except ValueError as exc:  # the reader's own words: not UTF-8, binary, a damaged or encrypted PDF
            issues.append(InputIssue(str(path), "file", None, str(exc), skipped=True))
            return
    yield Document(path.stem, text, str(path), detect_language(text), title)


def pdf_text(path: Path) -> str:
    """The text layer of a PDF, page by page.

    Args:
        path: The PDF file.

    Raises:
        ValueError: The PDF has no text layer (a scan), is empty, needs a password, or is
            damaged (or not a PDF at all) as far as pypdf can tell.
    """
    from pypdf import PdfReader
    from pypdf.errors import EmptyFileError, FileNotDecryptedError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about a damaged file would print raw; the error is reported
    try:
        pages = [page.extract_text() or "" for page in PdfReader(path).pages]
    except EmptyFileError:
        raise ValueError("the file is empty") from None
    except FileNotDecryptedError:  # a PDF locked with an empty password is read
        raise ValueError("the PDF is encrypted with a password: save a copy without one") from None
    except PyPdfError as exc:
        raise ValueError(f"not a readable PDF (damaged, or another kind of file): {exc}") from None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        raise ValueError("the PDF has no text layer (a scanned document?)")
    return text


def html_text(data: bytes) -> tuple[str | None, str]:
    """The title and the visible text of an HTML page; headings become ``#`` lines.

    Args:
        data: The page's bytes (Beautiful Soup finds the encoding).
    """
    from bs4 import BeautifulSoup

    logging.getLogger("bs4").setLevel(logging.ERROR)  # it warned raw, naming no file, of an empty file's "undecodable" characters
    soup = BeautifulSoup(data, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    for hidden in soup(["head", "script", "style", "noscript", "template"]):
        hidden.decompose()
    for heading in soup.find_all(_HEADINGS):
        level = int(heading.name[1])
        heading.replace_with(f"\n\n{'#' * level} {heading.get_text(' ', strip=True)}\n\n")
    text = soup.get_text("\n")
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r"\n\s*\n\s*", "\n\n", text)
    return title or None, text.strip()


def _json_lines(path: Path, issues: list[InputIssue]) -> Iterable[Document]:
    number = 0
    for number, line in read_json_lines(path):
        source = f"{path}:{number}"
        try:
            record = json_object(line)
        except ValueError as exc:
            issues.append(InputIssue(str(path), f"line {number}", None, f"{exc} (a document)", skipped=True))
            continue
        text_field = next((f for f in TEXT_FIELDS if isinstance(record.get(f), str) and record[f].strip()), None)
        if text_field is None:
            issues.append(
                InputIssue(str(path), f"line {number}", "text", f"no document text: give one of {', '.join(TEXT_FIELDS)}", skipped=True)
            )
            continue
        text = record[text_field]
        title = record.get("title") if isinstance(record.get("title"), str) else None
        doc_id = _record_id(record, path, number, issues)
        extra = {k: v for k, v in record.items() if k not in (text_field, "title", "id")}
        yield Document(doc_id, text, source, detect_language(text), title, extra)
    if not number:  # as an empty Markdown file is reported, not passed over in silence
        issues.append(InputIssue(str(path), "file", None, "the file is empty: no JSON line of a document", skipped=True))


def _record_id(record: dict[str, Any], path: Path, number: int, issues: list[InputIssue]) -> str:
    """The id of the document on line ``number`` of ``path``: its ``id`` when that is text or an
    integer, else ``<file stem>-<line>``, with a note in ``issues`` when an ``id`` is given but
    cannot be one (1.5, null, a list, true, blank text)."""
    given = record.get("id")
    if (isinstance(given, str) and given.strip()) or (isinstance(given, int) and not isinstance(given, bool)):
        return str(given)
    default = f"{path.stem}-{number}"
    if "id" in record:
        said = f"{describe_briefly(given)} is not a usable id (text or an integer): the document is {default!r}"
        issues.append(InputIssue(str(path), f"line {number}", "id", said, skipped=False))
    return default
