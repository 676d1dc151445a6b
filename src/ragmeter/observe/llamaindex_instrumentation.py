"""LlamaIndex's instrumentation as ragmeter spans: :func:`instrument` adds a span handler and an
event handler to LlamaIndex's dispatcher, and every instrumented call (query engine, retriever,
response synthesizer, model, embedding) becomes a span, nested as LlamaIndex nested them, with
the question, the retrieved nodes (text, id, score), the answer, the model, and the tokens the
model reported.

    tracer = instrument()
    index.as_query_engine().query("How many vCPU does a small runner have?")
    tracer.detach()  # when the application should no longer be traced

Spans go where :func:`ragmeter.observe.configure` sends them. Needs ``llama-index-core``
(``pip install 'ragmeter[llamaindex]'``).
"""

from __future__ import annotations

import threading
from typing import Any

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.base.llms.base import BaseLLM
    from llama_index.core.instrumentation import Dispatcher, get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.core.instrumentation.events.llm import LLMChatEndEvent, LLMCompletionEndEvent
    from llama_index.core.instrumentation.events.query import QueryEndEvent, QueryStartEvent
    from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
    from llama_index.core.instrumentation.span import BaseSpan
    from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from pydantic import PrivateAttr
except ImportError as missing:  # the extra is not installed
    raise ImportError("the LlamaIndex adapter needs llama-index-core: pip install 'ragmeter[llamaindex]'") from missing

from ragmeter.observe.tracing import Span, current_span, open_span

#: The span kind of a call, by the class of the object that made it (first match wins).
KINDS: tuple[tuple[type, str], ...] = (
    (BaseRetriever, "RETRIEVER"),
    (BaseLLM, "LLM"),
    (BaseEmbedding, "EMBEDDING"),
    (BaseNodePostprocessor, "RERANKER"),
)


class LlamaIndexTracer:
    """Records LlamaIndex's instrumented calls as ragmeter spans. Thread-safe.

    A call made inside ``@ragmeter.trace`` (or ``ragmeter.span``) is nested under that span.
    The tracer never raises into LlamaIndex: what it cannot read is left out of the span.
    """

    def __init__(self) -> None:
        self._spans: dict[str, Span] = {}
        self._lock = threading.Lock()
        self.span_handler = _SpanHandler()
        self.span_handler._tracer = self
        self.event_handler = _EventHandler()
        self.event_handler._tracer = self
        self._dispatcher: Dispatcher | None = None

    def attach(self, dispatcher: Dispatcher | None = None) -> LlamaIndexTracer:
        """Start recording the calls that ``dispatcher`` sees (default: LlamaIndex's root
        dispatcher, which sees every call). Returns the tracer."""
        self._dispatcher = dispatcher or get_dispatcher()
        self._dispatcher.add_span_handler(self.span_handler)
        self._dispatcher.add_event_handler(self.event_handler)
        return self

    def detach(self) -> None:
        """Stop recording: the handlers leave the dispatcher they were added to."""
        if self._dispatcher is not None:
            self._dispatcher.span_handlers.remove(self.span_handler)
            self._dispatcher.event_handlers.remove(self.event_handler)
            self._dispatcher = None

    def opened(self, span_id: str, parent_id: str | None, instance: Any) -> None:
        """A LlamaIndex span ``span_id`` started, made by ``instance``, inside ``parent_id``."""
        with self._lock:
            parent = self._spans.get(parent_id) if parent_id is not None else None
        kind = next((k for cls, k in KINDS if isinstance(instance, cls)), "CHAIN")
        handle = open_span(span_id.rsplit("-", 5)[0], kind=kind, parent=parent or current_span())
        if kind == "LLM":
            handle.set_default("model", getattr(getattr(instance, "metadata", None), "model_name", None))
        with self._lock:
            self._spans[span_id] = handle

    def closed(self, span_id: str, error: BaseException | None) -> None:
        """The LlamaIndex span ``span_id`` ended, with ``error`` when it raised."""
        with self._lock:
            handle = self._spans.pop(span_id, None)
        if handle is not None:
            handle.end(error)

    def event(self, event: BaseEvent) -> None:
        """An event inside a span: its question, retrieved nodes, answer or tokens go on the span."""
        with self._lock:
            handle = self._spans.get(event.span_id or "")
        if handle is None:
            return
        if isinstance(event, (QueryStartEvent, RetrievalStartEvent)):
            query = event.query if isinstance(event, QueryStartEvent) else event.str_or_query_bundle
            handle.set_default("question", query if isinstance(query, str) else getattr(query, "query_str", None))
        elif isinstance(event, RetrievalEndEvent):
            nodes = event.nodes
            scores = [n.score for n in nodes]
            handle.retrieved(
                [n.node.get_content() for n in nodes],
                ids=[n.node.ref_doc_id or n.node.node_id for n in nodes],
                scores=[float(s) for s in scores] if all(s is not None for s in scores) else None,  # type: ignore[arg-type]
            )
        elif isinstance(event, QueryEndEvent):
            handle.set_default("response", getattr(event.response, "response", None))
        elif isinstance(event, (LLMCompletionEndEvent, LLMChatEndEvent)):
            response = event.response
            text = getattr(response, "text", None) if isinstance(event, LLMCompletionEndEvent) else getattr(response, "message", None)
            handle.set_default("response", text if isinstance(text, str) or text is None else getattr(text, "content", None))
            prompt, completion = _tokens(response)
            handle.set_default("prompt_tokens", prompt)
            handle.set_default("completion_tokens", completion)


