"""The log's leaves move from one row each (``log_leaves``) to blocks of up to 256 consecutive leaves of
one table (``log_blocks``: the digests and the rows' seqs as two byte strings), with no per-leaf index:
an import's leaves become a few hundred rows, not tens of thousands plus two index entries each
(benchmarks/RESULTS.md). Leaf numbers, digests, the tree and every root stay as they were. Then every
record not yet in the log gets its leaf (the back-fill of 1000_transparency_log, done by the newest
revision that changes the leaves' layout, with that layout's code). Downgrading writes one row per
leaf back.

Revision ID: 1300_log_blocks
Revises: 1200_log_raw_leaves
"""

import sys
from array import array
from collections.abc import Iterator

import sqlalchemy as sa
from alembic import op

revision = "1300_log_blocks"
down_revision = "1200_log_raw_leaves"
branch_labels = None
depends_on = None

KEY = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite: the row id itself
BLOCK = 256  # as of this revision (kernelindex/store/transparency/tables.py)
READ = 50_000  # old leaves read at a time


def _packed(seqs: list[int]) -> bytes:
    values = array("q", seqs)
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


def _unpacked(data: bytes) -> list[int]:
    values = array("q")
    values.frombytes(data[: len(data) - len(data) % 8])
    if sys.byteorder != "little":
        values.byteswap()
    return values.tolist()


def _old_leaves(conn) -> Iterator[tuple[int, bytes, int, int]]:
    """(idx, digest, table_id, row_seq) of every old leaf in order, a page at a time."""
    after = -1
    while True:
        rows = conn.execute(
            sa.text("SELECT idx, digest, table_id, row_seq FROM log_leaves WHERE idx > :after ORDER BY idx LIMIT :n"),
            {"after": after, "n": READ},
        ).all()
        if not rows:
            return
        for idx, digest, table_id, row_seq in rows:
            yield (
                int(idx),
                bytes(digest) if not isinstance(digest, str) else digest.encode(),
                int(table_id),
                int(row_seq),
            )
        after = int(rows[-1][0])


def upgrade() -> None:
    conn = op.get_bind()
    blocks = op.create_table(
        "log_blocks",
        sa.Column("first_idx", KEY, autoincrement=False, nullable=False),
        sa.Column("table_id", sa.SmallInteger(), nullable=False),
        sa.Column("first_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("digests", sa.LargeBinary(), nullable=False),
        sa.Column("seqs", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("first_idx", name=op.f("pk_log_blocks")),
    )
    # a block is consecutive leaves of one table with rising seqs (a log altered behind the store's back
    # keeps its oddities: a gap in the numbers or a seq out of order starts a new block)
    made: list[dict] = []
    current: list[tuple[int, bytes, int, int]] = []

    def close() -> None:
        if current:
            made.append(
                {
                    "first_idx": current[0][0],
                    "table_id": current[0][2],
                    "first_seq": current[0][3],
                    "last_seq": current[-1][3],
                    "digests": b"".join(leaf[1] for leaf in current),
                    "seqs": _packed([leaf[3] for leaf in current]),
                }
            )
            current.clear()
        if len(made) >= 1000:
            conn.execute(blocks.insert(), made)
            made.clear()

    for leaf in _old_leaves(conn):
        if current and (
            len(current) == BLOCK
            or leaf[0] != current[-1][0] + 1
            or leaf[2] != current[-1][2]
            or leaf[3] <= current[-1][3]
        ):
            close()
        current.append(leaf)
    close()
    if made:
        conn.execute(blocks.insert(), made)
    op.create_index("ix_log_blocks_table_id_last_seq", "log_blocks", ["table_id", "last_seq"], unique=False)
    op.drop_index("ix_log_leaves_table_id_row_seq", table_name="log_leaves")
    op.drop_index("ix_log_leaves_digest", table_name="log_leaves")
    op.drop_table("log_leaves")
    from kernelindex.store.transparency.append import log_new_records

    log_new_records(conn)


def downgrade() -> None:
    conn = op.get_bind()
    leaves = op.create_table(
        "log_leaves",
        sa.Column("idx", KEY, autoincrement=False, nullable=False),
        sa.Column("digest", sa.LargeBinary(length=32), nullable=False),
        sa.Column("table_id", sa.SmallInteger(), nullable=False),
        sa.Column("row_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("idx", name=op.f("pk_log_leaves")),
    )
    after = -1
    while True:
        rows = conn.execute(
            sa.text(
                "SELECT first_idx, table_id, digests, seqs FROM log_blocks WHERE first_idx > :after "
                "ORDER BY first_idx LIMIT 1000"
            ),
            {"after": after},
        ).all()
        if not rows:
            break
        made = []
        for first, table_id, digests, seqs in rows:
            data = digests.encode() if isinstance(digests, str) else bytes(digests)
            for k, seq in enumerate(_unpacked(seqs.encode() if isinstance(seqs, str) else bytes(seqs))):
                made.append(
                    {"idx": int(first) + k, "digest": data[32 * k : 32 * k + 32], "table_id": table_id, "row_seq": seq}
                )
        conn.execute(leaves.insert(), made)
        after = int(rows[-1][0])
    op.create_index("ix_log_leaves_digest", "log_leaves", ["digest"], unique=False)
    op.create_index("ix_log_leaves_table_id_row_seq", "log_leaves", ["table_id", "row_seq"], unique=False)
    op.drop_index("ix_log_blocks_table_id_last_seq", table_name="log_blocks")
    op.drop_table("log_blocks")
