"""``@ragmeter.trace`` and ``ragmeter.span(...)``: record what one request of a live RAG
application asked, retrieved and answered, what it cost and how long it took.

    ragmeter.observe.configure(path="traces.jsonl")

    @ragmeter.trace
    def answer(question: str) -> str:
        with ragmeter.span("retrieve", kind="RETRIEVER") as step:
            docs = search(question)
            step.retrieved([d.text for d in docs], ids=[d.id for d in docs], scores=[d.score for d in docs])
        reply = llm(question, docs)
        ragmeter.observe.current_span().set(model="gpt-4o-mini", prompt_tokens=812, completion_tokens=64)
        return reply

The decorated function returns exactly what it returned before, and raises what it raised.
Spans go to the configured sinks (:func:`configure`) and, when ``opentelemetry`` is installed,
to OpenTelemetry as well (:mod:`ragmeter.observe.otel`).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar, overload

from ragmeter.data.issues import describe_briefly
from ragmeter.observe.otel import OtelBridge, load_bridge
from ragmeter.observe.record import SETTABLE, SPAN_KINDS, RetrievedContext, SpanRecord, settable_value
from ragmeter.observe.sinks import JsonlSink, StoreSink
from ragmeter.observe.streaming import trace_async_generator, trace_generator

log = logging.getLogger("ragmeter.observe")

F = TypeVar("F", bound=Callable[..., Any])
Sink = Callable[[SpanRecord], None]

#: Names of the argument taken as the question, in order of preference.
QUESTION_ARGUMENTS = ("question", "query", "user_input", "q", "prompt", "input")
#: Keys of a returned dict read as the response and as the retrieved contexts.
RESPONSE_KEYS = ("response", "answer", "output")
CONTEXT_KEYS = ("retrieved_contexts", "contexts", "context", "documents")

_current: contextvars.ContextVar[Span | None] = contextvars.ContextVar("ragmeter_span", default=None)


class _Settings:
    """Where spans go. ``otel`` is the OTel bridge, ``None`` when OTel is off or missing."""

    def __init__(self) -> None:
        self.sinks: list[Sink] = []
        self.owned: list[JsonlSink | StoreSink] = []
        self.failed: set[int] = set()
        self.dropped = 0
        self.warned: set[str] = set()
        self.otel: OtelBridge | None = None
        self.otel_loaded = False


_settings = _Settings()


def configure(
    path: str | Path | None = None,
    *,
    store: str | None = None,
    sinks: Sequence[Sink] = (),
    otel: bool = True,
    embed_questions: bool = False,
) -> None:
    """Choose where finished spans go (replacing earlier choices; files and stores opened by an
    earlier call are flushed and closed).

    Args:
        path: A JSON-lines file to append spans to. Default: the ``RAGMETER_TRACE_FILE``
            environment variable, else no file.
        store: A run store (SQLite file path or database URL, as ``--store``) that a background
            thread writes spans to in batches (:class:`~ragmeter.observe.sinks.StoreSink`).
        sinks: Further callables, each given every finished :class:`SpanRecord` (e.g. a
            :class:`~ragmeter.observe.sinks.MemorySink`).
        otel: Also emit OpenTelemetry spans when ``opentelemetry`` is installed.
        embed_questions: With ``store``, the sink's thread also stores each question's vector
            (loads the packaged encoder into this process; by default ``ragmeter monitor`` or
            ``ragmeter traces embed`` store them, outside the application).
    """
    for sink in _settings.owned:
        sink.close()
    owned: list[JsonlSink | StoreSink] = []
    path = path if path is not None else os.environ.get("RAGMETER_TRACE_FILE") or None
    if path is not None:
        owned.append(JsonlSink(path))
    if store is not None:
        owned.append(StoreSink(store, embed_questions=embed_questions))
    _settings.owned = owned
    _settings.sinks = [*owned, *sinks]
    _settings.failed, _settings.warned = set(), set()
    _settings.otel = load_bridge() if otel else None
    _settings.otel_loaded = True


def _configure_by_default() -> None:
    """:func:`configure` with its defaults, for a span started before any call of it. A
    ``RAGMETER_TRACE_FILE`` that cannot be opened is logged once and no file is written: the
    application's request never fails for it."""
    try:
        configure()
    except OSError as exc:
        log.warning("ragmeter tracing: cannot open RAGMETER_TRACE_FILE (%s); no trace file is written", exc)
        _settings.otel = load_bridge()
        _settings.otel_loaded = True


