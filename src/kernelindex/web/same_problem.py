"""A workload page's "Other evidence for this problem".

Our problem packs write their OperationSpec the way the upstream catalog does, so a pack shares the
upstream operation record (same semantic digest) but has workload records of its own. A reader of
an upstream workload (e.g. a seed run's suite) should find our pack for the same problem even before
it has runs, and a reader of our pack's workload should find the way back. Runs on those other
workloads are shown in their own comparison groups, labelled by workload, protocol and environment,
and never ranked with the page's own groups.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, select

from kernelindex.ranking.reads import ranked_groups
from kernelindex.store.reads.catalog import operation_names, related_operation_ids
from kernelindex.store.reads.runs import manifest_title
from kernelindex.store.tables import operations, runs, workloads
from kernelindex.web.origins import Origins, Pack, pack_summary
from kernelindex.web.views import GROUP_ROWS_SHOWN, groups_view, workload_view


def _groups_of(conn: Connection, workload_ids: list[str], limit: int | None) -> list[dict[str, Any]]:
    """Ranked groups of the runs on ``workload_ids``, each labelled with its workload."""
    if not workload_ids:
        return []
    keys = [k for (k,) in conn.execute(select(runs.c.comparison_key).distinct().where(
        runs.c.workload_id.in_(workload_ids), runs.c.comparison_key.isnot(None)))]
    groups = groups_view(conn, ranked_groups(conn, keys), limit)
    if not groups:
        return groups
    titles = {w.id: w.title or w.name for w in conn.execute(
        select(workloads.c.id, workloads.c.name, manifest_title(workloads.c.manifest).label("title"))
        .where(workloads.c.id.in_(workload_ids)))}
    wl_of_key = dict(conn.execute(select(runs.c.comparison_key, runs.c.workload_id).distinct()
                                  .where(runs.c.comparison_key.in_(keys))).all())
    for g in groups:
        wid = wl_of_key.get(g["comparisonKey"])
        g["workload"] = {"id": wid, "title": titles.get(wid)}
    return groups


def _pack_entry(conn: Connection, pack: Pack, limit: int | None) -> dict[str, Any]:
    entry = pack_summary(conn, pack)
    entry["groups"] = _groups_of(conn, entry["workloadIds"], limit)
    return entry


def _upstream_workloads(conn: Connection, operation_ids: list[str], origins: Origins) -> list[dict[str, Any]]:
    """Workloads of the problem that no pack of ours made, busiest first, suites before cases."""
    ours = origins.pack_workload_digests
    rows = [w for w in conn.execute(
        select(workloads.c.id, workloads.c.seq, workloads.c.workload_digest, workloads.c.kind, workloads.c.name,
               manifest_title(workloads.c.manifest).label("title"))
        .where(workloads.c.operation_id.in_(operation_ids)).order_by(workloads.c.seq))
        if w.workload_digest not in ours]
    counts = dict(conn.execute(select(runs.c.workload_id, func.count()).group_by(runs.c.workload_id)
                               .where(runs.c.workload_id.in_([w.id for w in rows]))).all()) if rows else {}
    items = [{"id": w.id, "title": w.title or w.name, "kind": w.kind, "runCount": counts.get(w.id, 0),
              "href": f"/workloads/{w.id}"} for w in rows]
    items.sort(key=lambda w: (-w["runCount"], w["kind"] != "WorkloadSuite"))
    return items


def problem_evidence(conn: Connection, row, origins: Origins, limit: int | None) -> dict[str, Any]:
    """``pack`` (this workload's own pack, if any), ``ourPacks`` (on an upstream workload),
    ``upstream`` (on a pack workload) and ``otherEvidence`` (groups of the other workloads)."""
    empty = {"pack": None, "ourPacks": [], "upstream": [], "otherEvidence": []}
    if not row.operation_id:
        return empty
    related = related_operation_ids(conn, row.operation_id)
    own = origins.pack_of(row.workload_digest)
    ours = origins.pack_workload_digests
    if own is None:
        digests = set(conn.scalars(select(operations.c.semantic_digest)
                                   .where(operations.c.id.in_([row.operation_id, *related]))))
        packs = origins.packs_for(digests, operation_names(conn, row.operation_id))
        # Related operation records' own workloads (not ours: those are listed with their pack).
        others = [w.id for w in conn.execute(select(workloads.c.id, workloads.c.workload_digest)
                                             .where(workloads.c.operation_id.in_(related)))
                  if w.workload_digest not in ours]
        return {**empty, "ourPacks": [_pack_entry(conn, p, limit) for p in packs],
                "otherEvidence": _groups_of(conn, others, limit)}
    upstream = _upstream_workloads(conn, [row.operation_id, *related], origins)
    return {**empty, "pack": {"folder": own.folder, "name": own.name, "caseCount": len(own.case_digests)},
            "upstream": upstream,
            "otherEvidence": _groups_of(conn, [w["id"] for w in upstream if w["runCount"]], limit)}


def workload_page_view(conn: Connection, row, origins: Origins, limit: int | None = GROUP_ROWS_SHOWN) -> dict[str, Any]:
    """The workload page (and its JSON): its own ranked groups, then the rest of the problem's evidence."""
    view = workload_view(conn, row, limit)
    view.update(problem_evidence(conn, row, origins, limit))
    return view
