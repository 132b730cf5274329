"""The log's tables: its leaves in blocks, and the perfect subtrees above them.

``log_blocks``: up to :data:`BLOCK` consecutive leaves of one table's rows, written whole by one append
and never again: leaf ``first_idx + k`` holds the content digest (32 raw bytes at ``32 * k`` in ``digests``)
of the row whose ``seq`` is the ``k``-th of ``seqs`` (8 bytes each, little-endian) in the table numbered
``table_id`` (:attr:`~kernelindex.store.transparency.leaves.Logged.id`). One row per block, not per leaf:
an import's leaves go in as a few hundred rows with no per-leaf index to build, which was most of what
the log added to an import (benchmarks/RESULTS.md). A leaf is found by its index (the block at or before
it), by its row (``table_id`` and ``last_seq``, indexed) or, for a record with a digest column, by that
column's own index and then its row.
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

# SQLite: an INTEGER PRIMARY KEY is the row id itself (no second index to keep up per block)
KEY = BigInteger().with_variant(Integer(), "sqlite")

BLOCK = 256  # leaves per log_blocks row at most
DIGEST_BYTES, SEQ_BYTES = 32, 8

log_blocks = Table(
    "log_blocks",
    metadata,
    Column("first_idx", KEY, primary_key=True, autoincrement=False),  # the index of its first leaf
    Column("table_id", SmallInteger, nullable=False),
    Column("first_seq", BigInteger, nullable=False),  # its first and last rows' seq (denormalised from seqs)
    Column("last_seq", BigInteger, nullable=False),
    Column("digests", LargeBinary, nullable=False),
    Column("seqs", LargeBinary, nullable=False),
)
# a table's newest block (where appending resumes) and the block that holds a given row
Index("ix_log_blocks_table_id_last_seq", log_blocks.c.table_id, log_blocks.c.last_seq)

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
