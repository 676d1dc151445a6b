"""The question_vectors table: each request's question embedded once, when it is stored or
imported or the monitor first sees it (see ``ragmeter/store/schema.py``).

Revision ID: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the table (stores of an earlier schema get their vectors with ``ragmeter traces embed``)."""
    op.create_table(
        "question_vectors",
        sa.Column("trace_id", sa.String(32), primary_key=True),
        sa.Column("span_id", sa.String(16), primary_key=True),
        sa.Column("model", sa.String(64), primary_key=True),
        sa.Column("dimensions", sa.Integer, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    """Drop the table."""
    op.drop_table("question_vectors")
