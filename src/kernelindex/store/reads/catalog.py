"""Operations, workloads and sources: listings, search, and the rows an operation or source page shows."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, exists, func, or_, select

from kernelindex.store import tables as t
from kernelindex.store.reads.runs import manifest_title

o, w, r, s, aliases = t.operations, t.workloads, t.runs, t.sources, t.operation_aliases
OPERATION_COLUMNS = (o.c.seq, o.c.id, o.c.slug, o.c.name, o.c.family, o.c.semantic_digest, o.c.tags)


def page(conn: Connection, query, seq_column, after: int | None, limit: int) -> tuple[list[Row], int | None]:
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


def _escaped_like(q: str) -> str:
    return "%" + q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def search_operations(conn: Connection, q: str, after: int | None, limit: int) -> tuple[list[Row], int | None]:
    """Operations whose name, slug, alias or family match ``q``, or that have runs from a matching
    source or on matching hardware (case-insensitive substring)."""
    query = select(*OPERATION_COLUMNS)
    if q:
        like = _escaped_like(q)

        def matches(column):
            return func.lower(column).like(like, escape="\\")

        alias_ops = select(aliases.c.operation_id).where(matches(aliases.c.alias))
        # Hardware and sources are matched in their own small tables first; then each workload
        # needs just one run under a matching environment or source (EXISTS stops at the first).
        e = t.environments
        envs = list(
            conn.scalars(
                select(e.c.environment_digest).where(
                    or_(matches(e.c.hardware_model), matches(e.c.hardware_architecture), matches(e.c.hardware_vendor))
                )
            )
        )
        srcs = list(conn.scalars(select(s.c.id).where(or_(matches(s.c.slug), matches(s.c.name)))))
        found = [o.c.id.in_(alias_ops)]
        if envs or srcs:
            has_run = exists().where(
                r.c.workload_id == w.c.id, or_(r.c.environment_key.in_(envs), r.c.source_id.in_(srcs))
            )
            found.append(o.c.id.in_(select(w.c.operation_id).where(has_run)))
        query = query.where(or_(matches(o.c.name), matches(o.c.slug), matches(o.c.family), *found))
    return page(conn, query, o.c.seq, after, limit)


def list_operations(
    conn: Connection, after: int | None, limit: int, family: str | None
) -> tuple[list[Row], int | None]:
    query = select(*OPERATION_COLUMNS)
    if family:
        query = query.where(o.c.family == family)
    return page(conn, query, o.c.seq, after, limit)


def operations_by_id(conn: Connection, ids: list[str]) -> list[Row]:
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
) -> tuple[list[Row], int | None]:
    query = select(
        w.c.seq,
        w.c.id,
        w.c.workload_digest,
        w.c.kind,
        w.c.shape_summary,
        manifest_title(w.c.manifest).label("title"),
        o.c.slug,
    ).outerjoin(o, o.c.id == w.c.operation_id)
    if operation:
        query = query.where(o.c.slug == operation)
    return page(conn, query, w.c.seq, after, limit)


def run_counts_by_source(conn: Connection, source_id: str | None = None) -> dict[str, int]:
    return count_by(
        conn, r.c.source_id, r.c.source_id.is_not(None) if source_id is None else r.c.source_id == source_id
    )


def list_sources(conn: Connection) -> list[Row]:
    return conn.execute(select(s).order_by(s.c.seq)).all()


def source_by_slug(conn: Connection, slug: str) -> Row | None:
    return conn.execute(select(s).where(s.c.slug == slug)).first()


def operations_of_source(conn: Connection, source_id: str) -> list[Row]:
    """The operations a source has runs for, most runs first."""
    return conn.execute(
        select(o.c.slug, o.c.name, func.count(r.c.id).label("n"))
        .join(w, w.c.operation_id == o.c.id)
        .join(r, r.c.workload_id == w.c.id)
        .where(r.c.source_id == source_id)
        .group_by(o.c.slug, o.c.name)
        .order_by(func.count(r.c.id).desc(), o.c.slug)
    ).all()
