"""Spans of ``@ragmeter.trace`` and ``ragmeter.span`` reach a real OpenTelemetry SDK (its
in-memory exporter), nested under the application's own span, with the OpenInference and
GenAI attribute names; the JSON-lines record carries the same trace and span ids."""

from __future__ import annotations

import asyncio

import pytest
from opentelemetry import trace as otel_trace  # the test extras install ragmeter[otel]
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragmeter
from ragmeter import observe

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def exporter():
    exporter = InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel_trace.set_tracer_provider(provider)
    return exporter


def test_spans_reach_the_otel_exporter_with_openinference_attributes(exporter):
    exporter.clear()
    kept = observe.MemorySink()
    observe.configure(sinks=[kept])

    @ragmeter.trace(name="rag.answer")
    async def answer(question: str) -> str:
        with ragmeter.span("retrieve", kind="RETRIEVER") as step:
            step.retrieved(["Runners have 2 vCPU."], ids=["doc-1"], scores=[0.82])
        with ragmeter.span("generate", kind="LLM") as step:
            step.set(model="qwen2.5", prompt_tokens=40, completion_tokens=6, cost_usd=0.0001)
        return "2 vCPU."

    tracer = otel_trace.get_tracer("the-app")
    try:
        with tracer.start_as_current_span("http.request") as outer:
            assert asyncio.run(answer("How many vCPU?")) == "2 vCPU."
    finally:
        observe.configure(otel=False)

    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"http.request", "rag.answer", "retrieve", "generate"}
    root, retrieve, generate = spans["rag.answer"], spans["retrieve"], spans["generate"]
    assert root.parent.span_id == outer.get_span_context().span_id
    assert retrieve.parent.span_id == root.context.span_id == generate.parent.span_id
    assert len({s.context.trace_id for s in spans.values()}) == 1
    assert root.attributes["openinference.span.kind"] == "CHAIN"
    assert root.attributes["input.value"] == "How many vCPU?" and root.attributes["output.value"] == "2 vCPU."
    assert retrieve.attributes["retrieval.documents.0.document.content"] == "Runners have 2 vCPU."
    assert retrieve.attributes["retrieval.documents.0.document.id"] == "doc-1"
    assert retrieve.attributes["retrieval.documents.0.document.score"] == 0.82
    assert generate.attributes["gen_ai.request.model"] == "qwen2.5" and generate.attributes["llm.model_name"] == "qwen2.5"
    assert generate.attributes["gen_ai.usage.input_tokens"] == 40 and generate.attributes["llm.token_count.total"] == 46

    by_name = {r.name: r for r in kept}
    assert by_name["rag.answer"].trace_id == format(root.context.trace_id, "032x")
    assert by_name["retrieve"].span_id == format(retrieve.context.span_id, "016x")
    assert by_name["retrieve"].parent_id == by_name["rag.answer"].span_id


def test_a_failed_request_gives_an_error_status(exporter):
    exporter.clear()
    observe.configure()
    try:
        with pytest.raises(ValueError), ragmeter.span("rag.answer", question="q"):
            raise ValueError("index offline")
    finally:
        observe.configure(otel=False)
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == otel_trace.StatusCode.ERROR and span.status.description == "ValueError: index offline"


def test_otel_can_be_switched_off(exporter):
    exporter.clear()
    kept = observe.MemorySink()
    observe.configure(sinks=[kept], otel=False)
    try:
        ragmeter.trace(lambda question: "a")("q")
    finally:
        observe.configure(otel=False)
    assert exporter.get_finished_spans() == () and len(kept) == 1


def test_a_traced_stream_is_one_otel_span_with_the_joined_answer(exporter):
    exporter.clear()
    observe.configure(sinks=[observe.MemorySink()])

    @ragmeter.trace(name="rag.stream")
    def stream(question: str):
        with ragmeter.span("retrieve", kind="RETRIEVER") as step:
            step.retrieved(["Runners have 2 vCPU."], ids=["doc-1"])
        yield "2 "
        yield "vCPU."

    tracer = otel_trace.get_tracer("the-app")
    try:
        with tracer.start_as_current_span("http.request") as outer:
            assert list(stream("How many vCPU?")) == ["2 ", "vCPU."]
    finally:
        observe.configure(otel=False)

    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"http.request", "rag.stream", "retrieve"}
    root = spans["rag.stream"]
    assert root.parent.span_id == outer.get_span_context().span_id and spans["retrieve"].parent.span_id == root.context.span_id
    assert root.attributes["input.value"] == "How many vCPU?" and root.attributes["output.value"] == "2 vCPU."
