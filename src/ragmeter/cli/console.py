"""Printing to the terminal without letting data act as markup or control codes.

The consoles have rich markup off: text from the data (questions, ids, file names, error
messages that quote them) is printed as it is, never interpreted (``[/bold]`` or
``[link=...]`` in a sample stays text). Control characters, which could move the cursor,
change colours or rewrite the terminal title, are shown as escapes (``\\x1b``). Styles come
only from the code, as ``(text, style)`` pairs. Log records of ragmeter's modules (a judge's
retries, warnings) are printed the same way (:func:`logs_on_console`). A reader that goes
away (``ragmeter metrics | head -1``) ends the command quietly (:func:`quiet_on_broken_pipe`).
"""

import errno
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console, ConsoleDimensions
from rich.table import Table
from rich.text import Text

from ragmeter.data.secrets import redact
from ragmeter.data.text import visible_controls

USAGE_ERROR = 2
#: The exit code when the output's reader went away: 128 + SIGPIPE, what a shell reports of a
#: tool that signal ended. Not 1 (a failed quality gate) nor 0 (a failed gate piped to ``head``
#: would pass under ``set -o pipefail``).
BROKEN_PIPE = 141
#: The width of output that is not a terminal (a CI log, a pipe, a file) when ``COLUMNS`` is
#: not set: Rich would take 80 columns and cut a wide table's numbers to ``0.…``.
UNBOUNDED_WIDTH = 400


class _Console(Console):
    """A Rich console that raises :class:`BrokenPipeError` when its reader has gone, for
    :func:`quiet_on_broken_pipe` (Rich's own handling exits with code 1, a failed gate here),
    and that is :data:`UNBOUNDED_WIDTH` wide when it does not write to a terminal and
    ``COLUMNS`` is not set, so that a table in a CI log shows every cell whole."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    @property
    def size(self) -> ConsoleDimensions:
        """The terminal's size; for other output, :data:`UNBOUNDED_WIDTH` columns unless ``COLUMNS`` says."""
        size = super().size
        if self._width is None and not self.is_terminal and "COLUMNS" not in self._environ:
            return ConsoleDimensions(UNBOUNDED_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        """Fix the size at ``new_size`` (width, height), as Rich's own setter does."""
        self._width, self._height = new_size


#: Messages and progress (stderr): soft_wrap keeps a file name and line on one line.
console = _Console(stderr=True, soft_wrap=True, markup=False, highlight=False, emoji=False)
#: Listings a user may pipe (stdout).
stdout = _Console(markup=False, highlight=False, emoji=False)


def clean(value: Any) -> str:
    """``value`` as text with control characters, line breaks and bidirectional overrides
    shown as escapes (:func:`~ragmeter.data.text.visible_controls`), so that it cannot drive
    the terminal or print a line of its own, and credentials masked."""
    return visible_controls(redact(str(value)))


def styled(*parts: Any) -> Text:
    """Text from parts: a plain value (cleaned, never markup) or a ``(value, style)`` pair."""
    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(clean(part[0]), style=part[1])
        else:
            text.append(clean(part))
    return text


def say(*parts: Any, to: Console = console) -> None:
    """Print one line built from ``parts`` (see :func:`styled`)."""
    to.print(styled(*parts))


def fail(message: str) -> typer.Exit:
    """Print ``error: message`` and return the exit (code 2) for the caller to raise."""
    say(("error: ", "bold red"), message)
    return typer.Exit(USAGE_ERROR)


def table(title: str, columns: Iterable[Any], rows: Iterable[Iterable[Any]]) -> Table:
    """A table whose cells are cleaned text (a cell may be a ``(value, style)`` pair).

    Args:
        title: Shown above the table.
        columns: Column names, or ``(name, "right")`` for right-aligned columns (numbers:
            folded onto a second line rather than cut to ``0.…`` on a narrow terminal); the
            first column is never wrapped or cut.
        rows: Cell values, one iterable per row.
    """
    grid = Table(title=clean(title), title_justify="left")
    for position, column in enumerate(columns):
        name, justify = column if isinstance(column, tuple) else (column, "left")
        # The first column names the row (a metric): it is never cut.
        grid.add_column(clean(name), justify=justify, no_wrap=position == 0, overflow="fold" if justify == "right" else "ellipsis")
    for row in rows:
        grid.add_row(*(styled(cell) for cell in row))
    return grid


class _ConsoleLogHandler(logging.Handler):
    """Prints log records through :func:`say`: cleaned of control codes, credentials masked."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            say(record.getMessage())
        except Exception:
            self.handleError(record)


@contextmanager
def logs_on_console() -> Iterator[None]:
    """While a command runs, print the warnings of ragmeter's loggers on the console through
    :func:`say`, and only there.

    Python's own handlers (the last-resort one, or the root logger's handlers of an
    application that runs the command in-process) would print them raw, a second time: a
    server's error text can quote the request's credentials or hold control characters. So
    the records do not reach the root logger while the command runs; afterwards ragmeter's
    logger is as it was, for a library user's own logging."""
    logger = logging.getLogger("ragmeter")
    handler, propagate = _ConsoleLogHandler(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


@contextmanager
def quiet_on_broken_pipe() -> Iterator[None]:
    """End with :data:`BROKEN_PIPE`, printing nothing, when the reader of the output goes away
    (``ragmeter metrics | head -1``), as well-behaved Unix tools do. The standard streams are
    pointed at the null device first: Python flushes them on exit, which would fail again and
    print a warning."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (AttributeError, OSError, ValueError):  # not a file (a test's capture): nothing to flush on exit
                pass
        os.close(devnull)
        raise typer.Exit(BROKEN_PIPE) from None
