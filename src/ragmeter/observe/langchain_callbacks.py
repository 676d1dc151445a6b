"""LangChain's runs as ragmeter spans: pass a :class:`RagmeterCallbackHandler` in the run's
callbacks and every chain, retriever and model call becomes a span (``CHAIN``, ``RETRIEVER``,
``LLM``), nested as LangChain nested them, with the question, the retrieved documents (text,
id, score), the answer, the model, and the tokens the model reported.

    chain.invoke(question, config={"callbacks": [RagmeterCallbackHandler()]})

Spans go where :func:`ragmeter.observe.configure` sends them. Needs ``langchain-core``
(``pip install 'ragmeter[langchain]'``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any
from uuid import UUID

try:
    from langchain_core.callbacks import BaseCallbackHandler
except ImportError as missing:  # the extra is not installed
    raise ImportError("the LangChain adapter needs langchain-core: pip install 'ragmeter[langchain]'") from missing

from ragmeter.observe.tracing import Span, current_span, open_span

#: Keys of a chain's inputs and outputs read as the question and the answer.
QUESTION_KEYS = ("question", "query", "input", "user_input")
ANSWER_KEYS = ("answer", "output", "result", "response", "text")


class RagmeterCallbackHandler(BaseCallbackHandler):
    """Records LangChain runs as ragmeter spans. Thread-safe; one handler may serve many runs.

    A run started inside ``@ragmeter.trace`` (or ``ragmeter.span``) is nested under that span.
    The handler never raises into LangChain: what it cannot read is left out of the span.
    """

    def __init__(self) -> None:
        self._spans: dict[UUID, Span] = {}
        self._lock = threading.Lock()

    def _start(self, run_id: UUID, parent_run_id: UUID | None, name: str, kind: str, question: str | None = None) -> Span:
        with self._lock:
            parent = self._spans.get(parent_run_id) if parent_run_id is not None else None
        handle = open_span(name, kind=kind, question=question, parent=parent or current_span())
        with self._lock:
            self._spans[run_id] = handle
        return handle

    def _end(self, run_id: UUID, error: BaseException | None = None) -> Span | None:
        with self._lock:
            handle = self._spans.pop(run_id, None)
        if handle is not None:
            handle.end(error)
        return handle

    def _running(self, run_id: UUID) -> Span | None:
        with self._lock:
            return self._spans.get(run_id)

    def on_chain_start(
        self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A chain (or runnable) started: a ``CHAIN`` span; its question from the input."""
        self._start(run_id, parent_run_id, _name(serialized, kwargs, "chain"), "CHAIN", _text_of(inputs, QUESTION_KEYS))

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A chain ended: its answer from the output."""
        handle = self._running(run_id)
        if handle is not None:
            handle.set_default("response", _text_of(outputs, ANSWER_KEYS))
        self._end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A chain failed: the error is recorded on its span."""
        self._end(run_id, error)

    def on_retriever_start(
        self, serialized: dict[str, Any] | None, query: str, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A retriever started: a ``RETRIEVER`` span with the query."""
        self._start(run_id, parent_run_id, _name(serialized, kwargs, "retriever"), "RETRIEVER", query)

    def on_retriever_end(self, documents: Sequence[Any], *, run_id: UUID, **kwargs: Any) -> None:
        """A retriever returned: its documents become the span's contexts."""
        handle = self._running(run_id)
        if handle is not None:
            metadata = [getattr(d, "metadata", None) or {} for d in documents]
            ids = [getattr(d, "id", None) or m.get("id") or m.get("source") for d, m in zip(documents, metadata, strict=True)]
            scores = [m.get("score") for m in metadata]
            numbers = [float(s) for s in scores if isinstance(s, (int, float))]
            handle.retrieved(
                [str(getattr(d, "page_content", d)) for d in documents],
                ids=ids if all(i is not None for i in ids) else None,
                scores=numbers if len(numbers) == len(scores) else None,
            )
        self._end(run_id)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A retriever failed: the error is recorded on its span."""
        self._end(run_id, error)

    def on_llm_start(
        self, serialized: dict[str, Any] | None, prompts: list[str], *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """A completion model started: an ``LLM`` span with the model's name."""
        handle = self._start(run_id, parent_run_id, _name(serialized, kwargs, "llm"), "LLM")
        handle.set_default("model", _model(kwargs))

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """A chat model started: an ``LLM`` span with the model's name."""
        self.on_llm_start(serialized, [], run_id=run_id, parent_run_id=parent_run_id, **kwargs)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A model answered: its text and the tokens it reported."""
        handle = self._running(run_id)
        if handle is not None:
            generations = getattr(response, "generations", None) or [[]]
            first = generations[0][0] if generations and generations[0] else None
            handle.set_default("response", getattr(first, "text", None))
            prompt, completion = _tokens(response, first)
            handle.set_default("prompt_tokens", prompt)
            handle.set_default("completion_tokens", completion)
        self._end(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call failed: the error is recorded on its span."""
        self._end(run_id, error)


def _name(serialized: dict[str, Any] | None, kwargs: dict[str, Any], default: str) -> str:
    """The run's name as LangChain gives it."""
    name = kwargs.get("name") or (serialized or {}).get("name")
    if not name and (serialized or {}).get("id"):
        name = serialized["id"][-1]  # type: ignore[index]
    return str(name or default)


def _text_of(value: Any, keys: Sequence[str]) -> str | None:
    """Text from a run's input or output: a string, a message's content, or a dict's key."""
    if isinstance(value, str):
        return value
    content = getattr(value, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(value, dict):
        return next((value[k] for k in keys if isinstance(value.get(k), str)), None)
    return None


def _model(kwargs: dict[str, Any]) -> str | None:
    """The model's name from the call's metadata or invocation parameters."""
    metadata = kwargs.get("metadata") or {}
    parameters = kwargs.get("invocation_params") or {}
    name = metadata.get("ls_model_name") or parameters.get("model_name") or parameters.get("model")
    return str(name) if name else None


def _tokens(response: Any, first: Any) -> tuple[int | None, int | None]:
    """Prompt and completion tokens the model reported (OpenAI-style or LangChain usage metadata)."""
    usage = ((getattr(response, "llm_output", None) or {}).get("token_usage")) or {}
    if usage:
        return usage.get("prompt_tokens"), usage.get("completion_tokens")
    metadata = getattr(getattr(first, "message", None), "usage_metadata", None) or {}
    return metadata.get("input_tokens"), metadata.get("output_tokens")
