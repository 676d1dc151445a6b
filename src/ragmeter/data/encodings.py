"""Which text encoding a file's bytes are in: UTF-8, the encoding a byte-order mark names,
UTF-16 without a mark, or, for a file that does not decode, the legacy encoding to name in
the error (GBK, Big5, Shift-JIS, Windows-1252) and the command that converts it."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from ragmeter.data.text import HAN

#: Byte-order marks and their encodings; UTF-32's little-endian mark opens with UTF-16's.
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
#: Chinese characters, CJK punctuation and full-width forms (UTF-16 text without a mark).
_CJK = re.compile(f"[{HAN}\u3000-\u303f\uff00-\uffef]")


def unicode_bom(data: bytes) -> str | None:
    """The encoding whose byte-order mark opens ``data`` ("utf-8-sig", "utf-32", "utf-16";
    Windows writes UTF-16 with one for "Unicode" text), or ``None``."""
    for mark, encoding in _BOMS:
        if data.startswith(mark):
            return encoding
    return None


def decode_text(data: bytes) -> str:
    """The text of a whole file: UTF-8, the encoding its byte-order mark names (a UTF-8 mark
    is dropped), or UTF-16 without a mark when its start reads as such (:func:`_utf16_without_bom`).

    Raises:
        ValueError: It does not decode (the message gives the first bad byte and which
            encoding the file may be in, :func:`encoding_hint`), or it holds a NUL character:
            binary data that happens to decode, which no text holds.
    """
    encoding = unicode_bom(data) or _utf16_without_bom(data) or "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        label = encoding.removesuffix("-sig").upper()
        hint = encoding_hint(data) if label == "UTF-8" else ""  # a byte-order mark's encoding is known: the file is broken
        raise ValueError(f"invalid {label} (byte 0x{data[exc.start]:02x} at byte {exc.start + 1}){hint}") from None
    nul = text.find("\x00")
    if nul >= 0:
        raise ValueError(f"binary data, not text (a NUL character at character {nul + 1})")
    return text


def _utf16_without_bom(data: bytes) -> str | None:
    """ "utf-16-le" or "utf-16-be" when ``data`` has no byte-order mark but its start is
    UTF-16 all the same; else ``None``. ASCII text in UTF-16 has a NUL byte beside most
    letters (and is valid UTF-8 too), the side its NULs fall on telling the byte order.
    Chinese text in UTF-16 has few NULs: it is taken as UTF-16 when its start is not UTF-8
    and reads, in one byte order, as at least 95% Chinese characters, Chinese punctuation and
    ASCII, a third of it Chinese (GBK bytes read so are about half in that range)."""
    head = data[:4096]
    if len(head) < 8:
        return None
    if head.count(0) * 3 >= len(head):
        nul_even, nul_odd = head[0::2].count(0), head[1::2].count(0)
        if min(nul_even, nul_odd) * 10 > max(nul_even, nul_odd):  # NULs on both sides: binary data (an executable, an archive), not text
            return None
        return "utf-16-le" if nul_odd > nul_even else "utf-16-be"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
        return None  # UTF-8 as far as it goes (a character may be cut at the end)
    except UnicodeDecodeError:
        pass
    even = head[: len(head) // 2 * 2]
    for encoding in ("utf-16-le", "utf-16-be"):
        text = even.decode(encoding, errors="replace")
        chinese = len(_CJK.findall(text))
        usual = chinese + sum(1 for c in text if " " <= c <= "~" or c in "\n\r\t")
        if usual >= 0.95 * len(text) and chinese * 3 >= len(text):
            return encoding
    return None


def unmarked_utf16(data: bytes) -> str | None:
    """Why a file to be read as UTF-8 whose start is ``data`` cannot be: every other byte of its
    first 32 is NUL and none of the others, the telltale of ASCII text in UTF-16 without a
    byte-order mark (valid UTF-8 all the same, so a reader would only find its JSON or CSV
    invalid), with the ``iconv`` command that converts it; ``None`` when it does not open so
    (a mark opens it, or a NUL stands on both sides: binary data)."""
    head = data[:32]
    head = head[: len(head) // 2 * 2]
    if len(head) < 4 or unicode_bom(data):
        return None
    for nul_side, label in ((1, "UTF-16LE"), (0, "UTF-16BE")):
        if head[nul_side::2].count(0) == len(head) // 2 and head[1 - nul_side :: 2].count(0) == 0:
            return (
                f"the file looks like {label} without a byte-order mark (every other byte of its start is NUL): "
                f"convert it to UTF-8, e.g. iconv -f {label} -t UTF-8 in > out"
            )
    return None


def unmarked_utf16_file(path: str | Path) -> str | None:
    """:func:`unmarked_utf16` of the file at ``path``, reading only its first bytes: every reader
    of JSON lines asks it before reading (a UTF-16 file without a mark decodes as UTF-8, each
    line then found to be invalid JSON, which hides the cause).

    Args:
        path: The file to be read as UTF-8.

    Raises:
        OSError: The file cannot be opened (missing, a folder, not readable).
    """
    with open(path, "rb") as handle:
        return unmarked_utf16(handle.read(32))


def marked_wide_file(path: str | Path) -> str | None:
    """Why the JSON-lines file at ``path`` cannot be read: it opens with a UTF-16 or UTF-32
    byte-order mark, and JSON lines are read line by line as UTF-8 (each line would be found
    not to be UTF-8); the message gives the ``iconv`` command that converts it. ``None`` when
    it opens with no such mark.

    Args:
        path: The JSON-lines file to be read.

    Raises:
        OSError: The file cannot be opened (missing, a folder, not readable).
    """
    with open(path, "rb") as handle:
        head = handle.read(4)
    return f"JSON lines are read as UTF-8{encoding_hint(head)}" if unicode_bom(head) in ("utf-16", "utf-32") else None


class UnmarkedUtf16Error(UnicodeDecodeError):
    """A file that is UTF-16 without a byte-order mark where UTF-8 was expected; its message is
    :func:`unmarked_utf16`'s. A :class:`UnicodeDecodeError`, so that every reader that reports a
    file that is not UTF-8 reports this one too, with the cause and the conversion."""

    def __init__(self, problem: str) -> None:
        super().__init__("utf-8", b"", 0, 0, problem)
        self.problem = problem

    def __str__(self) -> str:
        return self.problem


def encoding_hint(data: bytes) -> str:
    """What to tell a user whose file is not UTF-8: UTF-16 or UTF-32 when it opens with their
    byte-order mark or has a NUL byte between most ASCII letters (PowerShell's and Excel's
    "Unicode" text), else binary data when it holds a NUL byte (no legacy encoding writes one
    in text: an image or archive saved under a text file's name), else the legacy encoding it
    decodes in, if a common one fits, and how to convert it."""
    wide = unicode_bom(data) if unicode_bom(data) in ("utf-16", "utf-32") else _utf16_without_bom(data)
    if wide:
        label = wide.upper().replace("-LE", "LE").replace("-BE", "BE")  # as iconv spells it: it refuses "UTF-16-LE"
        return f"; the file is in {label}: convert it to UTF-8, e.g. iconv -f {label} -t UTF-8 in > out"
    if b"\x00" in data:
        return "; it holds NUL bytes: binary data, not text"
    for encoding, label in (("gb18030", "GBK/GB18030"), ("big5", "Big5"), ("shift_jis", "Shift-JIS"), ("cp1252", "Windows-1252")):
        try:
            data.decode(encoding)
        except UnicodeDecodeError:
            continue
        return f"; the file may be in {label}: convert it to UTF-8, e.g. iconv -f {encoding.upper()} -t UTF-8 in > out"
    return "; save the file as UTF-8"


def invalid_utf8(raw: bytes, exc: UnicodeDecodeError, hint: str) -> str:
    """The message for a line that is not UTF-8."""
    return f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}){hint}"


#: How much of a file the encoding it may be in is guessed from (a file of gigabytes is not read whole for a hint).
HINT_BYTES = 1 << 20


def file_hint(path: Path) -> str:
    """:func:`encoding_hint` of the start of the file at ``path``."""
    with path.open("rb") as handle:
        return encoding_hint(handle.read(HINT_BYTES))


def not_utf8(path: Path, exc: UnicodeDecodeError) -> tuple[str, str]:
    """Where and why the JSON-lines file at ``path``, whose reading as UTF-8 raised ``exc``, is
    not UTF-8: the whole file when it is UTF-16 without a byte-order mark
    (:class:`UnmarkedUtf16Error`), else its first line that is not, the
    byte, the column and the encoding the file may be in: ``("line 3", "invalid UTF-8 ...")``."""
    if isinstance(exc, UnmarkedUtf16Error):
        return "file", str(exc)
    found = first_invalid_utf8(path)
    return (f"line {found[0]}", found[1]) if found else ("file", "invalid UTF-8")  # else it changed since it was read


def first_invalid_utf8(path: Path) -> tuple[int, str] | None:
    """The first line (from 1) of the file at ``path`` that is not UTF-8, with why
    (:func:`invalid_utf8`: the byte, its column and the encoding the file may be in, e.g. UTF-16
    when it opens with that byte-order mark); ``None`` when every line is UTF-8."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as bad:
                return number, invalid_utf8(raw, bad, file_hint(path))
    return None
