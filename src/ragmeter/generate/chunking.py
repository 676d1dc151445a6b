"""Splitting documents into chunks that follow their headings.

A document is cut at its Markdown headings first (HTML headings were turned into Markdown
ones on reading), so a chunk never mixes the end of one section with the start of the next.
A section longer than ``size`` characters is cut between paragraphs, then between sentences
(Chinese and English punctuation), then, for a sentence longer than ``size``, anywhere; each
piece after the first starts with the section's heading and the last ``overlap`` characters'
worth of whole sentences of the piece before it. Consecutive sections shorter than a quarter
of ``size`` are joined, so a heading with one line under it does not become a chunk alone.

Chunk ids are ``<document id>#<n>``, counted from 1 in document order: the same document and
settings always give the same ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragmeter.data.text import split_sentences
from ragmeter.generate.documents import Document

DEFAULT_CHUNK_SIZE = 1200
DEFAULT_CHUNK_OVERLAP = 150
#: A Markdown heading line: its ``#`` marks and the rest; the closing ``#`` marks are cut off in
#: :func:`_sections`, not here (``(.+?)\s*#*\s*$`` backtracked cubically on a heading line with
#: a long run of spaces inside: 2,000 spaces took 14 s, a padded table row minutes).
_HEADING = re.compile(r"^(#{1,6})\s+(.+)$")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document.

    Attributes:
        id: ``<document id>#<n>``.
        document: The document's id.
        text: The chunk's text.
        lang: The document's language (``"zh"`` or ``"en"``).
        headings: The headings above the chunk, outermost first.
    """

    id: str
    document: str
    text: str
    lang: str
    headings: tuple[str, ...] = ()


def check_chunking(size: int, overlap: int) -> None:
    """Raise ``ValueError`` unless 100 <= ``size`` and 0 <= ``overlap`` < ``size`` / 2."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 100:
        raise ValueError(f"chunk size must be a whole number of characters, at least 100, got {size!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < size // 2:
        raise ValueError(f"chunk overlap must be a whole number of characters from 0 to less than half the chunk size, got {overlap!r}")


def chunk_document(document: Document, size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_CHUNK_OVERLAP) -> list[Chunk]:
    """The chunks of ``document``.

    Args:
        document: The document to split.
        size: Most characters per chunk (a longer sentence is cut).
        overlap: Characters of whole sentences repeated from the previous piece of the same
            section at the start of the next.
    """
    check_chunking(size, overlap)
    pieces: list[tuple[tuple[str, ...], str]] = []
    for headings, heading_line, body in _sections(document.text):
        for number, piece in enumerate(_split(body, size, overlap)):
            text = piece if number == 0 or not heading_line else f"{heading_line}\n{piece}"
            pieces.append((headings, text))
    merged = _join_small(pieces, size)
    return [Chunk(f"{document.id}#{n}", document.id, text, document.lang, headings) for n, (headings, text) in enumerate(merged, start=1)]


def _sections(text: str) -> list[tuple[tuple[str, ...], str, str]]:
    """(heading path, heading line, text with its heading line) per section."""
    sections: list[tuple[tuple[str, ...], str, str]] = []
    stack: list[tuple[int, str]] = []
    heading_line, lines = "", list[str]()

    def close() -> None:
        body = "\n".join(lines).strip()
        if body and body != heading_line:
            sections.append((tuple(title for _, title in stack), heading_line, body))

    for line in text.splitlines():
        match = _HEADING.match(line.strip())
        if match:
            close()
            level = len(match.group(1))
            title = match.group(2).rstrip("#").rstrip() or match.group(2)  # "## Setup ##" is "Setup"
            stack[:] = [(lv, title) for lv, title in stack if lv < level] + [(level, title)]
            heading_line, lines = line.strip(), [line.strip()]
        else:
            lines.append(line)
    close()
    return sections


def _split(body: str, size: int, overlap: int) -> list[str]:
    """``body`` in pieces of at most ``size`` characters, cut at paragraphs, then sentences."""
    if len(body) <= size:
        return [body]
    units: list[str] = []
    for paragraph in re.split(r"\n\s*\n", body):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if len(paragraph) <= size:
            units.append(paragraph)
            continue
        for sentence in split_sentences(paragraph):  # a slice of a run of spaces would be a chunk of nothing
            units += [cut for i in range(0, len(sentence), size) if (cut := sentence[i : i + size].strip())]
    pieces: list[str] = []
    current: list[str] = []
    for unit in units:
        if current and len("\n".join([*current, unit])) > size:
            pieces.append("\n".join(current))
            current = _tail(current, overlap, size - len(unit))
        current.append(unit)
    if current:
        pieces.append("\n".join(current))
    return pieces


def _tail(units: list[str], overlap: int, room: int) -> list[str]:
    """The last whole sentences of ``units`` that fit in ``overlap`` characters (and ``room``)."""
    sentences = [s for unit in units for s in split_sentences(unit)]
    kept: list[str] = []
    length = 0
    for sentence in reversed(sentences):
        if length + len(sentence) + 1 > min(overlap, room):
            break
        kept.insert(0, sentence)
        length += len(sentence) + 1
    return [" ".join(kept)] if kept else []


def _join_small(pieces: list[tuple[tuple[str, ...], str]], size: int) -> list[tuple[tuple[str, ...], str]]:
    joined: list[tuple[tuple[str, ...], str]] = []
    for headings, text in pieces:
        if joined and len(joined[-1][1]) < size // 4 and len(joined[-1][1]) + len(text) + 2 <= size:
            previous_headings, previous = joined[-1]
            joined[-1] = (previous_headings, f"{previous}\n\n{text}")
        else:
            joined.append((headings, text))
    return joined
