"""The store's tables (SQLAlchemy Core). The migrations in ``migrations/versions`` create
them; a change here needs a new migration.

- ``runs``: one row per run: when, where from, the git commit, tags, the judge, the full run
  settings, the metric descriptions and their aggregates.
- ``samples``: each sample of a run, in dataset order (``position``), as JSON.
- ``scores``: one row per (sample, metric): value, explanation, unscored reason, details,
  seconds, and the judge's usage and cost.
- ``spans``: traced requests and their steps (:class:`ragmeter.observe.SpanRecord`).
- ``monitor_seen``: each trace the online monitor decided about (scored, not sampled,
  unscorable), written in the same transaction as its scores: a killed monitor never scores a
  trace twice.
- ``trace_scores``: the monitor's score of a trace by a metric, with its reason, cost and the
  metric's settings (``None`` for scores stored before schema 0004).
- ``question_vectors``: the embedding of a request's question by an encoder (``model``), as
  float32 bytes, so query drift reads vectors instead of loading the encoder
  (:mod:`ragmeter.store.vectors`).
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Column, Float, ForeignKey, Index, Integer, LargeBinary, MetaData, String, Table, Text

metadata = MetaData()

#: Most characters of a trace or span id (schema 0005): OpenTelemetry's are 32 and 16 hex digits,
#: other tracers write UUIDs (36) or longer.
ID_LENGTH = 64

runs = Table(
    "runs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("started_at", String(40), nullable=True, index=True),
    Column("stored_at", String(40), nullable=False),
    Column("source", Text, nullable=True),
    Column("fingerprint", String(64), nullable=False, unique=True),
    Column("n_samples", Integer, nullable=False),
    Column("commit", String(64), nullable=True),
    Column("tags", JSON, nullable=False),
    Column("judge", JSON, nullable=True),
    Column("settings", JSON, nullable=False),
    Column("metrics", JSON, nullable=False),
    Column("aggregates", JSON, nullable=False),
)

samples = Table(
    "samples",
    metadata,
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("key", Text, nullable=False),
    Column("fingerprint", String(64), nullable=True),
    Column("source", Text, nullable=False),
    Column("location", Text, nullable=False),
    Column("configs", JSON, nullable=False),
    Column("sample", JSON, nullable=False),
)

scores = Table(
    "scores",
    metadata,
    Column("run_id", String(32), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("metric_id", String(200), primary_key=True),
    Column("value", Float, nullable=True),
    Column("explanation", Text, nullable=False),
    Column("reason", Text, nullable=True),
    Column("failed", Boolean, nullable=False),
    Column("details", JSON, nullable=False),
    Column("seconds", Float, nullable=True),
    Column("prompt_tokens", Integer, nullable=True),
    Column("completion_tokens", Integer, nullable=True),
    Column("cost_usd", Float, nullable=True),
    Column("usage", JSON, nullable=True),
    Index("ix_scores_run_metric", "run_id", "metric_id"),
)

spans = Table(
    "spans",
    metadata,
    Column("trace_id", String(ID_LENGTH), primary_key=True),
    Column("span_id", String(ID_LENGTH), primary_key=True),
    Column("parent_id", String(ID_LENGTH), nullable=True),
    Column("name", Text, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("started_at", String(40), nullable=False, index=True),
    Column("latency_ms", Float, nullable=True),
    Column("question", Text, nullable=True),
    Column("response", Text, nullable=True),
    Column("model", Text, nullable=True),
    Column("prompt_tokens", Integer, nullable=True),
    Column("completion_tokens", Integer, nullable=True),
    Column("cost_usd", Float, nullable=True),
    Column("error", Text, nullable=True),
    Column("contexts", JSON, nullable=False),
    Column("attributes", JSON, nullable=False),
)

monitor_seen = Table(
    "monitor_seen",
    metadata,
    Column("trace_id", String(ID_LENGTH), primary_key=True),
    Column("decision", String(16), nullable=False),
    Column("reason", Text, nullable=True),
    Column("decided_at", String(40), nullable=False),
)

trace_scores = Table(
    "trace_scores",
    metadata,
    Column("trace_id", String(ID_LENGTH), primary_key=True),
    Column("metric_id", String(200), primary_key=True),
    Column("value", Float, nullable=True),
    Column("explanation", Text, nullable=False),
    Column("reason", Text, nullable=True),
    Column("failed", Boolean, nullable=False),
    Column("details", JSON, nullable=False),
    Column("scored_at", String(40), nullable=False, index=True),
    Column("cost_usd", Float, nullable=True),
    Column("usage", JSON, nullable=True),
    Column("settings", JSON, nullable=True),
)

question_vectors = Table(
    "question_vectors",
    metadata,
    Column("trace_id", String(ID_LENGTH), primary_key=True),
    Column("span_id", String(ID_LENGTH), primary_key=True),
    Column("model", String(64), primary_key=True),
    Column("dimensions", Integer, nullable=False),
    Column("vector", LargeBinary, nullable=False),
)
