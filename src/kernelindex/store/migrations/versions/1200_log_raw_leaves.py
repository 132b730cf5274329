"""A leaf of the transparency log holds its digest as 32 raw bytes instead of 71 characters of
``sha256:`` text, and its table as a small fixed number instead of the table's name: half the
bytes per record to write and index at every import (benchmarks/RESULTS.md). The tree and every
root are unchanged (a leaf hash was always of the raw bytes). The back-fill of the records not yet
in the log, once done here, is done by 1300_log_blocks with the layout that replaced this one.
Downgrading writes the text and the names back.

Revision ID: 1200_log_raw_leaves
Revises: 1100_log_small_nodes
"""

import re
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "1200_log_raw_leaves"
down_revision = "1100_log_small_nodes"
branch_labels = None
depends_on = None

# as of this revision (kernelindex/store/transparency/leaves.py, Logged.id); 0: a name not logged
TABLE_IDS = {
    "sources": 1,
    "projects": 2,
    "operations": 3,
    "workloads": 4,
    "implementations": 5,
    "protocols": 6,
    "environments": 7,
    "runs": 8,
    "measurements": 9,
    "artifacts": 10,
    "record_events": 11,
    "foreign_rows": 12,
    "model_revisions": 13,
    "serving_stack_revisions": 14,
    "serving_configurations": 15,
    "serving_workloads": 16,
    "serving_runs": 17,
    "serving_measurements": 18,
    "signatures": 19,
    "attestations": 20,
    "correction_requests": 21,
}
_SHA256 = re.compile(r"^sha256:[0-9a-f]{64}$")


def _raw(text: str) -> bytes:
    """A text leaf's bytes: a ``sha256:`` digest's 32, anything else (tampered) its UTF-8 as it is."""
    return bytes.fromhex(text[7:]) if _SHA256.match(text) else text.encode("utf-8")


def _swap_columns(old: tuple[str, str], new: tuple[str, str]) -> None:
    """Drop the ``old`` (digest, table) columns and give the filled ``new`` ones their place."""
    with op.batch_alter_table("log_leaves") as batch:  # SQLite: the table copied; PostgreSQL: ALTERs
        batch.drop_column(old[0])
        batch.drop_column(old[1])
        batch.alter_column(new[0], new_column_name="digest", nullable=False)
        batch.alter_column(new[1], nullable=False)


def upgrade() -> None:
    conn = op.get_bind()
    op.drop_index("ix_log_leaves_table_name_row_seq", table_name="log_leaves")
    op.drop_index("ix_log_leaves_digest", table_name="log_leaves")
    op.add_column("log_leaves", sa.Column("raw", sa.LargeBinary(length=32), nullable=True))
    op.add_column("log_leaves", sa.Column("table_id", sa.SmallInteger(), nullable=True))
    ids = sa.case(TABLE_IDS, value=sa.column("table_name"), else_=0)
    if conn.dialect.name == "postgresql":
        raw = sa.text(
            "CASE WHEN digest ~ '^sha256:[0-9a-f]{64}$' THEN decode(substr(digest, 8), 'hex') "
            "ELSE convert_to(digest, 'UTF8') END"
        )
    else:  # SQLite before 3.41 has no unhex(): the driver's connection lends Python's
        driver: Any = conn.connection.dbapi_connection
        driver.create_function("kernelindex_raw_leaf", 1, _raw, deterministic=True)
        raw = sa.text("kernelindex_raw_leaf(digest)")
    conn.execute(sa.table("log_leaves", sa.column("raw"), sa.column("table_id")).update().values(raw=raw, table_id=ids))
    _swap_columns(("digest", "table_name"), ("raw", "table_id"))
    op.create_index("ix_log_leaves_digest", "log_leaves", ["digest"], unique=False)
    op.create_index("ix_log_leaves_table_id_row_seq", "log_leaves", ["table_id", "row_seq"], unique=False)


def downgrade() -> None:
    conn = op.get_bind()
    op.drop_index("ix_log_leaves_table_id_row_seq", table_name="log_leaves")
    op.drop_index("ix_log_leaves_digest", table_name="log_leaves")
    op.add_column("log_leaves", sa.Column("text", sa.String(length=71), nullable=True))
    op.add_column("log_leaves", sa.Column("table_name", sa.String(length=60), nullable=True))
    names = sa.case({v: k for k, v in TABLE_IDS.items()}, value=sa.column("table_id"), else_="unknown")
    hexed = "encode(digest, 'hex')" if conn.dialect.name == "postgresql" else "lower(hex(digest))"
    conn.execute(
        sa.table("log_leaves", sa.column("text"), sa.column("table_name"))
        .update()
        .values(text=sa.text(f"'sha256:' || {hexed}"), table_name=names)
    )
    _swap_columns(("digest", "table_id"), ("text", "table_name"))
    op.create_index("ix_log_leaves_digest", "log_leaves", ["digest"], unique=False)
    op.create_index("ix_log_leaves_table_name_row_seq", "log_leaves", ["table_name", "row_seq"], unique=False)