class _SpanHandler(BaseSpanHandler[BaseSpan]):
    """LlamaIndex's span handler interface, passing span starts and ends to the tracer."""

    _tracer: Any = PrivateAttr(default=None)

    def new_span(
        self, id_: str, bound_args: Any, instance: Any = None, parent_span_id: str | None = None, tags: Any = None, **kwargs: Any
    ) -> BaseSpan:
        """A span started: a ragmeter span opens."""
        self._tracer.opened(id_, parent_span_id, instance)
        return BaseSpan(id_=id_, parent_id=parent_span_id)

    def prepare_to_exit_span(self, id_: str, bound_args: Any, instance: Any = None, result: Any = None, **kwargs: Any) -> BaseSpan | None:
        """A span returned: its ragmeter span ends."""
        self._tracer.closed(id_, None)
        return self.open_spans.get(id_)

    def prepare_to_drop_span(self, id_: str, bound_args: Any, instance: Any = None, err: Any = None, **kwargs: Any) -> BaseSpan | None:
        """A span raised ``err``: its ragmeter span ends with the error."""
        self._tracer.closed(id_, err if isinstance(err, BaseException) else None)
        return self.open_spans.get(id_)


class _EventHandler(BaseEventHandler):
    """LlamaIndex's event handler interface, passing events to the tracer."""

    _tracer: Any = PrivateAttr(default=None)

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        """An event happened: the tracer reads it."""
        self._tracer.event(event)


def instrument(dispatcher: Dispatcher | None = None) -> LlamaIndexTracer:
    """Trace LlamaIndex from now on: a :class:`LlamaIndexTracer` attached to ``dispatcher``
    (default: LlamaIndex's root dispatcher, which sees every instrumented call)."""
    return LlamaIndexTracer().attach(dispatcher)


def _tokens(response: Any) -> tuple[int | None, int | None]:
    """Prompt and completion tokens a model reported (OpenAI-style usage in its raw response or extra fields)."""
    raw = getattr(response, "raw", None)
    usage = (raw.get("usage") if isinstance(raw, dict) else getattr(raw, "usage", None)) or {}
    if not isinstance(usage, dict):
        usage = {k: getattr(usage, k, None) for k in ("prompt_tokens", "completion_tokens")}
    extra = getattr(response, "additional_kwargs", None) or {}
    prompt = usage.get("prompt_tokens", extra.get("prompt_tokens"))
    completion = usage.get("completion_tokens", extra.get("completion_tokens"))
    return (prompt if isinstance(prompt, int) else None), (completion if isinstance(completion, int) else None)
