"""OpenTelemetry spans for ragmeter's traces, with the GenAI and OpenInference attribute names,
so the same traces can go to any OTel collector (Phoenix, Jaeger, Langfuse, ...).

Used only when ``opentelemetry-api`` is installed (``pip install 'ragmeter[otel]'``); spans go
to the application's global tracer provider, so they are exported wherever it is configured
and cost next to nothing when it is not (the API's default provider records nothing).
"""

from __future__ import annotations

from typing import Any

from ragmeter.observe.record import SpanRecord

#: The tracer's instrumentation name.
TRACER_NAME = "ragmeter"


def openinference_attributes(record: SpanRecord) -> dict[str, Any]:
    """The record as OTel attributes: OpenInference names (``input.value``,
    ``retrieval.documents.N.document.content``, ``llm.token_count.prompt``, ...) and the GenAI
    semantic conventions (``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, ...).

    Args:
        record: A finished span. Absent values give no attribute.
    """
    attributes: dict[str, Any] = {"openinference.span.kind": record.kind}
    if record.question is not None:
        attributes["input.value"] = record.question
    if record.response is not None:
        attributes["output.value"] = record.response
    for index, context in enumerate(record.contexts):
        prefix = f"retrieval.documents.{index}.document"
        attributes[f"{prefix}.content"] = context.text
        if context.id is not None:
            attributes[f"{prefix}.id"] = context.id
        if context.score is not None:
            attributes[f"{prefix}.score"] = float(context.score)
    if record.model is not None:
        attributes["llm.model_name"] = record.model
        attributes["gen_ai.request.model"] = record.model
    if record.prompt_tokens is not None:
        attributes["llm.token_count.prompt"] = record.prompt_tokens
        attributes["gen_ai.usage.input_tokens"] = record.prompt_tokens
    if record.completion_tokens is not None:
        attributes["llm.token_count.completion"] = record.completion_tokens
        attributes["gen_ai.usage.output_tokens"] = record.completion_tokens
    if record.prompt_tokens is not None and record.completion_tokens is not None:
        attributes["llm.token_count.total"] = record.prompt_tokens + record.completion_tokens
    if record.cost_usd is not None:
        attributes["llm.cost.total"] = float(record.cost_usd)
    if record.kind == "LLM":
        attributes["gen_ai.operation.name"] = "chat"
    for key, value in record.attributes.items():
        if isinstance(value, (str, bool, int, float)):
            attributes[f"metadata.{key}"] = value
    return attributes


class OtelBridge:
    """Starts an OTel span when a ragmeter span starts and ends it, with the record's
    attributes, when it ends. Built only when ``opentelemetry`` imports."""

    def __init__(self) -> None:
        from opentelemetry import context, trace

        self._context = context
        self._trace = trace

    def start(self, name: str, parent: Any = None, attach: bool = True) -> tuple[Any, Any, str | None, str | None]:
        """Start a span named ``name``.

        Args:
            name: The span's name.
            parent: The parent OTel span (default: the current OTel context's).
            attach: Make it the current OTel span until :meth:`end`.

        Returns:
            The span, the context token to detach (``None`` when not attached), and its trace
            and span ids in hex (``None`` when the span records nothing).
        """
        within = self._trace.set_span_in_context(parent) if parent is not None else None
        span = self._trace.get_tracer(TRACER_NAME).start_span(name, context=within)
        token = self._context.attach(self._trace.set_span_in_context(span)) if attach else None
        ids = span.get_span_context()
        if not ids.is_valid:
            return span, token, None, None
        return span, token, format(ids.trace_id, "032x"), format(ids.span_id, "016x")

    def end(self, span: Any, token: Any, record: SpanRecord) -> None:
        """Set the record's attributes and status on ``span``, end it and restore the context."""
        try:
            if span.is_recording():
                span.set_attributes(openinference_attributes(record))
                if record.error is not None:
                    span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, record.error))
            span.end()
        finally:
            if token is not None:
                self._context.detach(token)


def load_bridge() -> OtelBridge | None:
    """The bridge, or ``None`` when ``opentelemetry-api`` is not installed."""
    try:
        return OtelBridge()
    except ImportError:
        return None
