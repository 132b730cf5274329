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

from sqlalchemy import Connection, func, literal, select, union_all

from kernelindex.records import merkle
from kernelindex.store.bulk import insert_rows
from kernelindex.store.transparency.leaves import LOGGED, leaf_hash
from kernelindex.store.transparency.reads import fetch_nodes, tree_size
from kernelindex.store.transparency.tables import log_leaves, log_nodes, node_key

BATCH = 5000


def _heads(conn: Connection) -> dict[str, tuple[int, int]]:
    """table -> (its last seq, the last seq of it that the log holds), in one statement."""
    parts = [
        select(
            literal(logged.name).label("name"),
            select(func.max(logged.table.c.seq)).scalar_subquery().label("last"),
            select(func.max(log_leaves.c.row_seq))
            .where(log_leaves.c.table_name == logged.name)
            .scalar_subquery()
            .label("logged"),
        )
        for logged in LOGGED
    ]
    return {name: (last or 0, logged or 0) for name, last, logged in conn.execute(union_all(*parts))}


def right_edge(conn: Connection, size: int) -> list[tuple[int, bytes]]:
    """The perfect subtrees along the right edge of the tree of ``size`` leaves, biggest first."""
    cover = merkle.perfect_cover(0, size)
    nodes = fetch_nodes(conn, set(cover))
    return [(level, nodes[(level, index)]) for level, index in cover]


def log_new_records(conn: Connection) -> int:
    """Append a leaf for every record row not in the log yet; returns how many went in."""
    heads = _heads(conn)
    behind = [(logged, heads[logged.name][1]) for logged in LOGGED if heads[logged.name][0] > heads[logged.name][1]]
    if not behind:
        return 0
    size = tree_size(conn)
    edge = right_edge(conn, size)
    rebuild = _drop_indexes_if_new(conn, size)
    leaves: list[dict] = []
    nodes: list[dict] = []

    def flush() -> None:
        insert_rows(conn, log_leaves, leaves)
        insert_rows(conn, log_nodes, nodes)
        leaves.clear()
        nodes.clear()

    added = 0
    for logged, seen in behind:
        table = logged.table
        columns = (table.c.seq, *(table.c[c] for c in logged.columns))
        while True:  # a page at a time, each read whole before the inserts (no cursor left open)
            query = select(*columns).where(table.c.seq > seen).order_by(table.c.seq).limit(BATCH)
            rows = conn.execute(query).mappings().all()
            if not rows:
                break
            for row in rows:
                leaf = logged.leaf_digest(row)
                index = size + added
                leaves.append({"idx": index, "digest": leaf, "table_name": logged.name, "row_seq": row["seq"]})
                nodes.extend(
                    {"node": node_key(level, at), "hash": value}
                    for (level, at), value in merkle.extend(edge, leaf_hash(leaf), index)
                )
                added += 1
            seen = rows[-1]["seq"]
            flush()
    for statement in rebuild:
        conn.exec_driver_sql(statement)
    return added


_LEAF_INDEXES = ("ix_log_leaves_digest", "ix_log_leaves_table_name_row_seq")


def _drop_indexes_if_new(conn: Connection, size: int) -> list[str]:
    """On SQLite, a log still empty (a new store's first import) takes its leaves without its two
    secondary indexes, built again from them at the end: one sort each instead of a random B-tree
    insert per leaf. Inside the transaction, so a rollback restores them. Returns the statements
    that build them again."""
    if size or conn.dialect.name != "sqlite":
        return []
    statements = []
    for name in _LEAF_INDEXES:
        found = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)).first()
        if found is None:
            continue
        conn.exec_driver_sql(f'DROP INDEX "{name}"')
        statements.append(found[0])
    return statements
