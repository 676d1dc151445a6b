"""The ``--config`` file: judge settings, metrics with their parameters, and prices.

Example (YAML)::

    judge:
      base_url: https://api.deepseek.com/v1
      model: deepseek-chat
      api_key_env: DEEPSEEK_API_KEY     # the key stays in the environment
      requests_per_minute: 60
      # ensemble:                       # several judges, P(yes) combined (mean or majority)
      #   - {}                          # the judge above
      #   - {prompts: strict_prompts.yaml}
      #   - {model: deepseek-reasoner}
      # combine: mean
    prices: my-prices.yaml
    metrics:
      - faithfulness
      - ndcg@5
      - name: aspect_critic
        aspect: concise
        definition: The response answers in as few words as possible.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ragmeter.data.encodings import decode_text
from ragmeter.data.files import yaml_value
from ragmeter.data.issues import describe_briefly
from ragmeter.judges.config import JudgeConfig, prompt_files
from ragmeter.judges.prompts import PromptBook
from ragmeter.metrics.base import Metric
from ragmeter.metrics.registry import create_metric


@dataclass(frozen=True)
class RunConfig:
    """Settings read from a config file.

    Attributes:
        judge: The judge settings the file gives (command-line options override them).
        metrics: Metrics with their parameters, or ``None`` when the file has no metrics section.
    """

    judge: dict[str, Any]
    metrics: list[Metric] | None


def load_config(path: str | Path) -> RunConfig:
    """Read a YAML or JSON config file.

    Raises:
        ValueError: The file is not a mapping, or a section or metric is invalid; the
            message names the file and the entry.
    """
    path = Path(path)
    source = str(path)
    try:
        data = yaml_value(decode_text(path.read_bytes())) or {}
    except (OSError, ValueError, yaml.YAMLError) as exc:  # ValueError: not UTF-8 (the message says what it may be)
        raise ValueError(f"{source}: cannot read the config file: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a mapping with judge, metrics and prices sections")
    unknown = sorted(str(k) for k in set(data) - {"judge", "metrics", "prices"})
    if unknown:
        raise ValueError(f"{source}: unknown section(s) {', '.join(unknown)}; known: judge, metrics, prices")
    judge = data.get("judge") or {}
    JudgeConfig.from_mapping(judge, source)  # checks names, types and ranges
    judge = _with_prompt_paths(dict(judge), path.parent, source)
    prices = data.get("prices")
    if prices is not None:
        if not isinstance(prices, str) or not prices.strip():
            raise ValueError(f"{source}: prices: expected the path of a price table file (JSON or YAML), got {describe_briefly(prices)}")
        path_of_prices = Path(prices)
        judge["prices"] = str(path_of_prices if path_of_prices.is_absolute() else path.parent / path_of_prices)
    metrics = _metrics(data["metrics"], source) if "metrics" in data else None
    return RunConfig(judge=judge, metrics=metrics)


def _metrics(entries: Any, source: str) -> list[Metric]:
    """The metrics section: a list of at least one metric, each id once.

    Raises:
        ValueError: It is not a list, is empty (``metrics: []``, or ``metrics:`` with nothing
            under it), names a metric twice, or holds an invalid entry; the message names
            the file and the entry.
    """
    if entries is not None and not isinstance(entries, list):
        raise ValueError(f"{source}: metrics: expected a list of metric names or mappings, got {type(entries).__name__}")
    if not entries:
        raise ValueError(
            f"{source}: metrics: the list is empty; name at least one metric (`ragmeter metrics` lists them), "
            "or leave the section out for the automatic choice"
        )
    metrics: list[Metric] = []
    for position, entry in enumerate(entries):
        metric = _metric(entry, f"{source}, metrics[{position}]")
        earlier = next((n for n, m in enumerate(metrics) if m.id == metric.id), None)
        if earlier is not None:
            raise ValueError(f"{source}, metrics[{position}]: metric {describe_briefly(metric.id)} is already metrics[{earlier}]")
        metrics.append(metric)
    return metrics


def _with_prompt_paths(judge: dict[str, Any], folder: Path, source: str) -> dict[str, Any]:
    """The judge section with its prompt files (``prompts``, also in ensemble members)
    relative to the config file's folder, each checked.

    Raises:
        ValueError: A prompt file is missing or malformed (the message names it).
    """

    def resolved(prompts: Any, where: str) -> Any:
        def one(value: str) -> str:
            return str(Path(value) if Path(value).is_absolute() else folder / value)

        prompts = {lang: one(p) for lang, p in prompts.items()} if isinstance(prompts, dict) else one(prompts)
        try:
            for lang, file in prompt_files(prompts).items():
                PromptBook(lang, file)
        except ValueError as exc:
            raise ValueError(f"{source}: {where}: {exc}".replace("judge.prompts: ", "")) from None
        return prompts

    if judge.get("prompts") is not None:
        judge["prompts"] = resolved(judge["prompts"], "judge.prompts")
    if judge.get("ensemble"):
        judge["ensemble"] = [
            {**m, "prompts": resolved(m["prompts"], f"judge.ensemble[{n}].prompts")} if m.get("prompts") is not None else dict(m)
            for n, m in enumerate(judge["ensemble"])
        ]
    return judge


def _metric(entry: Any, where: str) -> Metric:
    try:
        if isinstance(entry, str):
            return create_metric(entry)
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            params = {k: v for k, v in entry.items() if k != "name"}
            return create_metric(entry["name"], **params)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    raise ValueError(f"{where}: expected a metric name or a mapping with 'name' and its parameters")