def dropped_spans() -> int:
    """How many spans a failing sink could not take since the process started."""
    return _settings.dropped


def _emit(record: SpanRecord) -> None:
    """Give ``record`` to every sink; a failing sink is logged once and never raises."""
    for sink in _settings.sinks:
        try:
            sink(record)
        except Exception as exc:
            _settings.dropped += 1
            if id(sink) not in _settings.failed:
                _settings.failed.add(id(sink))
                log.warning("ragmeter tracing: a sink failed (%s: %s); its spans are dropped", type(exc).__name__, exc)


class Span:
    """The handle of a span under way: set what the request asked, retrieved and answered.

    Values set here win over those the decorator reads from arguments and return values.
    """

    def __init__(self, record: SpanRecord, otel: tuple[Any, Any, str | None, str | None] | None = None):
        self.record = record
        #: The OTel span, its context token and ids (see :meth:`OtelBridge.start`), when OTel is on.
        self.otel = otel
        self._explicit: set[str] = set()
        self._began = time.perf_counter()

    def end(self, error: BaseException | None = None) -> None:
        """End the span: its latency is taken now, ``error`` (if any) recorded, and it goes to
        the sinks and OpenTelemetry. Called by :func:`span` and :func:`trace` themselves."""
        self.record.latency_ms = (time.perf_counter() - self._began) * 1000.0
        if error is not None:
            self.record.error = f"{type(error).__name__}: {error}"
        if self.otel is not None and _settings.otel is not None:
            _settings.otel.end(self.otel[0], self.otel[1], self.record)
        _emit(self.record)

    def set(self, **values: Any) -> Span:
        """Set fields of the record: ``question``, ``response``, ``model`` (texts),
        ``prompt_tokens``, ``completion_tokens`` (whole numbers), ``cost_usd`` (a number),
        ``kind``, ``contexts`` (as :meth:`retrieved` takes texts); other names become attributes.
        A value the field cannot hold (a number as ``model``, ``"812"`` as a token count) is not
        recorded and a warning naming the field is logged (once per field): the application's
        request never fails for what it traces. Returns the span.

        Raises:
            ValueError: ``kind`` is not one of :data:`~ragmeter.observe.record.SPAN_KINDS`.
        """
        for key, value in values.items():
            if key == "kind" and value not in SPAN_KINDS:
                raise ValueError(f"kind must be one of {', '.join(SPAN_KINDS)}, got {value!r}")
            if key == "contexts":
                self.retrieved(value)
            elif key in SETTABLE or key == "kind":
                try:
                    setattr(self.record, key, value if key == "kind" else settable_value(key, value))
                    self._explicit.add(key)
                except ValueError as exc:
                    _warn_once(key, f"Span.set: {exc}; it is not recorded")
            else:
                self.record.attributes[key] = value
        return self

    def retrieved(self, texts: Sequence[str], ids: Sequence[Any] | None = None, scores: Sequence[float] | None = None) -> Span:
        """Record the retrieved contexts, best first.

        Args:
            texts: The texts given to the model. One text alone is one context; an item that is
                no text (a document object, a number) is left out with its id and score, and a
                warning naming its position is logged (once): it would be scored as its ``repr``.
            ids: Their document or chunk identifiers (same order), when known.
            scores: The retriever's scores (same order), when known; one that is not a
                finite number (``None``, NaN, a text) is recorded as unknown.

        Raises:
            ValueError: ``ids`` or ``scores`` do not have one item per text.
        """
        try:
            texts = [texts] if isinstance(texts, str) else list(texts)
        except TypeError:
            _warn_once("contexts", f"Span.retrieved: the texts must be a list of texts, got {describe_briefly(texts)}; not recorded")
            return self
        for name, values in (("ids", ids), ("scores", scores)):
            if values is not None and len(values) != len(texts):
                raise ValueError(f"{len(texts)} texts but {len(values)} {name}")
        for i, text in ((i, t) for i, t in enumerate(texts) if not isinstance(t, str)):
            _warn_once("contexts", f"Span.retrieved: text {i} is no text (str) but {describe_briefly(text)}; it is not recorded")
        self.record.contexts = [
            RetrievedContext(
                text=text,
                id=None if ids is None else str(ids[i]),
                score=None if scores is None else _score(scores[i]),
            )
            for i, text in enumerate(texts)
            if isinstance(text, str)
        ]
        self._explicit.add("contexts")
        return self

    def set_default(self, key: str, value: Any) -> None:
        """Set ``key`` (a field of the record) to ``value`` unless the application set it or ``value`` is ``None``."""
        if key not in self._explicit and value is not None:
            setattr(self.record, key, value)


