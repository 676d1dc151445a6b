"""Trace and span ids of up to 64 characters: a tracer other than ragmeter's may write a UUID
(36 characters) or a longer id where OpenTelemetry writes 32 and 16 hex digits, and PostgreSQL
refused such a span, and with it the whole batch of an import or of the application's sink.

Revision ID: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

#: The widened columns of each table, with their lengths before.
_WIDENED = {
    "spans": {"trace_id": 32, "span_id": 16, "parent_id": 16},
    "monitor_seen": {"trace_id": 32},
    "trace_scores": {"trace_id": 32},
    "question_vectors": {"trace_id": 32, "span_id": 16},
}


def upgrade() -> None:
    """Widen the id columns to 64 characters; the ids stored are kept as they are."""
    for table, columns in _WIDENED.items():
        with op.batch_alter_table(table) as batch:
            for column, before in columns.items():
                batch.alter_column(column, type_=sa.String(64), existing_type=sa.String(before))


def downgrade() -> None:
    """Narrow them back (fails on PostgreSQL while a longer id is stored)."""
    for table, columns in _WIDENED.items():
        with op.batch_alter_table(table) as batch:
            for column, before in columns.items():
                batch.alter_column(column, type_=sa.String(before), existing_type=sa.String(64))
