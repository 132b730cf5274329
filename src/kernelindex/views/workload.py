"""A workload: its own ranked groups, then the page's "Other evidence for this problem".

Our problem packs write their OperationSpec the way the upstream catalog does, so a pack shares the
upstream operation record (same semantic digest) but has workload records of its own. A reader of
an upstream workload (e.g. a seed run's suite) should find our pack for the same problem even before
it has runs, and a reader of our pack's workload should find the way back. Runs on those other
workloads are shown in their own comparison groups, labelled by workload, protocol and environment,
and never ranked with the page's own groups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelindex.ranking.reads import ranked_groups, workload_groups
from kernelindex.store.reads import catalog
from kernelindex.views.common import GROUP_ROWS_SHOWN
from kernelindex.views.origins import Origins, Pack, pack_summary
from kernelindex.views.rank import groups_view

if TYPE_CHECKING:
    from sqlalchemy import Connection


def workload_view(conn: Connection, row, limit: int | None = GROUP_ROWS_SHOWN) -> dict[str, Any]:
    """The workload's own groups; :mod:`kernelindex.views.workload` adds the other evidence."""
    manifest = row.manifest or {}
    spec = manifest.get("spec") or {}
    operation = catalog.operation_by_id(conn, row.operation_id)
    shown = [g.model_dump() for g in groups_view(conn, workload_groups(conn, row.id), limit)]
    return {
        "id": row.id,
        "digest": row.workload_digest,
        "kind": row.kind,
        "title": (manifest.get("metadata") or {}).get("title") or row.name or row.id,
        "shapeSummary": row.shape_summary,
        "dtypes": row.dtypes,
        "correctness": spec.get("correctness"),
        "axes": spec.get("axes"),
        "caseCount": len(spec.get("cases") or []) or None,
        "aggregation": spec.get("aggregation"),
        "operation": {"slug": operation.slug, "name": operation.name, "family": operation.family}
        if operation is not None
        else None,
        "groups": shown,
        "runCount": sum(g["size"] + len(g["excluded"]) for g in shown),
        "manifest": manifest,
        "links": {"self": f"/workloads/{row.id}", "json": f"/api/v1/workloads/{row.id}"},
    }


def list_workloads(conn: Connection, after: int | None, limit: int, operation: str | None) -> tuple[list, int | None]:
    rows, nxt = catalog.list_workloads(conn, after, limit, operation)
    return [
        {
            "id": w.id,
            "digest": w.workload_digest,
            "kind": w.kind,
            "title": w.title,
            "shapeSummary": w.shape_summary,
            "operation": w.slug,
            "links": {"self": f"/workloads/{w.id}", "json": f"/api/v1/workloads/{w.id}"},
        }
        for w in rows
    ], nxt


def _groups_of(conn: Connection, workload_ids: list[str], limit: int | None) -> list[dict[str, Any]]:
    """Ranked groups of the runs on ``workload_ids``, each labelled with its workload."""
    if not workload_ids:
        return []
    keys = catalog.comparison_keys_of(conn, workload_ids)
    groups = [g.model_dump() for g in groups_view(conn, ranked_groups(conn, keys), limit)]
    if not groups:
        return groups
    titles = catalog.workload_titles(conn, workload_ids)
    wl_of_key = catalog.workload_of_keys(conn, keys)
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
    rows = [w for w in catalog.workloads_of_operations(conn, operation_ids) if w.workload_digest not in ours]
    counts = catalog.run_counts_by_workload(conn, [w.id for w in rows])
    items = [
        {
            "id": w.id,
            "title": w.title or w.name,
            "kind": w.kind,
            "runCount": counts.get(w.id, 0),
            "href": f"/workloads/{w.id}",
        }
        for w in rows
    ]
    items.sort(key=lambda w: (-w["runCount"], w["kind"] != "WorkloadSuite"))
    return items


def problem_evidence(conn: Connection, row, origins: Origins, limit: int | None) -> dict[str, Any]:
    """``pack`` (this workload's own pack, if any), ``ourPacks`` (on an upstream workload),
    ``upstream`` (on a pack workload) and ``otherEvidence`` (groups of the other workloads)."""
    empty = {"pack": None, "ourPacks": [], "upstream": [], "otherEvidence": []}
    if not row.operation_id:
        return empty
    related = catalog.related_operation_ids(conn, row.operation_id)
    own = origins.pack_of(row.workload_digest)
    ours = origins.pack_workload_digests
    if own is None:
        digests = catalog.semantic_digests(conn, [row.operation_id, *related])
        packs = origins.packs_for(digests, catalog.operation_names(conn, row.operation_id))
        # Related operation records' own workloads (not ours: those are listed with their pack).
        others = [w.id for w in catalog.workloads_of_operations(conn, related) if w.workload_digest not in ours]
        return {
            **empty,
            "ourPacks": [_pack_entry(conn, p, limit) for p in packs],
            "otherEvidence": _groups_of(conn, others, limit),
        }
    upstream = _upstream_workloads(conn, [row.operation_id, *related], origins)
    return {
        **empty,
        "pack": {"folder": own.folder, "name": own.name, "caseCount": len(own.case_digests)},
        "upstream": upstream,
        "otherEvidence": _groups_of(conn, [w["id"] for w in upstream if w["runCount"]], limit),
    }


def workload_page_view(conn: Connection, row, origins: Origins, limit: int | None = GROUP_ROWS_SHOWN) -> dict[str, Any]:
    """The workload page (and its JSON): its own ranked groups, then the rest of the problem's evidence."""
    view = workload_view(conn, row, limit)
    view.update(problem_evidence(conn, row, origins, limit))
    return view