def _warn_once(key: str, message: str) -> None:
    """Log ``message`` (a value of the field ``key`` that tracing cannot record) the first time
    the field has one in this process, not once per request."""
    if key not in _settings.warned:
        _settings.warned.add(key)
        log.warning("ragmeter tracing: %s (said once per field)", message)


def _score(value: Any) -> float | None:
    """A retriever's score as a float, or ``None`` when it is not a finite number: the
    application's request never fails for what it traces."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def current_span() -> Span | None:
    """The innermost span under way in this thread or task, or ``None``."""
    return _current.get()


def open_span(name: str, *, kind: str = "CHAIN", question: str | None = None, parent: Span | None = None, attach: bool = False) -> Span:
    """Start a span that ends with :meth:`Span.end`, for code that cannot use a ``with`` block
    (framework callbacks, :mod:`ragmeter.observe.langchain`).

    Args:
        name: What the span does.
        kind: One of :data:`~ragmeter.observe.record.SPAN_KINDS`.
        question: The user's question, when known now.
        parent: The enclosing span (default: none; a new trace starts).
        attach: Make its OTel span the current OTel context until it ends (only when it ends in
            the same thread or task that started it).
    """
    if kind not in SPAN_KINDS:
        raise ValueError(f"kind must be one of {', '.join(SPAN_KINDS)}, got {kind!r}")
    if not _settings.otel_loaded:
        _configure_by_default()
    otel = _settings.otel
    started = otel.start(name, parent=parent.otel[0] if parent and parent.otel else None, attach=attach) if otel is not None else None
    record = SpanRecord(
        trace_id=(started and started[2]) or (parent.record.trace_id if parent else os.urandom(16).hex()),
        span_id=(started and started[3]) or os.urandom(8).hex(),
        parent_id=parent.record.span_id if parent else None,
        name=name,
        kind=kind,
        started_at=datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        question=question,
    )
    return Span(record, otel=started)


@contextmanager
def span(name: str = "span", *, kind: str = "CHAIN", question: str | None = None) -> Iterator[Span]:
    """Trace a block: a request, or a step of one (retrieval, generation).

    Args:
        name: What the block does.
        kind: One of :data:`~ragmeter.observe.record.SPAN_KINDS` (``RETRIEVER`` for retrieval,
            ``LLM`` for generation); default ``CHAIN``.
        question: The user's question, when known now.

    Yields:
        The :class:`Span`, to record contexts, response, model, tokens and cost. An exception
        in the block is recorded and raised unchanged.
    """
    handle = open_span(name, kind=kind, question=question, parent=_current.get(), attach=True)
    token = _current.set(handle)
    error: BaseException | None = None
    try:
        yield handle
    except BaseException as exc:
        error = exc
        raise
    finally:
        _current.reset(token)
        handle.end(error)


@overload
def trace(function: F) -> F: ...


@overload
def trace(function: None = None, *, name: str | None = None, kind: str = "CHAIN", question: str | None = None) -> Callable[[F], F]: ...


def trace(function: F | None = None, *, name: str | None = None, kind: str = "CHAIN", question: str | None = None) -> Any:
    """Trace each call of a function (plain, ``async``, or a generator or async generator that
    streams its answer) as one span.

    The question is read from the argument named ``question`` (else ``query``, ``user_input``,
    ``q``, ``prompt``, ``input``, else the first text argument); the response from the return
    value when it is text, or from a returned dict's ``response``/``answer``/``output`` (and
    contexts from its ``retrieved_contexts``/``contexts``/``context``/``documents``). The
    return value itself is passed through untouched. A generator's span lasts from its first
    chunk until it is exhausted, closed or raises; its response is the streamed text chunks joined
    (:mod:`ragmeter.observe.streaming`), and every chunk is passed through untouched.

    Args:
        function: The function (when used as ``@trace`` without parentheses).
        name: The span's name (default: the function's qualified name).
        kind: The span's kind (see :func:`span`).
        question: Name of the argument that holds the question.
    """

    def decorate(func: F) -> F:
        label: str = name or str(getattr(func, "__qualname__", "trace"))
        find_question = _question_finder(func, question)
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):

            def start(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Span:
                return open_span(label, kind=kind, question=find_question(args, kwargs), parent=_current.get())

            wrap = trace_async_generator if inspect.isasyncgenfunction(func) else trace_generator
            return functools.wraps(func)(wrap(func, start, _current))  # type: ignore[return-value]
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def traced_async(*args: Any, **kwargs: Any) -> Any:
                with span(label, kind=kind, question=find_question(args, kwargs)) as handle:
                    value = await func(*args, **kwargs)
                    _read_return(handle, value)
                    return value

            return traced_async  # type: ignore[return-value]

        @functools.wraps(func)
        def traced(*args: Any, **kwargs: Any) -> Any:
            with span(label, kind=kind, question=find_question(args, kwargs)) as handle:
                value = func(*args, **kwargs)
                _read_return(handle, value)
                return value

        return traced  # type: ignore[return-value]

    return decorate(function) if function is not None else decorate


def _question_finder(func: Callable[..., Any], argument: str | None) -> Callable[[tuple[Any, ...], dict[str, Any]], str | None]:
    """A function of a call's arguments that returns the question (worked out once per function)."""
    try:
        names = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        names = []
    if argument is not None and argument not in names:
        raise ValueError(f"{getattr(func, '__qualname__', func)} has no argument named {argument!r}")
    chosen = argument or next((n for n in QUESTION_ARGUMENTS if n in names), None)
    position = names.index(chosen) if chosen is not None else None

    def find(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        if chosen is not None:
            value = kwargs.get(chosen, args[position] if position is not None and position < len(args) else None)
            return value if isinstance(value, str) else None
        return next((a for a in args if isinstance(a, str)), None)

    return find


def _read_return(handle: Span, value: Any) -> None:
    """Fill the response (and contexts) from a traced function's return value."""
    if isinstance(value, str):
        handle.set_default("response", value)
    elif isinstance(value, dict):
        response = next((value[k] for k in RESPONSE_KEYS if isinstance(value.get(k), str)), None)
        handle.set_default("response", response)
        contexts = next((value[k] for k in CONTEXT_KEYS if isinstance(value.get(k), list)), None)
        if contexts and all(isinstance(c, str) for c in contexts) and "contexts" not in handle._explicit:
            handle.record.contexts = [RetrievedContext(text=c) for c in contexts]
