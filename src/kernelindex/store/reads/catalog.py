"""Operations, workloads and sources: listings, search, and the rows an operation or source page shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, func, or_, select

from kernelindex.store import tables as t
from kernelindex.store.reads.lookup import operation_clause
from kernelindex.store.reads.runs import manifest_title
from kernelindex.store.serving import tables as serving_tables

o, w, r, s, aliases = t.operations, t.workloads, t.runs, t.sources, t.operation_aliases
OPERATION_COLUMNS = (o.c.seq, o.c.id, o.c.slug, o.c.name, o.c.family, o.c.semantic_digest, o.c.tags)


def page(conn: Connection, query, seq_column, after: int | None, limit: int) -> tuple[Sequence[Row], int | None]:
    """Keyset paging: up to ``limit`` rows after ``after``, and the ``seq`` to continue from (None: no more)."""
    if after is not None:
        query = query.where(seq_column > after)
    rows = conn.execute(query.order_by(seq_column).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].seq if more and rows else None)


def count_by(conn: Connection, column, where) -> dict[Any, int]:
    return dict(conn.execute(select(column, func.count()).where(where).group_by(column)).all())


def workload_counts(conn: Connection, operation_ids: list[str]) -> dict[str, int]:
    return count_by(conn, w.c.operation_id, w.c.operation_id.in_(operation_ids))


def list_operations(
    conn: Connection, after: int | None, limit: int, family: str | None
) -> tuple[Sequence[Row], int | None]:
    query = select(*OPERATION_COLUMNS)
    if family:
        query = query.where(o.c.family == family)
    return page(conn, query, o.c.seq, after, limit)


def operations_by_name(conn: Connection, offset: int, limit: int) -> tuple[Sequence[Row], int | None]:
    """Operations A to Z by name (slug where unnamed), ``limit`` from ``offset``, and the next offset (None: no more)."""
    name = func.lower(func.coalesce(o.c.name, o.c.slug))
    rows = conn.execute(select(*OPERATION_COLUMNS).order_by(name, o.c.seq).offset(offset).limit(limit + 1)).all()
    return rows[:limit], (offset + limit if len(rows) > limit else None)


def operations_by_id(conn: Connection, ids: list[str]) -> Sequence[Row]:
    return conn.execute(select(*OPERATION_COLUMNS).where(o.c.id.in_(ids)).order_by(o.c.seq)).all()


def operation_by_id(conn: Connection, operation_id: str | None) -> Row | None:
    return conn.execute(select(o).where(o.c.id == operation_id)).first() if operation_id else None


def aliases_of(conn: Connection, operation_id: str) -> list[str]:
    return sorted(conn.scalars(select(aliases.c.alias).where(aliases.c.operation_id == operation_id)))


def operation_names(conn: Connection, operation_id: str) -> set[str]:
    """The operation's name and aliases."""
    name = conn.scalar(select(o.c.name).where(o.c.id == operation_id))
    return set(aliases_of(conn, operation_id)) | ({name} if name else set())


def related_operation_ids(conn: Connection, operation_id: str) -> list[str]:
    """Other operations that share a name or alias with this one (e.g. our own problem packs)."""
    names = operation_names(conn, operation_id)
    if not names:
        return []
    by_alias = select(aliases.c.operation_id).where(aliases.c.alias.in_(names))
    query = select(o.c.id).where(or_(o.c.name.in_(names), o.c.id.in_(by_alias)), o.c.id != operation_id)
    return sorted(set(conn.scalars(query)))


def workloads_of(conn: Connection, operation_id: str) -> list[tuple[Row, int]]:
    """The operation's workloads with their run counts, in arrival order."""
    counts = count_by(
        conn, r.c.workload_id, r.c.workload_id.in_(select(w.c.id).where(w.c.operation_id == operation_id))
    )
    rows = conn.execute(
        select(w.c.id, w.c.name, w.c.kind, w.c.shape_summary, manifest_title(w.c.manifest).label("title"))
        .where(w.c.operation_id == operation_id)
        .order_by(w.c.seq)
    ).all()
    return [(row, counts.get(row.id, 0)) for row in rows]


