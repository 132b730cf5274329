"""The transparency log keeps no perfect subtree below level 4 (16 leaves) any more: a proof hashes
those from their leaves (kernelindex/store/transparency/tables.py, ``KEPT_LEVEL``), and an import
writes one node per eight leaves instead of one per leaf. The tree and every root are unchanged.
Downgrading hashes the small subtrees again from the leaves.

Revision ID: 1100_log_small_nodes
Revises: 1000_transparency_log
"""

import sqlalchemy as sa
from alembic import op

revision = "1100_log_small_nodes"
down_revision = "1000_transparency_log"
branch_labels = None
depends_on = None

KEPT_LEVEL = 4  # as of this revision; the node key's low six bits are its level


def upgrade() -> None:
    op.get_bind().execute(sa.text("DELETE FROM log_nodes WHERE node % 64 < :kept"), {"kept": KEPT_LEVEL})


def downgrade() -> None:
    from kernelindex.records import merkle

    conn = op.get_bind()
    digests = conn.execute(sa.text("SELECT digest FROM log_leaves ORDER BY idx")).scalars().all()
    small = [
        {"node": at << 6 | level, "hash": value}
        for (level, at), value in merkle.append([], [merkle.leaf_hash(bytes.fromhex(d[7:])) for d in digests], 0)
        if level < KEPT_LEVEL
    ]
    if small:
        conn.execute(sa.text("INSERT INTO log_nodes (node, hash) VALUES (:node, :hash)"), small)
