"""Reading the log: its size, a root at any size, a leaf by index or digest, and the nodes a proof needs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, Table, UniqueConstraint, bindparam, func, literal_column, select, text, union_all

from kernelindex.records import merkle
from kernelindex.store.bulk import select_in
from kernelindex.store.transparency.blocks import SELECTED, Block
from kernelindex.store.transparency.leaves import BY_ID, LOGGED, digest_text, leaf_hash, raw_digest
from kernelindex.store.transparency.tables import DIGEST_BYTES, KEPT_LEVEL, log_blocks, log_nodes, node_key


@dataclass(frozen=True)
class Leaf:
    index: int
    digest: str  # as ``sha256:`` text
    table_name: str
    row_seq: int

    @classmethod
    def in_block(cls, block: Block, index: int) -> Leaf:
        """Leaf ``index`` of ``block`` as a reader names it (a row the block's seqs lack: seq -1)."""
        logged = BY_ID.get(block.table_id)
        seqs = block.row_seqs()
        k = index - block.first
        return cls(
            index,
            digest_text(block.leaf(index)),
            logged.name if logged else f"table {block.table_id}",
            seqs[k] if k < len(seqs) else -1,
        )

    @property
    def hash(self) -> bytes:
        """Its RFC 9162 leaf hash (of the bytes stored)."""
        return leaf_hash(bytes.fromhex(self.digest[7:]))


def tree_size(conn: Connection) -> int:
    last = conn.execute(
        select(log_blocks.c.first_idx, func.length(log_blocks.c.digests))
        .order_by(log_blocks.c.first_idx.desc())
        .limit(1)
    ).first()
    return 0 if last is None else int(last[0]) + int(last[1]) // DIGEST_BYTES


def _block_at(conn: Connection, index: int) -> Block | None:
    """The block holding leaf ``index``, if any."""
    row = conn.execute(
        select(*SELECTED).where(log_blocks.c.first_idx <= index).order_by(log_blocks.c.first_idx.desc()).limit(1)
    ).first()
    block = None if row is None else Block.of_row(row)
    return block if block is not None and index < block.end else None


def _leaves(conn: Connection, indexes: Iterable[int]) -> dict[int, bytes]:
    """The digests of the leaves at these indexes that the log holds: one read per block they fall in."""
    wanted = sorted(set(indexes))
    found: dict[int, bytes] = {}
    i = 0
    while i < len(wanted):
        block = _block_at(conn, wanted[i])
        if block is None:
            i += 1
            continue
        while i < len(wanted) and wanted[i] < block.end:
            found[wanted[i]] = block.leaf(wanted[i])
            i += 1
    return found


def fetch_nodes(conn: Connection, wanted: Iterable[merkle.Node]) -> dict[merkle.Node, bytes]:
    """The hashes of these perfect subtrees, those below :data:`KEPT_LEVEL` (a leaf: level 0) hashed
    from their leaves, the others as stored in one read."""
    wanted = set(wanted)
    found: dict[merkle.Node, bytes] = {}
    small = [(level, index) for level, index in wanted if level < KEPT_LEVEL]
    spans = {node: range(node[1] << node[0], (node[1] + 1) << node[0]) for node in small}
    leaves = _leaves(conn, (index for span in spans.values() for index in span))
    for node, span in spans.items():
        if all(index in leaves for index in span):
            found[node] = merkle.root_of([leaf_hash(leaves[index]) for index in span])
    inner = {node_key(*node): node for node in wanted if node[0] >= KEPT_LEVEL}
    for key, value in select_in(conn, log_nodes, ["node", "hash"], ["node"], inner):
        found[inner[int(key)]] = bytes(value)
    if missing := wanted - found.keys():
        raise LookupError(f"the log has no node {sorted(missing)[0]}: its tables were changed")
    return found


def root_at(conn: Connection, size: int) -> bytes:
    """MTH of the first ``size`` leaves."""
    return merkle.range_hash(0, size, fetch_nodes(conn, merkle.perfect_cover(0, size)))


def leaf_at(conn: Connection, index: int) -> Leaf | None:
    block = _block_at(conn, index)
    return None if block is None else Leaf.in_block(block, index)


def _leads_an_index(table: Table, column: str) -> bool:
    """Whether an index (or a unique constraint's) of ``table`` starts with ``column``: a lookup by it is a seek."""
    firsts = [list(index.columns)[0].name for index in table.indexes]
    firsts += [list(c.columns)[0].name for c in table.constraints if isinstance(c, UniqueConstraint) and c.columns]
    return column in firsts


# the record tables whose leaf is a digest column of their own with an index to find it by
_BY_COLUMN = [
    (logged, logged.column) for logged in LOGGED if logged.column and _leads_an_index(logged.table, logged.column)
]
# the (table id, seq) of every such row whose digest is :digest, in one statement: one seek per table, where a
# statement per table cost a run page about a sixth of its CPU (benchmarks/RESULTS.md)
_HOLDING = union_all(
    *(
        select(literal_column(str(int(logged.id))).label("table_id"), logged.table.c.seq).where(
            logged.table.c[column] == bindparam("digest")
        )
        for logged, column in _BY_COLUMN
    )
)


# the block of one table's row: built once, values bound per call
_BLOCK_OF_ROW = (
    select(*SELECTED)
    .where(log_blocks.c.table_id == bindparam("table_id"), log_blocks.c.last_seq >= bindparam("seq"))
    .order_by(log_blocks.c.last_seq)
    .limit(1)
)


def _leaf_of_row(conn: Connection, table_id: int, seq: int) -> Leaf | None:
    row = conn.execute(_BLOCK_OF_ROW, {"table_id": table_id, "seq": seq}).first()
    block = None if row is None else Block.of_row(row)
    index = None if block is None else block.index_of_row(seq)
    return None if block is None or index is None else Leaf.in_block(block, index)


def leaf_of(conn: Connection, digest: str) -> Leaf | None:
    """The first leaf holding ``digest`` (a digest logged twice is proved by its first). A record's own
    digest is found through its table's index and the block of its row; a leaf of any other kind (a
    row logged by what it holds, or a record edited since it was logged) by searching the blocks."""
    raw = raw_digest(digest)
    if raw is None:  # every leaf is a sha256 digest
        return None
    hits = []
    for table_id, seq in conn.execute(_HOLDING, {"digest": digest}):
        leaf = _leaf_of_row(conn, int(table_id), int(seq))
        if leaf is not None and leaf.digest == digest:
            hits.append(leaf)
    if hits:
        return min(hits, key=lambda leaf: leaf.index)
    return _searched(conn, raw)


def _searched(conn: Connection, raw: bytes) -> Leaf | None:
    """The first leaf holding ``raw``, found by a byte search of the blocks (an aligned match only)."""
    contains = "instr(digests, :raw) > 0" if conn.dialect.name == "sqlite" else "position(:raw in digests) > 0"
    rows = conn.execute(select(*SELECTED).where(text(contains)).order_by(log_blocks.c.first_idx), {"raw": raw})
    for row in rows:
        block = Block.of_row(row)
        at = block.digests.find(raw)
        while at >= 0 and at % DIGEST_BYTES:
            at = block.digests.find(raw, at + 1)
        if at >= 0:
            return Leaf.in_block(block, block.first + at // DIGEST_BYTES)
    return None


def inclusion_proof(conn: Connection, index: int, size: int) -> list[bytes]:
    return merkle.hashes_of(merkle.inclusion_ranges(index, size), lambda wanted: fetch_nodes(conn, wanted))


def consistency_proof(conn: Connection, old: int, new: int) -> list[bytes]:
    return merkle.hashes_of(merkle.consistency_ranges(old, new), lambda wanted: fetch_nodes(conn, wanted))
