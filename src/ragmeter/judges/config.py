"""Which LLM judge to use, from options, environment variables or a config file.

Environment variables (options and config files win over them):

- ``RAGMETER_JUDGE_BASE_URL``: an OpenAI-compatible endpoint; setting it selects that
  backend unless ``RAGMETER_JUDGE_BACKEND`` says otherwise.
- ``RAGMETER_JUDGE_MODEL``: the endpoint's model name.
- ``RAGMETER_JUDGE_API_KEY`` (else ``OPENAI_API_KEY``): the key. It is read from the
  environment only, and never printed, logged or written anywhere. ``api_key_env`` names
  another variable to read it from.
- ``RAGMETER_JUDGE_BACKEND``: ``local`` or ``openai``.
- ``RAGMETER_GGUF``: a GGUF file for the local judge instead of the packaged model.
- ``RAGMETER_CACHE_DIR``: where the answer cache lives (default ``~/.cache/ragmeter``).
- ``RAGMETER_MODEL_DIR``: where the packaged model is joined (default
  ``~/.cache/ragmeter/models``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator

from ragmeter.data.issues import describe_briefly
from ragmeter.data.secrets import register, register_url
from ragmeter.judges.base import JudgeError, LLMJudge
from ragmeter.judges.cache import CACHE_FILE, CachingJudge, DiskCache, user_cache_dir
from ragmeter.judges.metering import PriceTable
from ragmeter.judges.prompts import LANGUAGES

BACKENDS = ("local", "openai")

#: Most requests a judge may keep in flight (``concurrency``): far above what an endpoint serves
#: at once, so a larger value is a mistake, refused with the limit named.
MAX_CONCURRENCY = 1024

#: Settings an ensemble member may give for itself; the others are the judge section's.
MEMBER_SETTINGS = frozenset(
    {
        "backend",
        "base_url",
        "model",
        "api_key_env",
        "concurrency",
        "requests_per_minute",
        "timeout",
        "context_window",
        "verdict_mode",
        "prompts",
        "prices",
    }
)


class JudgeConfig(BaseModel):
    """Settings of the LLM judge.

    Attributes:
        backend: ``"local"`` (embedded model) or ``"openai"`` (any OpenAI-compatible
            endpoint); ``None`` picks ``"openai"`` when ``base_url`` is set, else local.
        base_url: The endpoint, e.g. ``https://api.openai.com/v1`` or
            ``http://127.0.0.1:8000/v1``.
        model: The endpoint's model name.
        api_key_env: Environment variable holding the key (default
            ``RAGMETER_JUDGE_API_KEY``, then ``OPENAI_API_KEY``).
        concurrency: Most requests in flight to the endpoint, 1 to :data:`MAX_CONCURRENCY` (1024).
        requests_per_minute: Request rate limit; ``None`` for none.
        timeout: Seconds per request.
        context_window: Tokens per prompt; default 4096 locally, 128000 for endpoints.
        verdict_mode: Endpoints: ``"auto"`` (default): probe once which of the two modes
            below gives verdicts with signal, and use it; ``"batch"``: all items of a
            verdict in one request (P(yes) from log-probabilities where the server gives
            them); ``"single"``: one request per item, with log-probabilities.
        gguf: GGUF file for the local judge (default: the packaged model).
        threads: CPU threads for the local judge (default: all cores).
        calibrated: Local judge: recalibrate the packaged model's P(yes) of English claim
            support with the fit in ``resources/local_judge_calibration.json`` (made on
            QAGS news summaries). Stricter: better balanced accuracy on subtle, long-article
            claims, but clearly supported claims can fall below 0.5; off by default.
        evidence_sentences: Premise sentences the judge sees per statement it checks, the
            ones most similar to the statement; 0 for the whole premise; ``None`` for the
            backend's default (3 for the local judge, the whole premise for endpoints).
        cache: Keep answers in the disk cache and reuse them.
        cache_dir: Folder of the cache (default ``$RAGMETER_CACHE_DIR`` or ``~/.cache/ragmeter``).
        prices: Price table file (JSON or YAML) overriding the packaged one.
        prompts: Endpoints: prompt files in the format of ragmeter's ``prompts/en.yaml``
            whose entries replace the packaged ones: a file (English), a folder holding
            ``en.yaml`` and/or ``zh.yaml``, or a mapping ``{en: file, zh: file}``.
        ensemble: Endpoints: several judges whose verdicts are combined; each entry is a
            mapping of the settings above that differ from this section's (``model``,
            ``base_url``, ``prompts``...), ``{}`` for this section's judge itself.
        combine: How an ensemble combines its members' P(yes): ``"mean"`` or
            ``"majority"`` (the share of members that say yes).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Literal["local", "openai"] | None = None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    concurrency: StrictInt = Field(default=8, ge=1, le=MAX_CONCURRENCY)
    requests_per_minute: StrictInt | None = Field(default=None, ge=1)
    timeout: float = Field(default=60.0, gt=0, allow_inf_nan=False)
    context_window: StrictInt | None = Field(default=None, ge=256)
    verdict_mode: Literal["auto", "batch", "single"] = "auto"
    gguf: str | None = None
    threads: StrictInt | None = Field(default=None, ge=1)
    calibrated: StrictBool = False
    evidence_sentences: StrictInt | None = Field(default=None, ge=0)
    cache: StrictBool = True
    cache_dir: str | None = None
    prices: str | None = None
    prompts: str | dict[Literal["en", "zh"], str] | None = None
    ensemble: list[dict[str, Any]] | None = Field(default=None, min_length=1)
    combine: Literal["mean", "majority"] = "mean"

    @field_validator("ensemble")
    @classmethod
    def _members_are_settings(cls, members: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        for number, member in enumerate(members or []):
            unknown = sorted(str(k) for k in set(member) - MEMBER_SETTINGS)
            if unknown:
                raise ValueError(
                    f"ensemble[{number}]: setting(s) {', '.join(unknown)} cannot differ between members; "
                    f"a member may set {', '.join(sorted(MEMBER_SETTINGS))}"
                )
        return members

    @classmethod
    def from_env(cls) -> JudgeConfig:
        """Settings from the ``RAGMETER_*`` environment variables.

        Raises:
            ValueError: ``RAGMETER_JUDGE_BACKEND`` is neither ``local`` nor ``openai``.
        """
        env = os.environ
        backend = env.get("RAGMETER_JUDGE_BACKEND") or None
        if backend is not None and backend not in BACKENDS:
            raise ValueError(f"RAGMETER_JUDGE_BACKEND must be one of {', '.join(BACKENDS)}, got {backend!r}")
        return cls(
            backend=cast(Literal["local", "openai"] | None, backend),
            base_url=env.get("RAGMETER_JUDGE_BASE_URL") or None,
            model=env.get("RAGMETER_JUDGE_MODEL") or None,
            gguf=env.get("RAGMETER_GGUF") or None,
            cache_dir=env.get("RAGMETER_CACHE_DIR") or None,
        )

    @classmethod
    def from_mapping(cls, data: Any, source: str) -> JudgeConfig:
        """Settings from a config file's ``judge:`` section (names as the attributes).

        Raises:
            ValueError: The section is not a mapping, names an unknown setting or an API key,
                or a value has the wrong type or range; the message names the file and key.
        """
        if not isinstance(data, dict):
            raise ValueError(f"{source}: judge: expected a mapping of settings (base_url: ..., model: ...), got {type(data).__name__}")
        if "api_key" in data:
            raise ValueError(
                f"{source}: judge.api_key is not accepted: keys do not belong in files. Put the key in an "
                "environment variable and name it with judge.api_key_env"
            )
        known = set(cls.model_fields)
        unknown = sorted(str(k) for k in set(data) - known)
        if unknown:
            raise ValueError(f"{source}: unknown judge setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        settings = cls.validated(data, f"{source}: judge.")
        for number in range(len(settings.ensemble or [])):
            settings.member(number, f"{source}: judge.")
        return settings

    @classmethod
    def validated(cls, data: dict[str, Any], where: str = "judge setting ") -> JudgeConfig:
        """Settings from ``data``, checked; errors name the setting after ``where``.

        Raises:
            ValueError: A value has the wrong type or range.
        """
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ValueError(validation_message(exc, where)) from None

    def updated(self, **settings: Any) -> JudgeConfig:
        """A copy with the given settings, checked; ``None`` values leave a setting as it is.

        Raises:
            ValueError: A value has the wrong type or range.
        """
        return self.validated({**self.model_dump(), **{k: v for k, v in settings.items() if v is not None}})

    @property
    def chosen_backend(self) -> str:
        """The backend these settings select (see ``backend``)."""
        return self.backend or ("openai" if self.base_url else "local")

    def api_key(self) -> str | None:
        if self.api_key_env:
            return os.environ.get(self.api_key_env)
        return os.environ.get("RAGMETER_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")

    def open_cache(self) -> DiskCache | None:
        """The disk cache these settings use, or ``None`` when caching is off."""
        if not self.cache:
            return None
        directory = Path(self.cache_dir) if self.cache_dir else user_cache_dir()
        return DiskCache(directory / CACHE_FILE)

    def build(self, cache: DiskCache | None = None, *, cached: bool = True) -> LLMJudge:
        """The judge these settings describe.

        Args:
            cache: The disk cache to answer from (default: :meth:`open_cache`).
            cached: False returns the bare judge, without the cache in front.

        Raises:
            JudgeError: The local judge is not installed, or an endpoint lacks a model name.
        """
        register_url(self.base_url)
        cache = cache or (self.open_cache() if cached else None)
        if self.ensemble:
            from ragmeter.judges.ensemble import EnsembleJudge

            try:
                settings = [self.member(number) for number in range(len(self.ensemble))]
            except ValueError as exc:
                raise JudgeError(str(exc)) from None
            local = [number for number, member in enumerate(settings) if member.chosen_backend != "openai"]
            if local:
                raise JudgeError(
                    f"judge.ensemble[{local[0]}] is not an endpoint: ensemble members are OpenAI-compatible endpoints "
                    "(give base_url and model); the local judge cannot be a member"
                )
            return EnsembleJudge([member.build(cache, cached=cached) for member in settings], self.combine)
        if self.chosen_backend == "openai":
            judge: LLMJudge = self._endpoint_judge()
        else:
            from ragmeter.judges.local import EVIDENCE_SENTENCES, LocalJudge
            from ragmeter.judges.local_model import check_local_judge

            check_local_judge(self.gguf)
            judge = LocalJudge(
                model_path=self.gguf, context_window=self.context_window or 4096, threads=self.threads, calibrated=self.calibrated,
                evidence_sentences=EVIDENCE_SENTENCES if self.evidence_sentences is None else self.evidence_sentences,
            )  # fmt: skip
        return CachingJudge(judge, cache) if cache is not None else judge

    def member(self, number: int, where: str = "judge.") -> JudgeConfig:
        """The settings of ensemble member ``number``: this section's, with the member's own.

        Args:
            number: The member's position in ``ensemble``.
            where: How errors name the judge section (``"config.yaml: judge."``).

        Raises:
            ValueError: A value has the wrong type or range.
        """
        assert self.ensemble is not None
        own = {k: v for k, v in self.model_dump().items() if k not in ("ensemble", "combine")}
        return self.validated({**own, **self.ensemble[number]}, f"{where}ensemble[{number}].")

    def _endpoint_judge(self) -> LLMJudge:
        if not self.base_url or not self.model:
            raise JudgeError("an OpenAI-compatible judge needs both a base URL and a model name (--judge-base-url, --judge-model)")
        from ragmeter.judges.openai_compat import OpenAIJudge

        try:
            prompts = prompt_files(self.prompts)
            return OpenAIJudge(
                base_url=self.base_url,
                model=self.model,
                api_key=register_key(self.api_key()),
                concurrency=self.concurrency,
                requests_per_minute=self.requests_per_minute,
                timeout=self.timeout,
                context_window=self.context_window or 128_000,
                verdict_mode=self.verdict_mode,
                prices=PriceTable(self.prices),
                evidence_sentences=self.evidence_sentences or 0,
                prompts=prompts,
            )
        except ValueError as exc:
            raise JudgeError(str(exc)) from None


def prompt_files(prompts: str | Mapping[Any, str] | None) -> dict[str, str]:
    """The ``prompts`` setting as prompt files by language: a file is English, a folder
    gives its ``en.yaml`` and ``zh.yaml`` (whichever exist), a mapping is taken as it is.

    Raises:
        ValueError: A named file or folder does not exist, or a folder holds neither file.
    """
    if prompts is None:
        return {}
    if isinstance(prompts, Mapping):
        files = {str(lang): str(path) for lang, path in prompts.items()}
    else:
        folder = Path(prompts)
        if folder.is_dir():
            files = {lang: str(folder / f"{lang}.yaml") for lang in LANGUAGES if (folder / f"{lang}.yaml").is_file()}
            if not files:
                raise ValueError(f"judge.prompts: the folder {prompts} holds neither en.yaml nor zh.yaml")
        else:
            files = {"en": str(prompts)}
    for lang, path in files.items():
        if not Path(path).is_file():
            raise ValueError(f"judge.prompts: no prompt file {path} (for language '{lang}')")
    return files


def register_key(key: str | None) -> str | None:
    """Remember ``key`` as a secret to mask wherever text is stored or printed; return it."""
    register(key)
    return key


def validation_message(exc: ValidationError, where: str) -> str:
    """The first problem of a pydantic error as one line: ``<where><field>: <what> (got ...)``."""
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"])
    got = f" (got {describe_briefly(error['input'])})" if "input" in error and not isinstance(error["input"], dict) else ""
    more = len(exc.errors()) - 1
    return f"{where}{field}: {error['msg']}{got}" + (f"; and {more} more problem(s)" if more else "")
