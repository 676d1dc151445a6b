"""Test sets from a knowledge base (``ragmeter generate``).

documents (ingest) -> chunking -> graph (embeddings and key phrases) -> plan (mix of types
and styles) -> synthesize (the LLM judge writes) -> filters (the judge and embeddings check)
-> runner (journal, concurrency, outputs, summary).
"""

from ragmeter.generate.runner import GenerateOptions, Generation, agenerate, write_outputs

__all__ = ["GenerateOptions", "Generation", "agenerate", "write_outputs"]
