"""The ``ragmeter`` Typer application, its global ``--debug`` option, and how commands fail.

Every command is registered with :func:`command`, which gives it the same error handling:
a known problem (bad input, a bad option, a damaged run directory) ends in a one-line message
and exit code 2; an unexpected error also ends in one line and exit 2, with the traceback only
under ``--debug`` (or ``RAGMETER_DEBUG=1``); Ctrl-C ends in exit code 130, SIGTERM likewise in
143 (not a silent death); a reader of the
output that went away (``ragmeter metrics | head -1``) ends it quietly with exit code 141.
"""

import functools
import os
import traceback
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from ragmeter.cli.console import USAGE_ERROR, console, fail, logs_on_console, quiet_on_broken_pipe, say
from ragmeter.results import RunDirError
from ragmeter.run.sync import INTERRUPTED, interruption, sigterm_stops

app = typer.Typer(
    name="ragmeter",
    help="Evaluate retrieval-augmented generation systems: retrieval, generation, and both together.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

_state = {"debug": False}

F = TypeVar("F", bound=Callable[..., Any])


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback of an unexpected error.")] = False,
) -> None:
    """Evaluate retrieval-augmented generation systems: retrieval, generation, and both together."""
    # Set on every invocation: one in-process call with --debug must not leave it on for the next.
    _state["debug"] = debug or bool(os.environ.get("RAGMETER_DEBUG"))


def group(name: str, help: str) -> typer.Typer:
    """A command group (``ragmeter runs list``): register its commands with ``command(..., group=)``.

    Args:
        name: The group's name on the command line.
        help: One line saying what its commands do.
    """
    commands = typer.Typer(
        name=name, help=help, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
    )
    app.add_typer(commands, name=name)
    return commands


def command(name: str, group: typer.Typer | None = None) -> Callable[[F], F]:
    """Register ``function`` as the command ``name`` (of ``group``, if given) with the shared
    error handling."""
    label = f"{group.info.name} {name}" if group is not None else name

    def register(function: F) -> F:
        @functools.wraps(function)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            with quiet_on_broken_pipe(), sigterm_stops():  # also when the reader went away while an error was said
                try:
                    with logs_on_console():
                        return function(*args, **kwargs)
                except (typer.Exit, typer.Abort, SystemExit, BrokenPipeError):
                    raise
                except KeyboardInterrupt as stop:
                    said, code = interruption(stop)
                    say((said, "yellow"))
                    raise typer.Exit(code) from None
                except RunDirError as exc:  # a run's samples are read when needed: a damaged line surfaces late
                    raise fail(f"cannot read the run: {exc}") from None
                except Exception as exc:  # the last line of defence: no user-facing traceback
                    if _state["debug"]:
                        console.print(traceback.format_exc(), end="")
                    raise fail(f"unexpected error: {_said(exc)} (run `ragmeter --debug {label} ...` for the traceback)") from None

        (group or app).command(name)(guarded)
        return function

    return register


def _said(exc: Exception) -> str:
    """``Type: message`` of an unexpected error (``exc``); of a database error, the database's
    own words, without the statement and parameters SQLAlchemy adds to them (for a batch of
    spans, a thousand rows of the user's data on the one line of the error)."""
    orig = getattr(exc, "orig", None) if type(exc).__module__.startswith("sqlalchemy.") else None
    shown = orig if isinstance(orig, BaseException) else exc
    return f"{type(shown).__name__}: {shown}"


__all__ = ["INTERRUPTED", "USAGE_ERROR", "app", "command", "group"]
