"""The store generation: one row whose counter every committed write bumps (see
kernelindex/store/generation.py), so the site can cache pages exactly.

Revision ID: 0700_store_generation
Revises: 0200_rank_indexes
"""

import sqlalchemy as sa
from alembic import op

revision = "0700_store_generation"
down_revision = "0200_rank_indexes"
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


def downgrade() -> None:
    op.drop_table("store_generation")
