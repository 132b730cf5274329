"""View models of the entity pages (implementation, project, GPU): JSON-ready dicts that the
pages render and the API returns as they are. Ranks come from :mod:`kernelindex.ranking` only."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from kernelindex.ranking.cohort import RankedGroup
from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.ranking.reads import ranked_groups
from kernelindex.store.reads import entities
from kernelindex.views.formatting import format_value, safe_url

LEVEL_ORDER = ("replicated", "verified", "reproducible", "reported")
RECENT_DAYS = 30
BEST_RUNS_SHOWN = 200


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


def _gpu(model: str | None) -> dict[str, Any]:
    slug = entities.gpu_slug(model)
    return {"model": model, "slug": slug, "links": {"self": f"/gpus/{slug}", "json": f"/api/v1/gpus/{slug}"}}


def _best_entries(groups: dict[str, RankedGroup], run_ids: set[str]):
    """(group, entry) of every ranked entry among ``run_ids``."""
    for group in groups.values():
        for entry in group.entries:
            if entry.run.run_id in run_ids:
                yield group, entry


def implementation_view(conn: Connection, row) -> dict[str, Any]:
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
                "gpu": _gpu(run.hardware_model),
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
    slug = row.slug or row.id
    return {
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


def project_view(conn: Connection, row, now: datetime | None = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    impls = entities.project_implementations(conn, row.id)
    digest_to_impl = {i.implementation_digest: i for i in impls}
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
                    "implementation": impl.slug or impl.id,
                    "gpu": _gpu(run.hardware_model),
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
    return {
        "id": row.id,
        "slug": row.slug,
        "name": row.name or (manifest.get("spec") or {}).get("name") or row.slug,
        "homepage": safe_url((row.export_row or {}).get("canonicalUrl")),
        "implementations": [
            {
                "slug": i.slug or i.id,
                "title": i.title or i.slug or i.id,
                "digest": i.implementation_digest,
                "language": i.language,
                "runCount": runs_per_impl.get(i.implementation_digest, 0),
                "licence": licence_of(i.export_row or {}, {}),
                "links": {
                    "self": f"/implementations/{i.slug or i.id}",
                    "json": f"/api/v1/implementations/{i.slug or i.id}",
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


def _verified_counts(conn: Connection, hardware_models: list[str] | None = None) -> Counter:
    """(operation slug, hardware model) -> runs whose evidence level is verified or replicated."""
    rows = entities.harness_runs(conn, hardware_models)
    levels = evidence_for_runs(conn, [r.run_digest for r in rows])
    return Counter(
        (r.slug, r.hardware_model)
        for r in rows
        if levels.get(r.run_digest) and levels[r.run_digest].level in ("verified", "replicated")
    )


def gpus_view(conn: Connection) -> dict[str, Any]:
    products = entities.hardware_products(conn)
    by_slug: dict[str, dict[str, Any]] = {}
    for p in products:
        item = by_slug.setdefault(
            entities.gpu_slug(p.model), {**_gpu(p.model), "vendor": p.vendor, "architectures": [], "runCount": 0}
        )
        item["architectures"] += [a for a in p.architectures if a not in item["architectures"]]
        item["runCount"] += p.runs
    gpus = sorted(by_slug.values(), key=lambda g: g["model"] or "")
    architectures: dict[str, list[str]] = {}
    for g in gpus:
        for arch in g["architectures"]:
            architectures.setdefault(arch, []).append(g["slug"])
    verified = _verified_counts(conn)
    ops: dict[str, dict[str, Any]] = {}
    for op_slug, op_name, model, n in entities.coverage_counts(conn):
        op = ops.setdefault(op_slug, {"slug": op_slug, "name": op_name, "cells": {}})
        cell = op["cells"].setdefault(entities.gpu_slug(model), {"any": 0, "verified": 0})
        cell["any"] += n
        cell["verified"] += verified.get((op_slug, model), 0)
    rows = sorted(ops.values(), key=lambda o: o["name"] or o["slug"])
    return {
        "gpus": gpus,
        "architectures": [{"name": a, "gpus": s} for a, s in sorted(architectures.items())],
        "coverage": {
            "gpus": [g["slug"] for g in gpus],
            "operations": rows,
            "legend": "any: runs of the operation on the GPU; verified: those at evidence level verified or replicated",
        },
        "links": {"self": "/gpus", "json": "/api/v1/gpus"},
    }


def gpu_view(conn: Connection, slug: str) -> dict[str, Any] | None:
    products = [p for p in entities.hardware_products(conn) if entities.gpu_slug(p.model) == slug]
    if not products:
        return None
    models = sorted({p.model for p in products})
    keys = entities.comparison_keys_on(conn, models)
    groups = ranked_groups(conn, keys)
    leaders = {g.leader.run.run_id: g for g in groups.values() if g.leader is not None}
    labels = entities.run_labels(conn, list(leaders))
    levels = evidence_for_runs(conn, [g.leader.run.digest for g in leaders.values() if g.leader.run.digest])
    best = []
    for run_id, group in leaders.items():
        label = labels.get(run_id)
        lead = group.leader
        ev = levels.get(lead.run.digest or "")
        best.append(
            {
                "operation": {"slug": label.op_slug, "name": label.op_name}
                if label is not None and label.op_slug
                else None,
                "workload": (label.wl_name or label.shape_summary) if label is not None else None,
                "workloadId": label.workload_id if label is not None else None,
                "implementation": {"slug": label.impl_slug, "title": label.impl_title}
                if label is not None and label.impl_slug
                else None,
                "runId": run_id,
                "digest": lead.run.digest,
                "groupSize": group.size,
                "tied": lead.tied,
                "value": lead.run.value,
                "display": format_value(lead.run.value, group.unit),
                "evidence": ev.level if ev else None,
                "comparisonKey": group.comparison_key,
                "links": {"run": f"/runs/{run_id}", "group": f"/rankings/{group.comparison_key}"},
            }
        )
    best.sort(key=lambda b: ((b["operation"] or {}).get("name") or "", b["workload"] or "", b["comparisonKey"]))
    verified = _verified_counts(conn, models)
    return {
        **_gpu(models[0]),
        "products": [
            {"model": p.model, "vendor": p.vendor, "architectures": list(p.architectures), "runCount": p.runs}
            for p in products
        ],
        "architectures": sorted({a for p in products for a in p.architectures}),
        "runCount": sum(p.runs for p in products),
        "groupCount": len(groups),
        "verifiedRunCount": sum(verified.values()),
        "bestRuns": best[:BEST_RUNS_SHOWN],
        "bestRunsShown": min(len(best), BEST_RUNS_SHOWN),
        "links": {"self": f"/gpus/{slug}", "json": f"/api/v1/gpus/{slug}", "ledger": f"/records?gpu={slug}"},
    }
