"""Checking the log against the records (part of ``kernelindex verify``).

Recomputed from what is stored, trusting neither the records nor the log: every record row has
one leaf, every leaf names a row that is there, a leaf's digest is the row's content digest as
the row now reads, each table's leaves follow its rows' order, the leaves are numbered 0..n-1,
and every stored subtree hash is the one the leaves give. An edited, removed, added-behind-the-
store's-back or reordered record fails one of these. A history rewritten consistently (records,
leaves and nodes together) passes them all: only a checkpoint saved outside catches that
(``kernelindex log check``), which is what the signed checkpoints are for.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, select

from kernelindex.records import merkle
from kernelindex.store.transparency.blocks import SELECTED, Block
from kernelindex.store.transparency.leaves import BY_ID, LOGGED, digest_text, leaf_hash
from kernelindex.store.transparency.tables import DIGEST_BYTES, KEPT_LEVEL, SEQ_BYTES, log_blocks, log_nodes

Check = tuple[str, str, list[tuple[str, Any, Any]]]  # (table, id, [(field, stored, recomputed)])


def _block_checks(block: Block, seqs: list[int]) -> list[tuple[str, Any, Any]]:
    """What a block says of itself that does not add up: lengths, and its denormalised first and last seq."""
    checks: list[tuple[str, Any, Any]] = []
    if len(block.digests) % DIGEST_BYTES or len(block.seqs) != SEQ_BYTES * block.size:
        shown = f"{len(block.digests)} digest bytes, {len(block.seqs)} seq bytes"
        checks.append(("lengths", shown, f"{DIGEST_BYTES} and {SEQ_BYTES} bytes per leaf"))
    if seqs and (block.first_seq, block.last_seq) != (seqs[0], seqs[-1]):
        checks.append(("first_seq, last_seq", (block.first_seq, block.last_seq), (seqs[0], seqs[-1])))
    return checks


def log_checks(conn: Connection) -> Iterator[Check]:
    stream = conn.execution_options(stream_results=True, yield_per=200)
    leaves_of: dict[int, dict[int, tuple[int, str]]] = {logged.id: {} for logged in LOGGED}
    unknown: list[tuple[int, int]] = []
    edge: list[tuple[int, bytes]] = []
    computed: dict[merkle.Node, bytes] = {}
    pending: list[bytes] = []  # leaf hashes not yet added to the tree: its leaves from ``hashed`` on
    hashed = expected = 0  # the tree is of the leaves in order, whatever their numbers say
    for row in stream.execute(select(*SELECTED).order_by(log_blocks.c.first_idx)):
        block = Block.of_row(row)
        if block.first != expected:
            yield "log_blocks", str(block.first), [("first_idx", block.first, expected)]
        expected = block.end
        seqs = block.row_seqs()
        if checks := _block_checks(block, seqs):
            yield "log_blocks", str(block.first), checks
        if block.table_id not in leaves_of:
            unknown.append((block.first, block.table_id))
        for k, leaf in enumerate(block.leaves()):
            if block.table_id in leaves_of and k < len(seqs):
                leaves_of[block.table_id][seqs[k]] = (block.first + k, digest_text(leaf))
            pending.append(leaf_hash(leaf))
        if len(pending) >= 2000:
            computed.update(merkle.append(edge, pending, hashed, KEPT_LEVEL))
            hashed += len(pending)
            pending.clear()
    computed.update(merkle.append(edge, pending, hashed, KEPT_LEVEL))
    for first, table in unknown:
        yield "log_blocks", str(first), [("table_id", table, f"one of {sorted(BY_ID)}")]
    for key, value in stream.execute(select(log_nodes.c.node, log_nodes.c.hash)):
        level, index = int(key) & 63, int(key) >> 6
        want = computed.pop((level, index), None)
        if want != bytes(value):
            shown = None if want is None else want.hex()
            yield "log_nodes", f"{level}/{index}", [("hash", bytes(value).hex(), shown)]
    for (level, index), want in computed.items():
        yield "log_nodes", f"{level}/{index}", [("hash", None, want.hex())]
    for logged in LOGGED:
        yield from _table_checks(conn, logged, leaves_of[logged.id])


def _table_checks(conn: Connection, logged, leaves: dict[int, tuple[int, str]]) -> Iterator[Check]:
    table = logged.table
    stream = conn.execution_options(stream_results=True, yield_per=2000)
    last_index = -1
    for row in stream.execute(select(*logged.selected()).order_by(table.c.seq)):
        seq = row[0]
        found = leaves.pop(seq, None)
        recomputed = logged.leaf_digest(row)
        where = f"{table.name} seq {seq}"
        if found is None:
            yield "log_blocks", where, [("leaf", None, recomputed)]
            continue
        index, stored = found
        checks: list[tuple[str, Any, Any]] = [(f"leaf {index} digest", stored, recomputed)]
        if index < last_index:
            checks.append((f"leaf {index} order", f"after leaf {last_index}", f"before leaf {last_index}"))
        last_index = max(last_index, index)
        yield "log_blocks", where, checks
    for seq, (index, stored) in sorted(leaves.items()):
        yield "log_blocks", f"leaf {index}", [(f"{table.name} seq {seq}", None, stored)]


def count_log_checks(conn: Connection) -> int:
    """How many checks :func:`log_checks` yields on an intact store: one per record row."""
    from sqlalchemy import func

    return sum(conn.scalar(select(func.count()).select_from(logged.table)) or 0 for logged in LOGGED)
