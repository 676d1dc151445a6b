"""The first schema: runs, samples, scores and spans (see ``ragmeter/store/schema.py``).

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the four tables and their indexes."""
    _create_runs_and_samples()
    _create_scores()
    _create_spans()


def _create_runs_and_samples() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("started_at", sa.String(40), nullable=True, index=True),
        sa.Column("stored_at", sa.String(40), nullable=False),
        sa.Column("source", sa.Text, nullable=True),
        sa.Column("fingerprint", sa.String(64), nullable=False, unique=True),
        sa.Column("n_samples", sa.Integer, nullable=False),
        sa.Column("commit", sa.String(64), nullable=True),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("judge", sa.JSON, nullable=True),
        sa.Column("settings", sa.JSON, nullable=False),
        sa.Column("metrics", sa.JSON, nullable=False),
        sa.Column("aggregates", sa.JSON, nullable=False),
    )
    op.create_table(
        "samples",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=True),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("location", sa.Text, nullable=False),
        sa.Column("configs", sa.JSON, nullable=False),
        sa.Column("sample", sa.JSON, nullable=False),
    )


def _create_scores() -> None:
    op.create_table(
        "scores",
        sa.Column("run_id", sa.String(32), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column("metric_id", sa.String(200), primary_key=True),
        sa.Column("value", sa.Float, nullable=True),
        sa.Column("explanation", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("failed", sa.Boolean, nullable=False),
        sa.Column("details", sa.JSON, nullable=False),
        sa.Column("seconds", sa.Float, nullable=True),
        sa.Column("prompt_tokens", sa.Integer, nullable=True),
        sa.Column("completion_tokens", sa.Integer, nullable=True),
        sa.Column("cost_usd", sa.Float, nullable=True),
        sa.Column("usage", sa.JSON, nullable=True),
    )
    op.create_index("ix_scores_run_metric", "scores", ["run_id", "metric_id"])


def _create_spans() -> None:
    op.create_table(
        "spans",
        sa.Column("trace_id", sa.String(32), primary_key=True),
        sa.Column("span_id", sa.String(16), primary_key=True),
        sa.Column("parent_id", sa.String(16), nullable=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("started_at", sa.String(40), nullable=False, index=True),
        sa.Column("latency_ms", sa.Float, nullable=True),
        sa.Column("question", sa.Text, nullable=True),
        sa.Column("response", sa.Text, nullable=True),
        sa.Column("model", sa.Text, nullable=True),
        sa.Column("prompt_tokens", sa.Integer, nullable=True),
        sa.Column("completion_tokens", sa.Integer, nullable=True),
        sa.Column("cost_usd", sa.Float, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("contexts", sa.JSON, nullable=False),
        sa.Column("attributes", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    """Drop the four tables."""
    for table in ("spans", "scores", "samples", "runs"):
        op.drop_table(table)
