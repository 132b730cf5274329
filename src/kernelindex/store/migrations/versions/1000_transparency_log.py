"""The transparency log (see kernelindex/store/transparency/): its leaves and the perfect subtrees
above them, and the checkpoints ``sync`` last saw of the servers it mirrors. The leaves of the
records a store already holds are back-filled by the newest revision that changes the leaves'
layout (1300_log_blocks), which appends them with the code of that layout.

Revision ID: 1000_transparency_log
Revises: 0900_migration_checks
"""

import sqlalchemy as sa
from alembic import op

revision = "1000_transparency_log"
down_revision = "0900_migration_checks"
branch_labels = None
depends_on = None

KEY = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite: the row id itself


def upgrade() -> None:
    op.create_table(
        "log_leaves",
        sa.Column("idx", KEY, autoincrement=False, nullable=False),
        sa.Column("digest", sa.String(length=71), nullable=False),
        sa.Column("table_name", sa.String(length=60), nullable=False),
        sa.Column("row_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("idx", name=op.f("pk_log_leaves")),
    )
    op.create_index("ix_log_leaves_digest", "log_leaves", ["digest"], unique=False)
    op.create_index("ix_log_leaves_table_name_row_seq", "log_leaves", ["table_name", "row_seq"], unique=False)
    op.create_table(
        "log_nodes",
        sa.Column("node", KEY, autoincrement=False, nullable=False),
        sa.Column("hash", sa.LargeBinary(length=32), nullable=False),
        sa.PrimaryKeyConstraint("node", name=op.f("pk_log_nodes")),
    )
    op.create_table(
        "log_witnessed",
        sa.Column("server", sa.String(length=500), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("verifier_key", sa.Text(), nullable=False),
        sa.Column("seen_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("server", name=op.f("pk_log_witnessed")),
    )


def downgrade() -> None:
    op.drop_table("log_witnessed")
    op.drop_table("log_nodes")
    op.drop_index("ix_log_leaves_table_name_row_seq", table_name="log_leaves")
    op.drop_index("ix_log_leaves_digest", table_name="log_leaves")
    op.drop_table("log_leaves")
