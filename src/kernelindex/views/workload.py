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

from pydantic import Field

from kernelindex.ranking.reads import ranked_groups, workload_groups
from kernelindex.store.reads import catalog
from kernelindex.store.reads.lookup import check_filter
from kernelindex.views.common import GROUP_ROWS_SHOWN, Document, ItemLinks, NextLink, ViewModel
from kernelindex.views.origins import Origins, Pack, PackSummary, pack_summary
from kernelindex.views.rank import Group, Ranking, groups_view, ranking_of

if TYPE_CHECKING:
    from sqlalchemy import Connection


class WorkloadItem(ViewModel):
    id: str
    digest: str
    kind: str
    title: str | None
    shapeSummary: str | None
    operation: str | None = Field(description="the operation's slug")
    links: ItemLinks


class WorkloadListing(ViewModel):
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: NextLink
    items: list[WorkloadItem]


class WorkloadLabel(ViewModel):
    id: str | None
    title: str | None


class LabelledGroup(Group):
    """A group of another workload of the same problem, labelled with its workload."""

    workload: WorkloadLabel


class OurPack(PackSummary):
    """One of our packs for this (upstream) workload's problem, with its groups."""

    groups: list[LabelledGroup]


class OwnPack(ViewModel):
    folder: str
    name: str
    caseCount: int


class UpstreamWorkload(ViewModel):
    id: str
    title: str | None
    kind: str
    runCount: int
    href: str


class WorkloadOperation(ViewModel):
    slug: str
    name: str | None
    family: str | None


class Workload(ViewModel):
    """The workload page and ``GET /api/v1/workloads/{id}``: its own groups, then the problem's other evidence."""

    id: str
    digest: str
    kind: str
    title: str
    groups: list[Ranking]
    shapeSummary: str | None
    dtypes: list[str] | None
    correctness: Document | None
    axes: Document | None
    caseCount: int | None
    aggregation: Document | None
    operation: WorkloadOperation | None
    runCount: int
    manifest: Document
    links: ItemLinks
    pack: OwnPack | None = Field(description="the pack of ours this workload belongs to, if any")
    ourPacks: list[OurPack] = Field(description="on an upstream workload: our packs for the same problem")
    upstream: list[UpstreamWorkload] = Field(description="on a pack workload: the upstream workloads of the problem")
    otherEvidence: list[LabelledGroup] = Field(description="groups of the problem's other workloads, never ranked here")


def list_workloads(
    conn: Connection, after: int | None, limit: int, operation: str | None
) -> tuple[list[WorkloadItem], int | None]:
    """A page of workloads, of every operation ``operation`` could name (404 when it names none)."""
    if operation:
        check_filter(conn, "operation", operation)
    rows, nxt = catalog.list_workloads(conn, after, limit, operation)
    return [
        WorkloadItem(
            id=w.id,
            digest=w.workload_digest,
            kind=w.kind,
            title=w.title,
            shapeSummary=w.shape_summary,
            operation=w.slug,
            links=ItemLinks(self=f"/workloads/{w.id}", json_=f"/api/v1/workloads/{w.id}"),
        )
        for w in rows
    ], nxt


def _groups_of(conn: Connection, workload_ids: list[str], limit: int | None) -> list[LabelledGroup]:
    """Ranked groups of the runs on ``workload_ids``, each labelled with its workload."""
    if not workload_ids:
        return []
    keys = catalog.comparison_keys_of(conn, workload_ids)
    groups = groups_view(conn, ranked_groups(conn, keys), limit)
    if not groups:
        return []
    titles = catalog.workload_titles(conn, workload_ids)
    wl_of_key = catalog.workload_of_keys(conn, keys)
    labelled = []
    for g in groups:
        wid = wl_of_key.get(g.comparisonKey)
        title = titles.get(wid) if wid else None
        labelled.append(LabelledGroup(**dict(g), workload=WorkloadLabel(id=wid, title=title)))
    return labelled


def _pack_entry(conn: Connection, pack: Pack, limit: int | None) -> OurPack:
    summary = pack_summary(conn, pack)
    return OurPack(**dict(summary), groups=_groups_of(conn, summary.workloadIds, limit))


def _upstream_workloads(conn: Connection, operation_ids: list[str], origins: Origins) -> list[UpstreamWorkload]:
    """Workloads of the problem that no pack of ours made, busiest first, suites before cases."""
    ours = origins.pack_workload_digests
    rows = [w for w in catalog.workloads_of_operations(conn, operation_ids) if w.workload_digest not in ours]
    counts = catalog.run_counts_by_workload(conn, [w.id for w in rows])
    items = [
        UpstreamWorkload(
            id=w.id, title=w.title or w.name, kind=w.kind, runCount=counts.get(w.id, 0), href=f"/workloads/{w.id}"
        )
        for w in rows
    ]
    items.sort(key=lambda w: (-w.runCount, w.kind != "WorkloadSuite"))
    return items


def _problem_evidence(conn: Connection, row: Any, origins: Origins, limit: int | None) -> dict[str, Any]:
    """``pack`` (this workload's own pack, if any), ``ourPacks`` (on an upstream workload),
    ``upstream`` (on a pack workload) and ``otherEvidence`` (groups of the other workloads)."""
    empty: dict[str, Any] = {"pack": None, "ourPacks": [], "upstream": [], "otherEvidence": []}
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
        "pack": OwnPack(folder=own.folder, name=own.name, caseCount=len(own.case_digests)),
        "upstream": upstream,
        "otherEvidence": _groups_of(conn, [w.id for w in upstream if w.runCount], limit),
    }


def workload_view(conn: Connection, row: Any, origins: Origins, limit: int | None = GROUP_ROWS_SHOWN) -> Workload:
    """The workload ``row`` (from the resolver): the page shows the best ``limit`` rows of each group."""
    manifest = row.manifest or {}
    spec = manifest.get("spec") or {}
    operation = catalog.operation_by_id(conn, row.operation_id)
    shown = groups_view(conn, workload_groups(conn, row.id), limit)
    return Workload(
        id=row.id,
        digest=row.workload_digest,
        kind=row.kind,
        title=(manifest.get("metadata") or {}).get("title") or row.name or row.id,
        shapeSummary=row.shape_summary,
        dtypes=row.dtypes,
        correctness=spec.get("correctness"),
        axes=spec.get("axes"),
        caseCount=len(spec.get("cases") or []) or None,
        aggregation=spec.get("aggregation"),
        operation=WorkloadOperation(slug=operation.slug, name=operation.name, family=operation.family)
        if operation is not None
        else None,
        groups=[ranking_of(g) for g in shown],
        runCount=sum(g.size + len(g.excluded) for g in shown),
        manifest=manifest,
        links=ItemLinks(self=f"/workloads/{row.id}", json_=f"/api/v1/workloads/{row.id}"),
        **_problem_evidence(conn, row, origins, limit),
    )
