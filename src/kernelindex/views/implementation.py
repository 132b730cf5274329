"""An implementation: its install, licence, sources, and its best run on each GPU. Ranks come from
:mod:`kernelindex.ranking` only."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from pydantic import Field

from kernelindex.ranking.cohort import RankedGroup
from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.ranking.reads import ranked_groups
from kernelindex.store.reads import entities
from kernelindex.store.reads.implementation_slugs import candidates, public_slug, public_slugs, shared_slugs
from kernelindex.views.common import Document, ItemLinks, ViewModel
from kernelindex.views.formatting import format_value, safe_url
from kernelindex.views.gpu import GpuRef, gpu_ref

if TYPE_CHECKING:
    from sqlalchemy import Connection

LEVEL_ORDER = ("replicated", "verified", "reproducible", "reported")


class NamedRef(ViewModel):
    slug: str
    name: str | None
    links: dict[str, str]


class Install(ViewModel):
    kind: str | None
    command: str
    variant: str | None


class SourceLink(ViewModel):
    label: str
    url: str | None = Field(description="as the record states it")
    href: str | None = Field(description="the URL when it is plain http(s), else null: only this one is linked")


class SourceFile(ViewModel):
    name: str | None
    digest: str | None
    sizeBytes: int | None


class BestRun(ViewModel):
    gpu: GpuRef
    rank: int
    tied: bool
    groupSize: int
    runId: str
    digest: str
    value: float | None
    display: str
    evidence: str | None
    workloadId: str | None
    comparisonKey: str
    links: dict[str, str]


class Implementation(ViewModel):
    id: str
    slug: str
    digest: str
    title: str
    language: str | None
    authors: list[str]
    project: NamedRef | None
    operation: NamedRef | None
    install: Install | None
    licence: str | None
    deployable: bool
    deployableReason: str
    sourceAvailable: bool
    sourceFile: SourceFile | None
    sourceLinks: list[SourceLink]
    support: Document
    revision: str | None
    runCount: int
    bestRunPerGpu: list[BestRun]
    bestRank: int | None
    evidenceLevels: dict[str, int]
    bestEvidence: str | None
    links: dict[str, str]


def best_level(levels: Counter) -> str | None:
    return next((level for level in LEVEL_ORDER if levels.get(level)), None)


def install_of(export_row: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any] | None:
    """How to install it: the export's stated command, else the first build variant's install."""
    if export_row.get("installCommand"):
        return {"kind": export_row.get("installKind"), "command": export_row["installCommand"], "variant": None}
    for variant in spec.get("buildVariants") or []:
        inst = variant.get("install") or {}
        command = inst.get("command")
        if not command and inst.get("kind") == "pip" and inst.get("package"):
            command = f"pip install {inst['package']}" + (f"=={inst['version']}" if inst.get("version") else "")
        elif not command and inst.get("kind") == "git" and inst.get("repository"):
            command = f"git clone {inst['repository']}" + (
                f" && git -C <dir> checkout {inst['commit']}" if inst.get("commit") else ""
            )
        if command:
            return {"kind": inst.get("kind"), "command": command, "variant": variant.get("name")}
    return None


def licence_of(export_row: dict[str, Any], spec: dict[str, Any]) -> str | None:
    lic = spec.get("licensing") or {}
    return (
        export_row.get("licenseExpression")
        or export_row.get("licenseDeclared")
        or lic.get("concluded")
        or lic.get("declared")
    )


def _link(url: Any, label: str) -> dict[str, Any]:
    return {"label": label, "url": url if isinstance(url, str) else None, "href": safe_url(url)}


def _best_entries(groups: dict[str, RankedGroup], run_ids: set[str]):
    """(group, entry) of every ranked entry among ``run_ids``."""
    for group in groups.values():
        for entry in group.entries:
            if entry.run.run_id in run_ids:
                yield group, entry


def implementation_view(conn: Connection, row) -> Implementation:
    manifest = row.manifest or {}
    spec = manifest.get("spec") or {}
    meta = manifest.get("metadata") or {}
    export_row = row.export_row or {}
    project = entities.project_of(conn, row.project_id)
    operation = entities.operation_brief(conn, row.operation_id)
    run_rows = entities.runs_of_implementations(conn, [row.implementation_digest])
    groups = ranked_groups(conn, {r.comparison_key for r in run_rows if r.comparison_key})
    levels_by_digest = {d: e.level for d, e in evidence_for_runs(conn, [r.run_digest for r in run_rows]).items()}
    by_id = {r.id: r for r in run_rows}
    best: dict[str, dict[str, Any]] = {}
    for group, entry in _best_entries(groups, set(by_id)):
        run = by_id[entry.run.run_id]
        candidate = (entry.rank, -group.size, run.observed_at or "")
        current = best.get(run.hardware_model or "")
        if current is None or candidate < current["_order"]:
            best[run.hardware_model or ""] = {
                "_order": candidate,
                "gpu": gpu_ref(run.hardware_model),
                "rank": entry.rank,
                "tied": entry.tied,
                "groupSize": group.size,
                "runId": run.id,
                "digest": run.run_digest,
                "value": run.primary_value,
                "display": format_value(run.primary_value, run.primary_unit),
                "evidence": levels_by_digest.get(run.run_digest),
                "workloadId": run.workload_id,
                "comparisonKey": group.comparison_key,
                "links": {"run": f"/runs/{run.id}"},
            }
    best_rows = sorted(best.values(), key=lambda b: (b["rank"], b["gpu"]["model"] or ""))
    for item in best_rows:
        item.pop("_order")
    levels = Counter(levels_by_digest.values())
    install = install_of(export_row, spec)
    deployable = bool(export_row.get("installable")) or install is not None
    revision = spec.get("projectRevision") or {}
    source = spec.get("source") or {}
    links = [_link(ref.get("url"), "source reference") for ref in meta.get("sourceRefs") or []]
    if revision.get("repository"):
        at = f" @ {revision['commit']}" if revision.get("commit") else ""
        links.append(_link(revision["repository"], "repository" + at))
    slug = public_slug(row.slug, row.id, row.implementation_digest, shared_slugs(conn, [row.slug]))
    return Implementation.model_validate(
        {
            "id": row.id,
            "slug": slug,
            "digest": row.implementation_digest,
            "title": row.title or meta.get("title") or slug,
            "language": row.language or (spec.get("callable") or {}).get("language"),
            "authors": [a.get("name") or a.get("github") or "" for a in meta.get("authors") or []],
            "project": {
                "slug": project.slug,
                "name": project.name,
                "links": {"self": f"/projects/{project.slug}", "json": f"/api/v1/projects/{project.slug}"},
            }
            if project is not None
            else None,
            "operation": {
                "slug": operation.slug,
                "name": operation.name,
                "links": {"self": f"/operations/{operation.slug}"},
            }
            if operation is not None
            else None,
            "install": install,
            "licence": licence_of(export_row, spec),
            "deployable": deployable,
            "deployableReason": ("an install command is recorded" if install else "the export marks it installable")
            if deployable
            else "no install command or package is recorded, so it cannot be deployed from this index",
            "sourceAvailable": bool(export_row.get("sourceAvailable") or source.get("contentDigest")),
            "sourceFile": {
                "name": source.get("fileName"),
                "digest": source.get("contentDigest"),
                "sizeBytes": source.get("sizeBytes"),
            }
            if source
            else None,
            "sourceLinks": links,
            "support": spec.get("support") or {},
            "revision": revision.get("version") or export_row.get("sourceRevision"),
            "runCount": len(run_rows),
            "bestRunPerGpu": best_rows,
            "bestRank": min((b["rank"] for b in best_rows), default=None),
            "evidenceLevels": {level: levels[level] for level in LEVEL_ORDER if levels.get(level)},
            "bestEvidence": best_level(levels),
            "links": {
                "self": f"/implementations/{slug}",
                "json": f"/api/v1/implementations/{slug}",
                "badge": f"/badges/implementations/{slug}.svg",
            },
        }
    )


class ImplementationChoice(ViewModel):
    slug: str = Field(description="its public slug: what to link")
    title: str
    digest: str
    language: str | None
    project: str | None
    operation: str | None
    links: ItemLinks


class ImplementationChoices(ViewModel):
    """What a slug several implementations share names: each of them, with the link that names it alone."""

    slug: str
    detail: str
    candidates: list[ImplementationChoice]


def implementation_choices(conn: Connection, slug: str) -> ImplementationChoices | None:
    """The implementations holding ``slug`` when there are several (None when there are not)."""
    rows = candidates(conn, slug)
    if len(rows) < 2:
        return None
    slugs = public_slugs(conn, ((r.slug, r.id, r.implementation_digest) for r in rows))
    choices = []
    for r in rows:
        project = entities.project_of(conn, r.project_id)
        operation = entities.operation_brief(conn, r.operation_id)
        public = slugs[r.implementation_digest]
        choices.append(
            ImplementationChoice(
                slug=public,
                title=r.title or public,
                digest=r.implementation_digest,
                language=r.language,
                project=(project.name or project.slug) if project is not None else None,
                operation=(operation.name or operation.slug) if operation is not None else None,
                links=ItemLinks(self=f"/implementations/{public}", json_=f"/api/v1/implementations/{public}"),
            )
        )
    return ImplementationChoices(
        slug=slug, detail=f"{len(choices)} implementations share the slug {slug!r}; choose one", candidates=choices
    )
