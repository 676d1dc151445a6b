"""trace_scores.settings: the metric's parameters each monitor score was computed with, so that
score drift over the monitor's days leaves out scores of other settings, as it does for runs
(see ``ragmeter/monitor/ledger.py``).

Revision ID: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the column; scores written before it have none (their settings were not recorded)."""
    with op.batch_alter_table("trace_scores") as batch:
        batch.add_column(sa.Column("settings", sa.JSON, nullable=True))


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("trace_scores") as batch:
        batch.drop_column("settings")
