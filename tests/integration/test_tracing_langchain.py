"""A real LangChain pipeline (a retriever, a prompt, LangChain's own fake chat model and an
output parser) traced by ragmeter's callback handler: the spans nest as LangChain ran them and
join into one sample with the retrieved documents and the answer."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

import ragmeter
from ragmeter import observe
from ragmeter.observe import MemorySink, spans_to_samples
from ragmeter.observe.langchain_callbacks import RagmeterCallbackHandler

pytestmark = pytest.mark.integration

DOCS = [
    Document(page_content="Small runners have 2 vCPU.", id="runners-1", metadata={"score": 0.91}),
    Document(page_content="Medium runners have 4 vCPU.", id="runners-2", metadata={"score": 0.55}),
]


class FixedRetriever(BaseRetriever):
    """Returns the same two documents for any query."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return DOCS


def rag_chain(model):
    prompt = ChatPromptTemplate.from_messages([("system", "Answer from: {context}"), ("human", "{question}")])
    join = RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    return {"context": FixedRetriever() | join, "question": RunnablePassthrough()} | prompt | model | StrOutputParser()


@pytest.fixture
def sink():
    kept = MemorySink()
    observe.configure(sinks=[kept], otel=False)
    yield kept
    observe.configure(otel=False)


def test_a_langchain_rag_chain_becomes_nested_spans_and_one_sample(sink):
    chain = rag_chain(FakeListChatModel(responses=["Small runners have 2 vCPU."]))
    answer = chain.invoke("How many vCPU does a small runner have?", config={"callbacks": [RagmeterCallbackHandler()]})
    assert answer == "Small runners have 2 vCPU."
    roots = [r for r in sink if r.parent_id is None]
    assert len(roots) == 1 and len({r.trace_id for r in sink}) == 1
    root = roots[0]
    assert root.question == "How many vCPU does a small runner have?" and root.response == answer
    (retriever,) = [r for r in sink if r.kind == "RETRIEVER"]
    assert retriever.name == "FixedRetriever" and retriever.question == root.question
    assert [(c.text, c.id, c.score) for c in retriever.contexts] == [
        ("Small runners have 2 vCPU.", "runners-1", 0.91),
        ("Medium runners have 4 vCPU.", "runners-2", 0.55),
    ]
    (llm,) = [r for r in sink if r.kind == "LLM"]
    assert llm.response == answer and llm.error is None
    ids = {r.span_id for r in sink}
    assert all(r.parent_id in ids for r in sink if r is not root)

    (sample,) = spans_to_samples(sink).samples
    assert sample.user_input == root.question and sample.response == answer
    assert sample.retrieved_contexts == [d.page_content for d in DOCS] and sample.retrieved_context_ids == ["runners-1", "runners-2"]


def test_a_chain_inside_a_traced_function_nests_under_it_and_async_works(sink):
    chain = rag_chain(FakeListLLM(responses=["Four."]))
    handler = RagmeterCallbackHandler()

    @ragmeter.trace(name="app.answer")
    async def answer(question: str) -> str:
        return await chain.ainvoke(question, config={"callbacks": [handler]})

    assert asyncio.run(answer("And a medium one?")) == "Four."
    (app_span,) = [r for r in sink if r.name == "app.answer"]
    assert app_span.parent_id is None and app_span.response == "Four."
    assert len([r for r in sink if r.parent_id == app_span.span_id]) == 1  # the chain
    assert {r.trace_id for r in sink} == {app_span.trace_id}
    (sample,) = spans_to_samples(sink).samples
    assert sample.retrieved_context_ids == ["runners-1", "runners-2"] and sample.response == "Four."


def test_a_failing_step_is_recorded_and_the_error_reaches_the_caller(sink):
    def broken(_):
        raise RuntimeError("index offline")

    chain = RunnableLambda(broken)
    with pytest.raises(RuntimeError, match="index offline"):
        chain.invoke({"question": "q"}, config={"callbacks": [RagmeterCallbackHandler()]})
    (span,) = sink
    assert span.error == "RuntimeError: index offline" and span.question == "q"
