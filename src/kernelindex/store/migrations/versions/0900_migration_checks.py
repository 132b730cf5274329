"""Alembic's last verdict on the store, with the digest of the scripts it read (see
kernelindex/store/schema_check.py): a store found current under the same scripts is opened
without loading Alembic.

Revision ID: 0900_migration_checks
Revises: 0800_search_indexes
"""

import sqlalchemy as sa
from alembic import op

revision = "0900_migration_checks"
down_revision = "0800_search_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "migration_checks",
        sa.Column("scripts_digest", sa.String(length=71), nullable=False),
        sa.Column("revision", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("scripts_digest"),
    )


def downgrade() -> None:
    op.drop_table("migration_checks")
