"""Options shared by several commands, declared once.

:func:`judge_options` adds the judge settings (``--judge``, ``--judge-base-url``,
``--judge-model``... ``--config``, ``--no-cache``) to a command; the command receives them
as one :class:`JudgeOptions` argument named ``judge_options``.
"""

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any

import typer

from ragmeter.cli.console import fail
from ragmeter.judges.config import MAX_CONCURRENCY, JudgeConfig
from ragmeter.run.config import RunConfig, load_config
from ragmeter.run.outdir import OutputDirError, check_usable


@dataclass(frozen=True)
class JudgeOptions:
    """The judge settings given on the command line (``None``: not given).

    Attributes mirror :class:`~ragmeter.judges.config.JudgeConfig`; ``config`` is the
    ``--config`` file, ``cache`` is ``--cache/--no-cache``.
    """

    config: Path | None = None
    judge: str | None = None
    judge_base_url: str | None = None
    judge_model: str | None = None
    judge_api_key_env: str | None = None
    judge_concurrency: int | None = None
    judge_rpm: int | None = None
    judge_timeout: float | None = None
    judge_context_window: int | None = None
    verdict_mode: str | None = None
    gguf: Path | None = None
    prices: Path | None = None
    cache: bool = True

    def resolve(self) -> tuple[RunConfig | None, JudgeConfig]:
        """The config file (if any) and the judge settings: the environment, then the
        config file, then these options.

        Raises:
            ValueError: The config file or a setting is invalid (the message names it).
        """
        run_config = load_config(self.config) if self.config else None
        settings = JudgeConfig.from_env().updated(**(run_config.judge if run_config else {}))
        settings = settings.updated(
            backend=self.judge,
            base_url=self.judge_base_url,
            model=self.judge_model,
            api_key_env=self.judge_api_key_env,
            concurrency=self.judge_concurrency,
            requests_per_minute=self.judge_rpm,
            timeout=self.judge_timeout,
            context_window=self.judge_context_window,
            verdict_mode=self.verdict_mode,
            gguf=str(self.gguf) if self.gguf else None,
            prices=str(self.prices) if self.prices else None,
        )
        if not self.cache:
            settings = settings.updated(cache=False)
        return run_config, settings


_OPTIONS: dict[str, Any] = {
    "config": Annotated[
        Path | None, typer.Option("--config", "-c", help="YAML config file: judge settings, metrics with parameters, prices.")
    ],
    "judge": Annotated[str | None, typer.Option(help="Judge backend: 'local' (embedded model) or 'openai' (any compatible endpoint).")],
    "judge_base_url": Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")],
    "judge_model": Annotated[str | None, typer.Option(help="Model name at the endpoint.")],
    "judge_api_key_env": Annotated[
        str | None, typer.Option(help="Environment variable holding the API key (default RAGMETER_JUDGE_API_KEY, then OPENAI_API_KEY).")
    ],
    "judge_concurrency": Annotated[
        int | None,
        typer.Option(min=1, max=MAX_CONCURRENCY, help=f"Most requests in flight to the endpoint (default 8, at most {MAX_CONCURRENCY})."),
    ],
    "judge_rpm": Annotated[int | None, typer.Option(min=1, help="Requests per minute allowed to the endpoint.")],
    "judge_timeout": Annotated[float | None, typer.Option(min=1, help="Seconds per request (default 60).")],
    "judge_context_window": Annotated[int | None, typer.Option(min=256, help="Tokens per prompt (default 4096 local, 128000 endpoint).")],
    "verdict_mode": Annotated[
        str | None,
        typer.Option(
            help="Endpoint verdicts: 'auto' (default: probe, then batch or single), 'batch' (all items in one request) or 'single' (one request per item)."
        ),
    ],
    "gguf": Annotated[Path | None, typer.Option(help="GGUF model for the local judge instead of the packaged one.")],
    "prices": Annotated[Path | None, typer.Option(help="Price table (JSON or YAML) overriding the packaged one.")],
    "cache": Annotated[bool, typer.Option("--cache/--no-cache", help="Reuse judge answers and embeddings from the disk cache.")],
}
assert set(_OPTIONS) == {f.name for f in fields(JudgeOptions)}


def judge_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: add the judge options to ``command``, which takes them as one keyword
    argument ``judge_options: JudgeOptions``."""
    signature = inspect.signature(command)
    own = [p for p in signature.parameters.values() if p.name != "judge_options"]
    defaults = JudgeOptions()
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=getattr(defaults, name), annotation=annotation)
        for name, annotation in _OPTIONS.items()
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = JudgeOptions(**{name: kwargs.pop(name) for name in _OPTIONS if name in kwargs})
        return command(*args, judge_options=given, **kwargs)

    del wrapper.__wrapped__  # typer must read the signature below, not the original's
    wrapper.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in [*own, *added]}
    return wrapper


#: The suffixes ``ragmeter eval`` reads as JSON lines: the only ones a samples file is written under.
JSON_LINES_SUFFIXES = (".jsonl", ".ndjson")


def check_json_lines_out(out: Path) -> None:
    """Refuse (exit 2, one line) an ``--out`` samples file whose suffix is not a JSON-lines one:
    the file is written as JSON lines, and ``ragmeter eval`` picks the format by the suffix, so
    ``out.csv`` would be read as CSV and every field found missing. Refuse too, before any
    work, an ``--out`` that is a directory or whose folder cannot be created or written (the
    folder is created when the file is written).

    Args:
        out: The ``--out`` path given.
    """
    if out.suffix.lower() not in JSON_LINES_SUFFIXES:
        raise fail(f"--out {out}: the samples are written as JSON lines; give a file name ending in {' or '.join(JSON_LINES_SUFFIXES)}")
    check_file_out("--out", out)


def check_file_out(option: str, out: Path) -> None:
    """Refuse (exit 2, one line), before any work, an output file path ``out`` given as
    ``option`` that is a folder, or whose folder cannot be created or written: what the command
    computed would be lost with 'cannot write' at the end."""
    if out.is_dir():
        raise fail(f"{option} {out} is a folder; give the name of a file to write")
    try:
        check_usable(out.parent, f"{option} {out}: its folder")
    except OutputDirError as exc:
        raise fail(str(exc)) from None


def refuse_an_input(option: str, out: Path | None, inputs: Iterable[str | Path | None], what: str) -> None:
    """A usage error when an output path names one of the command's input files (a trace file,
    a samples file, a baseline snapshot, the store's SQLite file): ``what`` it writes would
    replace it.

    Args:
        option: The output's option, for the message (``--json``, ``--out``).
        out: The output path given, or ``None``.
        inputs: The files the command reads; ``None`` and database URLs are passed over.
        what: What is written there, for the message (``the findings``, ``the samples``).
    """
    if out is None:
        return
    target = out.expanduser().resolve()
    for given in inputs:
        if given is not None and "://" not in str(given) and Path(given).expanduser().resolve() == target:
            raise fail(f"{option} {out} is the input {given}: {what} would replace it; choose another path")
