"""The online monitor's tables: monitor_seen and trace_scores (see ``ragmeter/store/schema.py``).

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the two tables."""
    op.create_table(
        "monitor_seen",
        sa.Column("trace_id", sa.String(32), primary_key=True),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("decided_at", sa.String(40), nullable=False),
    )
    op.create_table(
        "trace_scores",
        sa.Column("trace_id", sa.String(32), primary_key=True),
        sa.Column("metric_id", sa.String(200), primary_key=True),
        sa.Column("value", sa.Float, nullable=True),
        sa.Column("explanation", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("failed", sa.Boolean, nullable=False),
        sa.Column("details", sa.JSON, nullable=False),
        sa.Column("scored_at", sa.String(40), nullable=False, index=True),
        sa.Column("cost_usd", sa.Float, nullable=True),
        sa.Column("usage", sa.JSON, nullable=True),
    )


def downgrade() -> None:
    """Drop the two tables."""
    op.drop_table("trace_scores")
    op.drop_table("monitor_seen")
