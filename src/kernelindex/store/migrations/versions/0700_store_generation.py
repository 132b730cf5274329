"""The store generation: one row whose counter every committed write bumps (see
kernelindex/store/generation.py), so the site can cache pages exactly. Also two indexes that find
the few retracted runs without scanning every run (found by profiling the run page).

Revision ID: 0700_store_generation
Revises: 0400_serving_tables
"""

import sqlalchemy as sa
from alembic import op

revision = "0700_store_generation"
down_revision = "0500_rerun_queue"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "store_generation",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.bulk_insert(table, [{"id": 1, "value": 0}])
    with op.batch_alter_table("record_events", schema=None) as batch_op:
        batch_op.create_index("ix_record_events_cause", ["cause"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("record_events", schema=None) as batch_op:
        batch_op.drop_index("ix_record_events_cause")
    op.drop_table("store_generation")
