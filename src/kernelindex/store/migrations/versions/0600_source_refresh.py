"""source_refreshes: when each source was last refreshed, and the digest of the last synced export
(model in kernelindex/store/refresh/tables.py).

Revision ID: 0600_source_refresh
Revises: 0400_serving_tables
"""

import sqlalchemy as sa
from alembic import op

revision = "0600_source_refresh"
down_revision = "0300_one_retraction"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "source_refreshes",
        sa.Column("seq", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("source_slug", sa.String(length=200), nullable=True),
        sa.Column("origin", sa.String(length=2000), nullable=False),
        sa.Column("export_digest", sa.String(length=71), nullable=True),
        sa.Column("rows_added", sa.Integer(), nullable=False),
        sa.Column("refreshed_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_source_refreshes")),
    )
    op.create_index("ix_source_refreshes_slug", "source_refreshes", ["source_slug", "refreshed_at"], unique=False)
    op.create_index("ix_source_refreshes_origin", "source_refreshes", ["origin", "seq"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_source_refreshes_origin", table_name="source_refreshes")
    op.drop_index("ix_source_refreshes_slug", table_name="source_refreshes")
    op.drop_table("source_refreshes")
