"""A project: its implementations, the comparison groups it leads, and the leads it gained or lost lately."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from kernelindex.ranking.reads import ranked_groups
from kernelindex.store.reads import entities
from kernelindex.store.reads.implementation_slugs import public_slugs
from kernelindex.views.common import ViewModel
from kernelindex.views.formatting import format_value, safe_url
from kernelindex.views.gpu import GpuRef, gpu_ref
from kernelindex.views.implementation import licence_of

if TYPE_CHECKING:
    from sqlalchemy import Connection

RECENT_DAYS = 30


class ProjectImplementation(ViewModel):
    slug: str
    title: str
    digest: str
    language: str | None
    runCount: int
    licence: str | None
    links: dict[str, str]


class RecordHeld(ViewModel):
    comparisonKey: str
    runId: str
    groupSize: int
    tied: bool
    implementation: str
    gpu: GpuRef
    display: str
    workloadId: str | None
    operation: str | None
    workload: str | None
    links: dict[str, str]


class LeaderChange(ViewModel):
    comparisonKey: str | None
    at: str
    runId: str | None
    previousRunId: str | None


class Project(ViewModel):
    id: str
    slug: str
    name: str | None
    homepage: str | None
    implementations: list[ProjectImplementation]
    runCount: int
    recordsHeld: list[RecordHeld]
    recentWindowDays: int
    gained: list[LeaderChange]
    lost: list[LeaderChange]
    links: dict[str, str]


def project_view(conn: Connection, row, now: datetime | None = None) -> Project:
    now = now or datetime.now(UTC)
    impls = entities.project_implementations(conn, row.id)
    digest_to_impl = {i.implementation_digest: i for i in impls}
    slugs = public_slugs(conn, ((i.slug, i.id, i.implementation_digest) for i in impls))
    run_rows = entities.runs_of_implementations(conn, list(digest_to_impl))
    by_id = {r.id: r for r in run_rows}
    groups = ranked_groups(conn, {r.comparison_key for r in run_rows if r.comparison_key})
    held = []
    for group in groups.values():
        leader = group.leader
        if leader is not None and leader.run.run_id in by_id:
            run = by_id[leader.run.run_id]
            impl = digest_to_impl[run.implementation_digest]
            held.append(
                {
                    "comparisonKey": group.comparison_key,
                    "runId": run.id,
                    "groupSize": group.size,
                    "tied": leader.tied,
                    "implementation": slugs[impl.implementation_digest],
                    "gpu": gpu_ref(run.hardware_model),
                    "display": format_value(run.primary_value, run.primary_unit),
                    "workloadId": run.workload_id,
                    "links": {"run": f"/runs/{run.id}", "group": f"/rankings/{group.comparison_key}"},
                }
            )
    labels = entities.run_labels(conn, [h["runId"] for h in held])
    for h in held:
        label = labels.get(h["runId"])
        h["operation"] = label.op_name or label.op_slug if label is not None else None
        h["workload"] = (label.wl_name or label.shape_summary) if label is not None else None
    held.sort(key=lambda h: (h["operation"] or "", h["workload"] or "", h["comparisonKey"]))
    since = (now - timedelta(days=RECENT_DAYS)).strftime("%Y-%m-%dT%H:%M:%S")
    gained, lost = [], []
    for e in entities.leader_events_touching(conn, list(by_id), since):
        item = {"comparisonKey": e.comparison_key, "at": e.at, "runId": e.run_id, "previousRunId": e.previous_run_id}
        if e.run_id in by_id and e.previous_run_id not in by_id:
            gained.append(item)
        elif e.previous_run_id in by_id and e.run_id not in by_id:
            lost.append(item)
    runs_per_impl = Counter(r.implementation_digest for r in run_rows)
    manifest = row.manifest or {}
    return Project.model_validate(
        {
            "id": row.id,
            "slug": row.slug,
            "name": row.name or (manifest.get("spec") or {}).get("name") or row.slug,
            "homepage": safe_url((row.export_row or {}).get("canonicalUrl")),
            "implementations": [
                {
                    "slug": slugs[i.implementation_digest],
                    "title": i.title or i.slug or i.id,
                    "digest": i.implementation_digest,
                    "language": i.language,
                    "runCount": runs_per_impl.get(i.implementation_digest, 0),
                    "licence": licence_of(i.export_row or {}, {}),
                    "links": {
                        "self": f"/implementations/{slugs[i.implementation_digest]}",
                        "json": f"/api/v1/implementations/{slugs[i.implementation_digest]}",
                    },
                }
                for i in impls
            ],
            "runCount": len(run_rows),
            "recordsHeld": held,
            "recentWindowDays": RECENT_DAYS,
            "gained": gained,
            "lost": lost,
            "links": {"self": f"/projects/{row.slug}", "json": f"/api/v1/projects/{row.slug}"},
        }
    )
