"""The ranked groups a person names (``kernelindex rank TARGET`` and ``GET /api/v1/rankings?target=``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelindex.ranking.reads import ranked_groups, workload_groups
from kernelindex.store.reads.lookup import resolve_rank_target
from kernelindex.web import views

if TYPE_CHECKING:
    from sqlalchemy import Connection


def rank_groups(conn: Connection, target: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Every ranked group of the comparison key, workload, operation or run ``target`` names, best ``limit`` rows
    of each; raises :class:`~kernelindex.store.reads.lookup.LookupFailed` when it names nothing."""
    found = resolve_rank_target(conn, target)
    if found.comparison_key is not None:
        ranked = ranked_groups(conn, [found.comparison_key])
    else:
        ranked = {k: g for w in found.workload_ids for k, g in workload_groups(conn, w).items()}
    return views.groups_view(conn, ranked, limit)
