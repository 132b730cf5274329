"""The log's two tables: its leaves in order, and the perfect subtrees above them.

``log_leaves``: leaf ``idx`` holds the content digest (its 32 raw bytes) of the row ``row_seq`` of
the table numbered ``table_id`` (:attr:`~kernelindex.store.transparency.leaves.Logged.id`).
``log_nodes``: the hash of every perfect subtree (keyed by :func:`node_key`) of
:data:`KEPT_LEVEL` levels or more, kept when its last leaf arrives (one per 2**(KEPT_LEVEL - 1)
leaves), so any root or proof is a few dozen reads at any size. A leaf's own hash and the small
subtrees are not kept: a proof hashes them again from at most 2**KEPT_LEVEL leaves per end of the
ranges it names, which costs less than writing one node per leaf at every append. ``log_witnessed``: the newest checkpoint
``sync`` saw of each server it mirrors, so the next sync can prove that server's log only grew.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, LargeBinary, SmallInteger, String, Table, Text

from kernelindex.store.tables import TIME, metadata

# SQLite: an INTEGER PRIMARY KEY is the row id itself (no second index to keep up per leaf)
KEY = BigInteger().with_variant(Integer(), "sqlite")

log_leaves = Table(
    "log_leaves",
    metadata,
    Column("idx", KEY, primary_key=True, autoincrement=False),
    Column("digest", LargeBinary(32), nullable=False),
    Column("table_id", SmallInteger, nullable=False),
    Column("row_seq", BigInteger, nullable=False),
)
Index("ix_log_leaves_digest", log_leaves.c.digest)
# which rows of a table the log holds (its newest: where appending resumes); one leaf per row is
# what appending does and ``verify`` checks, so a plain index, which a first import builds last
Index("ix_log_leaves_table_id_row_seq", log_leaves.c.table_id, log_leaves.c.row_seq)

log_nodes = Table(
    "log_nodes",
    metadata,
    Column("node", KEY, primary_key=True, autoincrement=False),  # node_key(level, index): one integer key
    Column("hash", LargeBinary(32), nullable=False),
)


KEPT_LEVEL = 4  # the lowest level of perfect subtree (2**4 = 16 leaves) that log_nodes holds


def node_key(level: int, index: int) -> int:
    """The one-integer key of the perfect subtree ``(level, index)`` (levels stay below 64)."""
    return index << 6 | level


log_witnessed = Table(
    "log_witnessed",
    metadata,
    Column("server", String(500), primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("note", Text, nullable=False),  # the signed note as the server sent it
    Column("verifier_key", Text, nullable=False),
    Column("seen_at", TIME, nullable=False),
)
