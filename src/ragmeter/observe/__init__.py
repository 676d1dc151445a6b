"""Watching a live RAG application: tracing (``@ragmeter.trace``, ``ragmeter.span``), their
OpenTelemetry spans, and turning traces and agent transcripts into samples to score."""

from ragmeter.observe.export import Export, TraceFileError, read_spans, spans_to_samples
from ragmeter.observe.record import SPAN_KINDS, RetrievedContext, SpanRecord
from ragmeter.observe.sinks import JsonlSink, MemorySink
from ragmeter.observe.tracing import Span, configure, current_span, dropped_spans, span, trace
from ragmeter.observe.transcripts import TranscriptError, read_transcripts, transcript_samples

__all__ = [
    "SPAN_KINDS",
    "Export",
    "JsonlSink",
    "MemorySink",
    "RetrievedContext",
    "Span",
    "SpanRecord",
    "TraceFileError",
    "TranscriptError",
    "configure",
    "current_span",
    "dropped_spans",
    "read_spans",
    "read_transcripts",
    "span",
    "spans_to_samples",
    "trace",
    "transcript_samples",
]
