"""Metering: model calls, tokens, time and cost, attributed to the (sample, metric) that
caused them.

The engine opens a :class:`Usage` for each (sample, metric) pair with :func:`metered`;
judges call :func:`record` for every model call, and the call lands on the pair whose
coroutine made it (a context variable, so concurrent pairs never mix their counts).
"""

from __future__ import annotations

import contextvars
import json
import math
import reprlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ragmeter.data.files import json_value, yaml_value

#: The fields of a model's entry in a price table, in US dollars per million tokens.
_PRICE_FIELDS = ("input_per_million", "output_per_million")


@dataclass
class Usage:
    """What scoring cost.

    Attributes:
        calls: Model calls made (a local verdict on one item counts as one call).
        cached_calls: Calls answered from the disk cache, at no cost.
        prompt_tokens: Tokens sent to the model, counted as if each call stood alone.
        prompt_tokens_evaluated: Prompt tokens the model actually processed; lower than
            ``prompt_tokens`` when a shared prefix was reused (local judge).
        completion_tokens: Tokens the model generated.
        retries: Calls repeated after a rate limit, a server error or a timeout.
        seconds: Wall time spent waiting for the model.
        cost_usd: Cost from the price table; ``None`` when the model has no price.
    """

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    prompt_tokens_evaluated: int = 0
    completion_tokens: int = 0
    retries: int = 0
    seconds: float = 0.0
    cost_usd: float | None = 0.0

    def add(self, other: Usage) -> None:
        """Add ``other`` into this usage (an unknown cost makes the total unknown)."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if f.name == "cost_usd":
                setattr(self, f.name, None if mine is None or theirs is None else mine + theirs)
            else:
                setattr(self, f.name, mine + theirs)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 6)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        """The usage :meth:`to_dict` wrote (unknown keys are ignored).

        Raises:
            TypeError: ``data`` is not an object (a damaged file).
        """
        if not isinstance(data, dict):
            raise TypeError(f"a usage must be an object, not {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        for key in known & data.keys():
            value = data[key]
            if value is None and key == "cost_usd":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise ValueError(f"a usage's {key} must be a number at least 0, got {reprlib.repr(value)}")
        return cls(**{k: v for k, v in data.items() if k in known})


_current: contextvars.ContextVar[Usage | None] = contextvars.ContextVar("ragmeter_usage", default=None)


@contextmanager
def metered() -> Iterator[Usage]:
    """Collect the usage of every model call made inside the block (by this task)."""
    usage = Usage()
    token = _current.set(usage)
    try:
        yield usage
    finally:
        _current.reset(token)


def record(usage: Usage) -> None:
    """Charge ``usage`` to the (sample, metric) being scored, if any."""
    current = _current.get()
    if current is not None:
        current.add(usage)


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6


class PriceTable:
    """Prices per model name, from the packaged table and an optional user file.

    Args:
        overrides: Path of a JSON or YAML file mapping model names to
            ``{"input_per_million": ..., "output_per_million": ...}``; its entries win.
    """

    def __init__(self, overrides: str | Path | None = None):
        self.prices = dict(_packaged_prices())
        if overrides is not None:
            self.prices.update(_read_prices(Path(overrides)))

    def price(self, model: str) -> Price | None:
        """The price of ``model``: an exact name, else the longest listed name it starts
        with (``gpt-4o-mini-2024-07-18`` takes ``gpt-4o-mini``); ``None`` when unlisted."""
        if model in self.prices:
            return self.prices[model]
        matches = [name for name in self.prices if model.startswith(name)]
        return self.prices[max(matches, key=len)] if matches else None


@lru_cache(maxsize=1)
def _packaged_prices() -> dict[str, Price]:
    text = resources.files("ragmeter.resources").joinpath("prices.json").read_text(encoding="utf-8")
    return _parse_prices(json.loads(text), "the packaged price table")


def _read_prices(path: Path) -> dict[str, Price]:
    """The prices in the JSON or YAML file at ``path`` (by its suffix).

    Raises:
        ValueError: The file cannot be read or parsed, or an entry is invalid; the message
            names the file.
    """
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
        data = yaml_value(text) if path.suffix.lower() in (".yaml", ".yml") else json_value(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read the price table: {exc}") from None
    return _parse_prices(data, str(path))


def _parse_prices(data: Any, source: str) -> dict[str, Price]:
    """The prices in ``data``, a mapping of model names to their :data:`_PRICE_FIELDS`; names
    starting with ``_`` are comments.

    Args:
        data: The parsed file.
        source: The file, for the errors.

    Raises:
        ValueError: ``data`` is no mapping, a model name is no text, or a price is missing,
            not a number, not finite or negative; the message names the model and the field.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping of model names to prices")
    prices = {}
    for model, entry in data.items():
        if not isinstance(model, str):
            raise ValueError(f"{source}: the model name {reprlib.repr(model)} must be text (in YAML, put it in quotes)")
        if model.startswith("_"):
            continue
        if not isinstance(entry, dict):
            raise ValueError(f"{source}: model '{model}' needs a mapping with {' and '.join(_PRICE_FIELDS)}")
        prices[model] = Price(*(_price(entry, name, f"{source}: model '{model}'") for name in _PRICE_FIELDS))
    return prices


def _price(entry: dict[Any, Any], name: str, where: str) -> float:
    """The price ``name`` of a model's ``entry``: a finite number >= 0, in US dollars per
    million tokens (numeric text such as ``"0.15"`` is read too); ``where`` names the model.

    Raises:
        ValueError: The price is missing, not a number, not finite or negative.
    """
    if name not in entry:
        raise ValueError(f"{where} needs {name}")
    value = entry[name]
    try:
        price = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError, OverflowError):
        price = math.nan
    if not math.isfinite(price) or price < 0:
        raise ValueError(f"{where}: {name} must be a finite number >= 0 (US dollars per million tokens), got {reprlib.repr(value)}")
    return abs(price)  # -0.0 is shown as 0