def list_workloads(
    conn: Connection, after: int | None, limit: int, operation: str | None
) -> tuple[Sequence[Row], int | None]:
    query = select(
        w.c.seq,
        w.c.id,
        w.c.workload_digest,
        w.c.kind,
        w.c.shape_summary,
        manifest_title(w.c.manifest).label("title"),
        o.c.slug,
    ).outerjoin(o, o.c.id == w.c.operation_id)
    if operation:  # named as the run listing names it: every operation the text could name
        query = query.where(operation_clause(operation))
    return page(conn, query, w.c.seq, after, limit)


def run_counts_by_source(conn: Connection, source_id: str | None = None) -> dict[str, int]:
    return count_by(
        conn, r.c.source_id, r.c.source_id.is_not(None) if source_id is None else r.c.source_id == source_id
    )


def serving_counts_by_source(conn: Connection) -> dict[str, int]:
    """source id -> how many serving runs it holds (MLPerf's results are serving runs, not kernel runs)."""
    sr = serving_tables.serving_runs
    return count_by(conn, sr.c.source_id, sr.c.source_id.is_not(None))


def data_as_of(conn: Connection) -> dict[str, str]:
    """source id -> the newest time its records state (published, else observed): how current its data is,
    whenever it was imported here."""
    newest: dict[str, str] = {}
    for table in (r, serving_tables.serving_runs):
        stated = func.max(func.coalesce(table.c.published_at, table.c.observed_at))
        for source_id, at in conn.execute(
            select(table.c.source_id, stated).where(table.c.source_id.is_not(None)).group_by(table.c.source_id)
        ):
            if at and at > newest.get(source_id, ""):
                newest[source_id] = at
    return newest


def list_sources(conn: Connection) -> Sequence[Row]:
    return conn.execute(select(s).order_by(s.c.seq)).all()


def source_by_slug(conn: Connection, slug: str) -> Row | None:
    return conn.execute(select(s).where(s.c.slug == slug)).first()


def operations_of_source(conn: Connection, source_id: str) -> Sequence[Row]:
    """The operations a source has runs for, most runs first."""
    return conn.execute(
        select(o.c.slug, o.c.name, func.count(r.c.id).label("n"))
        .join(w, w.c.operation_id == o.c.id)
        .join(r, r.c.workload_id == w.c.id)
        .where(r.c.source_id == source_id)
        .group_by(o.c.slug, o.c.name)
        .order_by(func.count(r.c.id).desc(), o.c.slug)
    ).all()


def comparison_keys_of(conn: Connection, workload_ids: list[str]) -> list[str]:
    """The comparison keys of the runs on these workloads."""
    return list(
        conn.scalars(
            select(r.c.comparison_key)
            .distinct()
            .where(r.c.workload_id.in_(workload_ids), r.c.comparison_key.is_not(None))
        )
    )


def workload_of_keys(conn: Connection, keys: list[str]) -> dict[str, str]:
    """Comparison key -> the workload its runs are on (the key includes the workload)."""
    return dict(
        conn.execute(select(r.c.comparison_key, r.c.workload_id).distinct().where(r.c.comparison_key.in_(keys))).all()
    )


def workload_titles(conn: Connection, workload_ids: list[str]) -> dict[str, str | None]:
    return {
        row.id: row.title or row.name
        for row in conn.execute(
            select(w.c.id, w.c.name, manifest_title(w.c.manifest).label("title")).where(w.c.id.in_(workload_ids))
        )
    }


def workloads_of_operations(conn: Connection, operation_ids: list[str]) -> Sequence[Row]:
    """The workloads of these operations, in arrival order, with their titles."""
    return conn.execute(
        select(w.c.id, w.c.seq, w.c.workload_digest, w.c.kind, w.c.name, manifest_title(w.c.manifest).label("title"))
        .where(w.c.operation_id.in_(operation_ids))
        .order_by(w.c.seq)
    ).all()


def run_counts_by_workload(conn: Connection, workload_ids: list[str]) -> dict[str, int]:
    return count_by(conn, r.c.workload_id, r.c.workload_id.in_(workload_ids)) if workload_ids else {}


def semantic_digests(conn: Connection, operation_ids: list[str]) -> set[str]:
    return set(conn.scalars(select(o.c.semantic_digest).where(o.c.id.in_(operation_ids))))


def workloads_by_digest(conn: Connection, digests: list[str]) -> Sequence[Row]:
    return conn.execute(select(w.c.id, w.c.workload_digest, w.c.kind).where(w.c.workload_digest.in_(digests))).all()
