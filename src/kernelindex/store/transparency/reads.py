"""Reading the log: its size, a root at any size, a leaf by digest, and the nodes a proof needs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, func, select

from kernelindex.records import merkle
from kernelindex.store.bulk import select_in
from kernelindex.store.transparency.leaves import leaf_hash
from kernelindex.store.transparency.tables import KEPT_LEVEL, log_leaves, log_nodes, node_key


@dataclass(frozen=True)
class Leaf:
    index: int
    digest: str
    table_name: str
    row_seq: int


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
        int(index): leaf_hash(leaf) for index, leaf in select_in(conn, log_leaves, ["idx", "digest"], ["idx"], leaves)
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
    row = conn.execute(
        select(log_leaves.c.idx, log_leaves.c.digest, log_leaves.c.table_name, log_leaves.c.row_seq)
        .where(log_leaves.c.digest == digest)
        .order_by(log_leaves.c.idx)
        .limit(1)
    ).first()
    return None if row is None else Leaf(int(row[0]), row[1], row[2], int(row[3]))


def leaf_at(conn: Connection, index: int) -> Leaf | None:
    row = conn.execute(
        select(log_leaves.c.idx, log_leaves.c.digest, log_leaves.c.table_name, log_leaves.c.row_seq).where(
            log_leaves.c.idx == index
        )
    ).first()
    return None if row is None else Leaf(int(row[0]), row[1], row[2], int(row[3]))


def inclusion_proof(conn: Connection, index: int, size: int) -> list[bytes]:
    return merkle.hashes_of(merkle.inclusion_ranges(index, size), lambda wanted: fetch_nodes(conn, wanted))


def consistency_proof(conn: Connection, old: int, new: int) -> list[bytes]:
    return merkle.hashes_of(merkle.consistency_ranges(old, new), lambda wanted: fetch_nodes(conn, wanted))
