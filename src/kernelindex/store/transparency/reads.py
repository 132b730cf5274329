"""Reading the log: its size, a root at any size, a leaf by digest, and the nodes a proof needs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, func, select

from kernelindex.records import merkle
from kernelindex.store.bulk import select_in
from kernelindex.store.transparency.leaves import BY_ID, digest_text, leaf_hash, raw_digest, stored_leaf
from kernelindex.store.transparency.tables import KEPT_LEVEL, log_leaves, log_nodes, node_key


@dataclass(frozen=True)
class Leaf:
    index: int
    digest: str  # as ``sha256:`` text
    table_name: str
    row_seq: int

    @classmethod
    def of_row(cls, row) -> Leaf:
        """A ``log_leaves`` row (:data:`_LEAF`) as a reader names it."""
        index, raw, table_id, row_seq = row
        logged = BY_ID.get(table_id)
        return cls(int(index), digest_text(raw), logged.name if logged else f"table {table_id}", int(row_seq))

    @property
    def hash(self) -> bytes:
        """Its RFC 9162 leaf hash (of the bytes stored)."""
        return leaf_hash(bytes.fromhex(self.digest[7:]))


_LEAF = (log_leaves.c.idx, log_leaves.c.digest, log_leaves.c.table_id, log_leaves.c.row_seq)


def tree_size(conn: Connection) -> int:
    last = conn.scalar(select(func.max(log_leaves.c.idx)))
    return 0 if last is None else int(last) + 1


def fetch_nodes(conn: Connection, wanted: Iterable[merkle.Node]) -> dict[merkle.Node, bytes]:
    """The hashes of these perfect subtrees, in two reads: those below :data:`KEPT_LEVEL` (a leaf:
    level 0) hashed from their leaves, the others as stored."""
    wanted = set(wanted)
    found: dict[merkle.Node, bytes] = {}
    small = [(level, index) for level, index in wanted if level < KEPT_LEVEL]
    spans = {node: range(node[1] << node[0], (node[1] + 1) << node[0]) for node in small}
    leaves = [index for span in spans.values() for index in span]
    hashes = {
        int(index): leaf_hash(stored_leaf(leaf))
        for index, leaf in select_in(conn, log_leaves, ["idx", "digest"], ["idx"], leaves)
    }
    for node, span in spans.items():
        if all(index in hashes for index in span):
            found[node] = merkle.root_of([hashes[index] for index in span])
    inner = {node_key(*node): node for node in wanted if node[0] >= KEPT_LEVEL}
    for key, value in select_in(conn, log_nodes, ["node", "hash"], ["node"], inner):
        found[inner[int(key)]] = bytes(value)
    if missing := wanted - found.keys():
        raise LookupError(f"the log has no node {sorted(missing)[0]}: its tables were changed")
    return found


def root_at(conn: Connection, size: int) -> bytes:
    """MTH of the first ``size`` leaves."""
    return merkle.range_hash(0, size, fetch_nodes(conn, merkle.perfect_cover(0, size)))


def leaf_of(conn: Connection, digest: str) -> Leaf | None:
    """The first leaf holding ``digest`` (a digest logged twice is proved by its first)."""
    raw = raw_digest(digest)
    if raw is None:  # every leaf is a sha256 digest
        return None
    row = conn.execute(select(*_LEAF).where(log_leaves.c.digest == raw).order_by(log_leaves.c.idx).limit(1)).first()
    return None if row is None else Leaf.of_row(row)


def leaf_at(conn: Connection, index: int) -> Leaf | None:
    row = conn.execute(select(*_LEAF).where(log_leaves.c.idx == index)).first()
    return None if row is None else Leaf.of_row(row)


def inclusion_proof(conn: Connection, index: int, size: int) -> list[bytes]:
    return merkle.hashes_of(merkle.inclusion_ranges(index, size), lambda wanted: fetch_nodes(conn, wanted))


def consistency_proof(conn: Connection, old: int, new: int) -> list[bytes]:
    return merkle.hashes_of(merkle.consistency_ranges(old, new), lambda wanted: fetch_nodes(conn, wanted))
