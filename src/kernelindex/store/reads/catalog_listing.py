"""Keyset-paged listings of projects and implementations (``/projects``, ``/implementations`` and their
JSON twins): rows after a sequence number, with how many implementations and runs each holds."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, select

from kernelindex.store.reads.lookup import contains_pattern
from kernelindex.store.tables import implementations, operations, projects, runs


def projects_page(
    conn: Connection, after: int | None, limit: int, name: str | None = None
) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``limit`` projects after sequence ``after``, with their implementation and run counts."""
    impl_count = (
        select(func.count())
        .select_from(implementations)
        .where(implementations.c.project_id == projects.c.id)
        .scalar_subquery()
    )
    run_count = (
        select(func.count())
        .select_from(runs.join(implementations, runs.c.implementation_id == implementations.c.id))
        .where(implementations.c.project_id == projects.c.id)
        .scalar_subquery()
    )
    query = select(
        projects.c.seq,
        projects.c.id,
        projects.c.slug,
        projects.c.name,
        impl_count.label("implementations"),
        run_count.label("runs"),
    ).order_by(projects.c.seq)
    if after is not None:
        query = query.where(projects.c.seq > after)
    if name:
        pattern = contains_pattern(name)
        query = query.where(
            func.lower(projects.c.slug).like(pattern, escape="\\")
            | func.lower(projects.c.name).like(pattern, escape="\\")
        )
    rows = [dict(r) for r in conn.execute(query.limit(limit + 1)).mappings()]
    more = len(rows) > limit
    return rows[:limit], (rows[limit - 1]["seq"] if more else None)


def implementations_page(
    conn: Connection, after: int | None, limit: int, operation_id: str | None = None, project_id: str | None = None
) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``limit`` implementations after sequence ``after``, with their project, operation and run count."""
    run_count = (
        select(func.count()).select_from(runs).where(runs.c.implementation_id == implementations.c.id).scalar_subquery()
    )
    query = (
        select(
            implementations.c.seq,
            implementations.c.id,
            implementations.c.slug,
            implementations.c.title,
            implementations.c.language,
            implementations.c.implementation_digest,
            projects.c.slug.label("project_slug"),
            projects.c.name.label("project_name"),
            operations.c.slug.label("operation_slug"),
            operations.c.name.label("operation_name"),
            run_count.label("runs"),
        )
        .select_from(
            implementations.outerjoin(projects, implementations.c.project_id == projects.c.id).outerjoin(
                operations, implementations.c.operation_id == operations.c.id
            )
        )
        .order_by(implementations.c.seq)
    )
    if after is not None:
        query = query.where(implementations.c.seq > after)
    if operation_id:
        query = query.where(implementations.c.operation_id == operation_id)
    if project_id:
        query = query.where(implementations.c.project_id == project_id)
    rows = [dict(r) for r in conn.execute(query.limit(limit + 1)).mappings()]
    more = len(rows) > limit
    return rows[:limit], (rows[limit - 1]["seq"] if more else None)
