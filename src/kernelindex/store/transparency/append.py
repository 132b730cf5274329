"""Appending every record not yet in the log, at the end of the transaction that stored it.

Nothing that writes records has to call this: :func:`kernelindex.store.database.write_transaction`
does, before it commits any transaction that wrote (the store generation says so), so an import, an
attestation, a retraction or a raw statement through the store all land in the log with their
rows, and a rollback takes both back. Writers take turns (one writing transaction at a time on
both backends), so the rows past the last one a table has in the log are exactly the new ones:
each table's rows go in by ``seq``, tables in :data:`~kernelindex.store.transparency.leaves.LOGGED`
order, which makes the leaf order a pure function of the order of the writes.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from kernelindex.records import merkle
from kernelindex.store.bulk import insert_values
from kernelindex.store.database import bulk_settings
from kernelindex.store.transparency.blocks import COLUMNS, block_rows
from kernelindex.store.transparency.leaves import LOGGED, Logged, known_leaves, leaf_hashes
from kernelindex.store.transparency.reads import fetch_nodes, tree_size
from kernelindex.store.transparency.tables import KEPT_LEVEL, log_blocks, log_nodes, node_key

NODE_COLUMNS = ("node", "hash")
ROWS_PER_STATEMENT = 500  # nodes or blocks per SQLite INSERT (bulk.insert_values)


# one statement: for each logged table, its last seq and the last of its rows the log holds
_HEADS = " UNION ALL ".join(
    f"SELECT {logged.id}, (SELECT max(seq) FROM {logged.name}), "
    f"(SELECT max(last_seq) FROM log_blocks WHERE table_id = {logged.id})"
    for logged in LOGGED
)


def _heads(conn: Connection) -> dict[int, tuple[int, int]]:
    """table number -> (its last seq, the last seq of it that the log holds)."""
    rows = conn.exec_driver_sql(_HEADS)
    return {int(number): (last or 0, logged or 0) for number, last, logged in rows}


def right_edge(conn: Connection, size: int) -> list[tuple[int, bytes]]:
    """The perfect subtrees along the right edge of the tree of ``size`` leaves, biggest first."""
    cover = merkle.perfect_cover(0, size)
    nodes = fetch_nodes(conn, set(cover))
    return [(level, nodes[(level, index)]) for level, index in cover]


def log_new_records(conn: Connection) -> int:
    """Append a leaf for every record row not in the log yet; returns how many went in."""
    heads = _heads(conn)
    behind = [(logged, heads[logged.id][1]) for logged in LOGGED if heads[logged.id][0] > heads[logged.id][1]]
    if not behind:
        return 0
    # an import's large page cache again (its own settings ended with its block, before this runs
    # at the commit): with the default one, SQLite spills the transaction's dirty pages to append
    with bulk_settings(conn):
        return _append(conn, behind)


def _append(conn: Connection, behind: list[tuple[Logged, int]]) -> int:
    """Each table's rows past ``seq`` ``seen``, a page at a time, their leaves in blocks (a few hundred
    rows for an import's tens of thousands of leaves); then the nodes they complete, hashed a level at a
    time from the right edge (one read of a few nodes per append), from the leaves of the whole append
    kept until then (32 bytes each). The pages are read by the driver's own cursor: plain tuples, no
    result object per row."""
    size = tree_size(conn)
    edge = right_edge(conn, size)
    known = known_leaves(conn)
    leaves: list[bytes] = []
    blocks: list[tuple[Any, ...]] = []
    driver: Any = conn.connection.dbapi_connection
    cursor = driver.cursor()
    try:
        for logged, seen in behind:
            sql = logged.new_rows_sql(conn.dialect.name)
            while True:  # each page read whole (no cursor left open)
                cursor.execute(sql, (seen,))
                rows = cursor.fetchall()
                if not rows:
                    break
                digests = logged.leaf_digests(rows, known)
                seqs = [row[0] for row in rows]
                blocks += block_rows(size + len(leaves), logged.id, digests, seqs)
                leaves += digests
                seen = seqs[-1]
    finally:
        cursor.close()
    insert_values(conn, log_blocks, COLUMNS, blocks, rows_per_statement=ROWS_PER_STATEMENT)
    found = merkle.append(edge, leaf_hashes(leaves), size, KEPT_LEVEL)
    nodes = [(node_key(*node), bytearray(value)) for node, value in found]
    insert_values(conn, log_nodes, NODE_COLUMNS, nodes, rows_per_statement=ROWS_PER_STATEMENT)
    return len(leaves)
