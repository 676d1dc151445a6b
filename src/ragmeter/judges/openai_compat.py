"""A judge behind an OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, llama.cpp's
server, Ollama, LiteLLM...).

How it judges (the HTTP side, retries and limits, is :mod:`ragmeter.judges.transport`):

- Yes/no verdicts, ``verdict_mode="batch"``: all items of one :meth:`~OpenAIJudge.verdicts`
  call go in ONE request; the reply is JSON
  (``{"verdicts": [{"id": 1, "reason": "...", "verdict": "yes"}]}``). The request asks for
  log-probabilities too: where the server returns them, each verdict's P(yes) is read at the
  token where its value starts (method ``"logprobs"``), else it is the text's 1.0 or 0.0
  (method ``"text"``). Items the reply leaves out (a list cut short, wrong ids) are asked
  again in one follow-up request.
- ``verdict_mode="single"``: one request per item for a single token, with its
  log-probabilities; P(yes) = P(yes spellings) / (P(yes spellings) + P(no spellings)) among
  the first token's top log-probabilities (method ``"logprobs"``), else the reply's text.
- ``verdict_mode="auto"`` (the default): before its first verdicts the judge runs the verdict
  probe (:mod:`ragmeter.judges.probe`): clear-cut claims judged in batch mode, then, if batch
  verdicts cannot tell them apart, one by one; it uses the first mode that can, and warns
  when none can. The outcome is kept in the disk cache and shown by :meth:`describe`.
- JSON answers ask for ``response_format`` ``json_schema`` where the server supports it.
  Replies are parsed, repaired (``json_repair``) when broken or cut off, checked against the
  schema (required properties, arrays and objects), and asked for once more when still
  unusable.

While it runs, the judge counts each task's share of yes verdicts and warns when a task's
verdicts are all the same over many items (:class:`~ragmeter.judges.probe.VerdictTally`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ragmeter.judges.base import FieldValue, JudgeError, LLMJudge, Memo, ReplyCutOff, Verdict, check_evidence_sentences
from ragmeter.judges.cache import cache_key, prompts_version
from ragmeter.judges.metering import PriceTable, metered
from ragmeter.judges.probe import PROBE_TASK, ProbeCase, ProbeFailure, ProbeOutcome, VerdictTally, probe_version, run_probe
from ragmeter.judges.prompts import BATCH_VERDICTS_SCHEMA, PromptBook, VerdictPrompt, variant_version
from ragmeter.judges.replies import (
    BATCH_SHAPE,
    content,
    extract_verdicts,
    finish_reason,
    first_word,
    option_in,
    parse_json,
    reask,
    schema_problem,
    top_logprobs,
    verdict_probabilities,
    wrap_verdicts,
    yes_no,
    yes_share,
)
from ragmeter.judges.requests import check_base_url, public_url, without_user_info
from ragmeter.judges.transport import TOP_LOGPROBS, ChatTransport, estimated_tokens

log = logging.getLogger("ragmeter.judges.openai")

VERDICT_MODES = ("auto", "batch", "single")

__all__ = ["TOP_LOGPROBS", "VERDICT_MODES", "OpenAIJudge"]


class OpenAIJudge(LLMJudge):
    """A judge model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        base_url: The API root, e.g. ``https://api.openai.com/v1`` or
            ``http://127.0.0.1:8000/v1``. A user name and password in it (``user:pass@host``)
            are dropped, with a warning: sent, they would replace the API key (the HTTP client
            makes them a Basic authorization); the key goes as a Bearer token.
        model: The model name the endpoint serves (also the key into the price table).
        api_key: Bearer token; ``None`` for servers without authentication. It is never
            printed, logged, returned by :meth:`describe`, or put in errors or reprs.
        concurrency: Most requests in flight at once.
        requests_per_minute: Most request starts per minute (retries included), spaced
            evenly; ``None`` for no limit.
        timeout: Seconds one attempt may take before it is abandoned and retried.
        max_retries: Retries of one request after rate limits, server errors, timeouts,
            connection errors or unreadable replies; then :class:`JudgeError`. Its waits
            together take at most :data:`~ragmeter.judges.requests.REQUEST_WAIT_CAP` seconds;
            once the endpoint cannot be connected to on several attempts in a row, requests
            fail at once for a while (:mod:`ragmeter.judges.breaker`).
        context_window: Tokens one prompt may use (estimated by :meth:`count_tokens`).
        temperature: Sampling temperature.
        seed: Sampling seed, sent for servers that honour it.
        prices: Price table for ``Usage.cost_usd``; ``None`` for the packaged table. A model
            the table does not list has an unknown cost (``None``), never 0.
        verdict_mode: ``"auto"``: probe, then use batch or single mode (module docstring).
            ``"batch"``: all items of a :meth:`verdicts` call in one request, answered in
            JSON. ``"single"``: one request per item for one token with its log-probabilities.
        max_tokens: Longest reply to a JSON request (:meth:`generate`, batch verdicts).
        http_client: An ``AsyncClient`` of the HTTP library the ``openai`` package uses
            (proxies, custom transports, tests); default: the package's own. One that follows
            redirects is refused; the judge's 32 MiB limit on a reply body is added to its
            response hooks.
        evidence_sentences: Premise sentences shown per statement checked (see
            :class:`~ragmeter.judges.base.LLMJudge`); 0, the default, shows the whole
            premise and keeps one request for all statements of a sample in batch mode.
        prompts: Prompt files replacing parts of the packaged prompts, by language
            (``{"en": "my_prompts.yaml"}``; see :func:`~ragmeter.judges.prompts.load_variant`).
    """

    backend = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        concurrency: int = 8,
        requests_per_minute: float | None = None,
        timeout: float = 60.0,
        max_retries: int = 5,
        context_window: int = 128000,
        temperature: float = 0.0,
        seed: int | None = 0,
        prices: PriceTable | None = None,
        verdict_mode: str = "auto",
        max_tokens: int = 2048,
        http_client: Any = None,
        evidence_sentences: int = 0,
        prompts: Mapping[str, str | Path] | None = None,
    ):
        check_evidence_sentences(evidence_sentences)
        check_base_url(base_url)
        if verdict_mode not in VERDICT_MODES:
            raise ValueError(f"verdict_mode must be one of {', '.join(VERDICT_MODES)}, got {verdict_mode!r}")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if requests_per_minute is not None and requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be positive (or None for no limit)")
        if "@" in urlsplit(base_url).netloc:
            log.warning("the judge's base URL %s holds a user name or password: not sent (the API key is)", public_url(base_url))
        self.base_url = base_url = without_user_info(base_url)
        self.model = model
        self.context_window = context_window
        self.verdict_mode = verdict_mode
        self.evidence_sentences = evidence_sentences
        self.reply_limit: int = max_tokens
        self.prompts = {lang: str(path) for lang, path in (prompts or {}).items()}
        for lang in self.prompts:
            PromptBook(lang, self.prompts[lang])  # a broken prompt file fails here, not mid-run
        self.transport = ChatTransport(
            base_url,
            model,
            api_key,
            concurrency=concurrency,
            requests_per_minute=requests_per_minute,
            timeout=timeout,
            max_retries=max_retries,
            context_window=context_window,
            temperature=temperature,
            seed=seed,
            price=(prices or PriceTable()).price(model),
            http_client=http_client,
        )
        self._route: str | None = None if verdict_mode == "auto" else verdict_mode
        self._probe: ProbeOutcome | None = None
        self._probe_failure = ProbeFailure()
        self._settling: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self.tally = VerdictTally()
        self._methods: Counter[str] = Counter()

    # ---- description -----------------------------------------------------------------

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={public_url(self.base_url)!r}, verdict_mode={self.verdict_mode!r})"

    def identity(self) -> dict[str, Any]:
        settings = {
            "backend": self.backend,
            "model": self.model,
            "base_url": public_url(self.base_url),
            "verdict_mode": self.verdict_mode,
            "temperature": self.transport.temperature,
            "seed": self.transport.seed,
            "context_window": self.context_window,
        }
        if self.prompts:
            settings["prompts"] = {lang: variant_version(path) for lang, path in sorted(self.prompts.items())}
        return settings

    def verdict_identity(self) -> dict[str, Any]:
        """:meth:`identity` with the verdict mode actually used (after :meth:`settle`): the
        key of cached verdicts, shared by ``auto`` and the mode it chose."""
        return {**self.identity(), "verdict_mode": self._route or self.verdict_mode, "verdicts_read": "logprobs where given"}

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            **self.identity(),
            "verdict_mode_used": self._route,
            "verdict_methods": dict(sorted(self._methods.items())),
        }
        if self.prompts:
            described["prompt_files"] = dict(sorted(self.prompts.items()))
        if self.verdict_mode == "auto":
            described["probe"] = self._probe.to_dict() if self._probe else "not run yet (no verdicts asked)"
        described["verdicts"] = self.tally.to_dict()
        described["warnings"] = self.warnings()
        return described

    def warnings(self) -> list[str]:
        """What the probe and the tally of verdicts found worth a warning."""
        found = [self._probe.warning] if self._probe and self._probe.warning else []
        return found + self.tally.warnings()

    def count_tokens(self, text: str) -> int:
        """An estimate, without the model's tokenizer: one token per CJK character plus one
        per 4 other characters (rounded up)."""
        return estimated_tokens(text)

    def _book(self, lang: str) -> PromptBook:
        return PromptBook(lang, self.prompts.get(lang))

    # ---- the verdict mode ------------------------------------------------------------

    async def settle(self, memo: Memo | None = None) -> None:
        """In ``auto`` mode, choose the verdict mode once: from the probe outcome kept in
        ``memo`` (the disk cache), else by running the probe (and keeping its outcome
        there when every mode answered)."""
        if self._route is not None:
            return
        loop = asyncio.get_running_loop()
        if self._settling is None or self._settling[0] is not loop:
            self._settling = (loop, asyncio.Lock())
        async with self._settling[1]:
            if self._route is not None:
                return
            key = cache_key("verdict probe", self.identity(), probe_version(), prompts_version("en"), prompts_version("zh"))
            kept = memo.get(key) if memo is not None else None
            if kept is not None:
                outcome = ProbeOutcome.from_dict(json.loads(kept))
            else:
                outcome = await self._probe_failure.attempt(self._run_probe)  # a failed probe is not run again at once
                if memo is not None and not any(s.error for s in outcome.separations):
                    memo.put_many({key: json.dumps(outcome.to_dict()).encode()})
            self._probe, self._route = outcome, outcome.chosen
            log.info("verdict probe: %s", outcome.summary())
            if outcome.warning:
                log.warning("%s", outcome.warning)

    async def _run_probe(self) -> ProbeOutcome:
        async def ask(mode: str, case: ProbeCase) -> list[Verdict]:
            return await self._verdicts_in(mode, PROBE_TASK, {"premise": [case.premise]}, list(case.claims), case.lang)

        with metered() as usage:  # the probe's cost is its own, not the first sample's
            outcome = await run_probe(ask)
        if all(s.error for s in outcome.separations):
            raise JudgeError(f"the verdict probe got no verdicts from the judge: {outcome.separations[-1].error}")
        outcome.usage = {k: v for k, v in usage.to_dict().items() if k in ("calls", "prompt_tokens", "completion_tokens", "seconds")}
        return outcome

    def note_verdicts(self, task: str, verdicts: Sequence[Verdict]) -> None:
        self.tally.add(task, verdicts)
        self._methods.update(v.method for v in verdicts)

    # ---- the judge's tasks -----------------------------------------------------------

    async def verdicts(self, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
        if not items:
            return []
        await self.settle()
        verdicts = await self._verdicts_in(self._route or "batch", task, shared, items, lang)
        self.note_verdicts(task, verdicts)
        return verdicts

    async def _verdicts_in(self, mode: str, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
        book = self._book(lang)
        if mode == "single":
            prompt, tag = book.verdict(task, shared), book.item_tag(task)
            # Let every item finish (no request left running unwatched), then report the first failure.
            results = await asyncio.gather(*(self._single_verdict(book, prompt, item, tag) for item in items), return_exceptions=True)
            for result in results:
                if isinstance(result, JudgeError):
                    result.given = {i: verdict for i, verdict in enumerate(results) if isinstance(verdict, Verdict)}
                if isinstance(result, BaseException):
                    raise result
            return [result for result in results if isinstance(result, Verdict)]
        found = await self._batch_verdicts(book, task, shared, list(items))
        missing = [i for i in range(len(items)) if i not in found]
        if missing:
            log.debug("judge reply left out %d of %d items; asking again for them", len(missing), len(items))
            try:
                again = await self._batch_verdicts(book, task, shared, [items[i] for i in missing])
            except JudgeError as failure:
                failure.given = dict(found)
                raise
            found.update({missing[j]: verdict for j, verdict in again.items()})
            still = [i + 1 for i in range(len(items)) if i not in found]
            if still:
                unanswered = JudgeError(
                    f"the judge gave no verdict for item(s) {', '.join(map(str, still))} of {len(items)} "
                    f"('{task}'), even when asked again for them"
                )
                unanswered.given = dict(found)
                raise unanswered
        return [found[i] for i in range(len(items))]

    async def _batch_verdicts(self, book: PromptBook, task: str, shared: Mapping[str, FieldValue], items: list[str]) -> dict[int, Verdict]:
        """Verdicts found in one batch reply, by 0-based item index."""
        messages = book.batch_messages(task, shared, items)
        budget = min(self.reply_limit, 64 + 96 * len(items))
        value, response = await self._json_exchange(
            book, messages, BATCH_VERDICTS_SCHEMA, BATCH_SHAPE, budget, task, coerce=wrap_verdicts, logprobs=True
        )
        return extract_verdicts(value["verdicts"], len(items), verdict_probabilities(response))

    async def _single_verdict(self, book: PromptBook, prompt: VerdictPrompt, item: str, tag: str) -> Verdict:
        messages = prompt.messages(item, tag)
        for attempt in range(2):
            response = await self.transport.complete(messages, max_tokens=1 if attempt == 0 else 4, logprobs=True)
            p_yes = yes_share(top_logprobs(response))
            if p_yes is not None:
                return Verdict(p_yes=p_yes, method="logprobs")
            text = content(response)
            p = yes_no(first_word(text))
            if p is not None:
                return Verdict(p_yes=p, method="text")
            messages = reask(messages, text, book.reask("yes_no"))
        raise JudgeError(f"the judge answered neither {prompt.answers[0]} nor {prompt.answers[1]}, even when asked again")

    async def scale(self, task: str, shared: Mapping[str, FieldValue], options: Sequence[str], lang: str) -> dict[str, float]:
        book = self._book(lang)
        prompt = book.scale(task, shared)
        messages = prompt.chat(prompt.asks)
        options = list(options)
        for attempt in range(2):
            response = await self.transport.complete(messages, max_tokens=1 if attempt == 0 else 4, logprobs=True)
            mass = dict.fromkeys(options, 0.0)
            for token, logprob in top_logprobs(response):
                if token.strip() in mass:
                    mass[token.strip()] += math.exp(logprob)
            total = sum(mass.values())
            if total > 0:
                return {option: value / total for option, value in mass.items()}
            text = content(response)
            chosen = option_in(text, options)
            if chosen is not None:
                return {option: 1.0 if option == chosen else 0.0 for option in options}
            messages = reask(messages, text, book.reask("option", options=", ".join(options)))
        raise JudgeError(f"the judge's reply to '{task}' named none of the options {', '.join(options)}, even when asked again")

    async def generate(self, task: str, fields: Mapping[str, FieldValue], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        book = self._book(lang)
        messages = book.generation_messages(task, fields)
        value, _ = await self._json_exchange(book, messages, dict(schema), dict(schema), self.reply_limit, task)
        return value

    # ---- JSON replies ----------------------------------------------------------------

    async def _json_exchange(
        self,
        book: PromptBook,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        shape: dict[str, Any],
        max_tokens: int,
        task: str,
        coerce=None,
        logprobs: bool = False,
    ) -> tuple[dict[str, Any], Any]:
        """A JSON object from the judge (parsed, repaired if needed, ``coerce``-d, checked
        against ``shape``; asked for once more if still unusable) and the response it came in."""
        problem, cut_off = "", False
        for attempt in range(2):
            response = await self.transport.complete(messages, max_tokens=max_tokens, json_schema=(task, schema), logprobs=logprobs)
            text = content(response)
            value, problem = await asyncio.to_thread(parse_json, text)  # (a repair can take seconds: not in the event loop)
            if value is not None:
                value = coerce(value) if coerce is not None else value
                problem = schema_problem(value, shape) or ""
                if not problem:
                    return value, response
            cut_off = finish_reason(response) == "length"
            if cut_off:
                problem += f" (the reply was cut off at {max_tokens} tokens)"
            log.debug("unusable JSON from the judge for '%s' (%s)%s", task, problem, "; asking again" if attempt == 0 else "")
            messages = reask(messages, text, book.reask("json", problem=problem))
        failure = ReplyCutOff if cut_off else JudgeError
        raise failure(f"the judge's reply to '{task}' was not usable JSON after repair and one re-ask: {problem}")

    async def aclose(self) -> None:
        await self.transport.aclose()
