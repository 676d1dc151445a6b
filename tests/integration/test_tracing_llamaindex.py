"""A real LlamaIndex pipeline (an in-memory vector index, a retriever, a response synthesizer and
LlamaIndex's own MockLLM and MockEmbedding, so nothing leaves the machine) traced by ragmeter's
instrumentation handlers: the spans nest as LlamaIndex ran them and join into one sample with
the retrieved nodes and the answer."""

from __future__ import annotations

import asyncio

import pytest
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import BaseRetriever

import ragmeter
from ragmeter import observe
from ragmeter.observe import MemorySink, spans_to_samples
from ragmeter.observe.llamaindex_instrumentation import instrument

pytestmark = pytest.mark.integration

TEXTS = {"runners-1": "Small runners have 2 vCPU.", "runners-2": "Medium runners have 4 vCPU."}


@pytest.fixture
def index():
    saved = Settings._llm, Settings._embed_model
    Settings.llm = MockLLM(max_tokens=6)
    Settings.embed_model = MockEmbedding(embed_dim=8)
    yield VectorStoreIndex.from_documents([Document(text=t, id_=i) for i, t in TEXTS.items()])
    Settings._llm, Settings._embed_model = saved


@pytest.fixture
def sink():
    kept = MemorySink()
    observe.configure(sinks=[kept], otel=False)
    tracer = instrument()
    yield kept
    tracer.detach()
    observe.configure(otel=False)


def request_spans(sink, trace_id=None):
    """The spans of the one traced request (index building leaves traces without a question)."""
    (trace,) = {r.trace_id for r in sink if r.question} if trace_id is None else {trace_id}
    return [r for r in sink if r.trace_id == trace]


def test_a_llamaindex_query_engine_becomes_nested_spans_and_one_sample(index, sink):
    answer = index.as_query_engine(similarity_top_k=2).query("How many vCPU does a small runner have?")
    assert answer.response == "text text text text text text"  # MockLLM's reply of max_tokens words
    spans = request_spans(sink)
    (root,) = [r for r in spans if r.parent_id is None]
    assert root.name == "RetrieverQueryEngine.query" and root.kind == "CHAIN"
    assert root.question == "How many vCPU does a small runner have?" and root.response == answer.response
    (retriever,) = [r for r in spans if r.kind == "RETRIEVER" and r.contexts]  # retrieve, not its inner _retrieve
    assert retriever.name == "VectorIndexRetriever.retrieve" and retriever.question == root.question
    assert sorted((c.id, c.text) for c in retriever.contexts) == sorted(TEXTS.items())
    assert all(c.score == pytest.approx(1.0) for c in retriever.contexts)  # MockEmbedding: equal vectors
    llm = [r for r in spans if r.kind == "LLM" and r.name == "MockLLM.complete"]
    assert len(llm) == 1 and llm[0].response == answer.response and llm[0].model == "unknown" and llm[0].error is None
    assert any(r.kind == "EMBEDDING" for r in spans)  # the query's embedding
    ids = {r.span_id for r in spans}
    assert all(r.parent_id in ids for r in spans if r is not root)
    assert {r.trace_id for r in sink if r.parent_id is not None and r.parent_id in ids} == {root.trace_id}

    (sample,) = spans_to_samples(sink).samples
    assert sample.user_input == root.question and sample.response == answer.response
    assert sorted(zip(sample.retrieved_context_ids, sample.retrieved_contexts, strict=True)) == sorted(TEXTS.items())


def test_a_query_inside_a_traced_function_nests_under_it_and_async_works(index, sink):
    engine = index.as_query_engine(similarity_top_k=1)

    @ragmeter.trace(name="app.answer")
    async def answer(question: str) -> str:
        return (await engine.aquery(question)).response

    assert asyncio.run(answer("And a medium one?")) == "text text text text text text"
    (app_span,) = [r for r in sink if r.name == "app.answer"]
    assert app_span.parent_id is None and app_span.response == "text text text text text text"
    (engine_span,) = [r for r in sink if r.parent_id == app_span.span_id]
    assert engine_span.name == "RetrieverQueryEngine.aquery" and engine_span.question == "And a medium one?"
    spans = request_spans(sink, app_span.trace_id)
    assert len(spans) > 3 and any(r.kind == "RETRIEVER" and len(r.contexts) == 1 for r in spans)
    (sample,) = spans_to_samples(sink).samples
    assert sample.id == app_span.trace_id and sample.retrieved_context_ids[0] in TEXTS


class BrokenRetriever(BaseRetriever):
    """A retriever whose index is offline."""

    def _retrieve(self, query_bundle):
        raise RuntimeError("index offline")


def test_a_failing_retriever_is_recorded_and_the_error_reaches_the_caller(sink):
    with pytest.raises(RuntimeError, match="index offline"):
        BrokenRetriever().retrieve("q")
    outer, inner = sorted(sink, key=lambda r: r.parent_id is not None)
    assert outer.name == "BrokenRetriever.retrieve" and inner.name == "BrokenRetriever._retrieve" and inner.parent_id == outer.span_id
    assert outer.kind == inner.kind == "RETRIEVER" and outer.question == "q"
    assert outer.error == inner.error == "RuntimeError: index offline"


def test_detach_stops_the_recording(index, sink):
    tracer = instrument()
    tracer.detach()
    before = len(sink)
    index.as_retriever().retrieve("q")
    assert len(sink) > before  # the fixture's tracer is still attached
    assert len([r for r in sink[before:] if r.name == "VectorIndexRetriever.retrieve"]) == 1  # one tracer, not two
