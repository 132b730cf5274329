"""The transparency log (see kernelindex/store/transparency/): its leaves and the perfect subtrees
above them, with a leaf for every record a store already holds, in the order the store took them
(tables parents first, each by ``seq``), so an existing store's log is the one it would have
built record by record; and the checkpoints ``sync`` last saw of the servers it mirrors.

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
    from kernelindex.store.transparency.append import log_new_records

    log_new_records(op.get_bind())


def downgrade() -> None:
    op.drop_table("log_witnessed")
    op.drop_table("log_nodes")
    op.drop_index("ix_log_leaves_table_name_row_seq", table_name="log_leaves")
    op.drop_index("ix_log_leaves_digest", table_name="log_leaves")
    op.drop_table("log_leaves")
