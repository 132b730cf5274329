"""GPUs: every product with runs here, a coverage table (operations by GPU), and one GPU's best runs."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from pydantic import Field

from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.ranking.reads import ranked_groups
from kernelindex.store.reads import entities
from kernelindex.store.reads.implementation_slugs import public_slugs
from kernelindex.views.common import ViewModel
from kernelindex.views.formatting import format_value

if TYPE_CHECKING:
    from sqlalchemy import Connection

BEST_RUNS_SHOWN = 200


class GpuRef(ViewModel):
    model: str | None
    slug: str
    links: dict[str, str]


class GpuSummary(ViewModel):
    model: str | None
    slug: str
    vendor: str | None
    architectures: list[str]
    runCount: int
    links: dict[str, str]


class Architecture(ViewModel):
    name: str
    gpus: list[str]


class CoverageCell(ViewModel):
    any: int = Field(description="runs of this operation on this GPU")
    verified: int = Field(description="of those, runs at evidence level verified or replicated")


class CoverageRow(ViewModel):
    slug: str
    name: str | None
    cells: dict[str, CoverageCell] = Field(description="GPU slug -> counts; a GPU absent here has no run")


class Coverage(ViewModel):
    gpus: list[str]
    operations: list[CoverageRow]
    legend: str


class GpuIndex(ViewModel):
    gpus: list[GpuSummary]
    architectures: list[Architecture]
    coverage: Coverage
    links: dict[str, str]


class GpuProduct(ViewModel):
    model: str
    vendor: str | None
    architectures: list[str]
    runCount: int


class GpuBestRun(ViewModel):
    operation: dict[str, str | None] | None
    workload: str | None
    workloadId: str | None
    implementation: dict[str, str | None] | None
    runId: str
    digest: str | None
    groupSize: int
    tied: bool
    value: float | None
    display: str
    evidence: str | None
    comparisonKey: str
    links: dict[str, str]


class Gpu(ViewModel):
    model: str | None
    slug: str
    products: list[GpuProduct]
    architectures: list[str]
    runCount: int
    groupCount: int
    verifiedRunCount: int
    bestRuns: list[GpuBestRun]
    bestRunsShown: int
    links: dict[str, str]


def gpu_ref(model: str | None) -> dict[str, Any]:
    slug = entities.gpu_slug(model)
    return {"model": model, "slug": slug, "links": {"self": f"/gpus/{slug}", "json": f"/api/v1/gpus/{slug}"}}


def _verified_counts(conn: Connection, hardware_models: list[str] | None = None) -> Counter:
    """(operation slug, hardware model) -> runs whose evidence level is verified or replicated."""
    rows = entities.harness_runs(conn, hardware_models)
    levels = evidence_for_runs(conn, [r.run_digest for r in rows])
    return Counter(
        (r.slug, r.hardware_model)
        for r in rows
        if levels.get(r.run_digest) and levels[r.run_digest].level in ("verified", "replicated")
    )


def gpus_view(conn: Connection) -> GpuIndex:
    products = entities.hardware_products(conn)
    by_slug: dict[str, dict[str, Any]] = {}
    for p in products:
        item = by_slug.setdefault(
            entities.gpu_slug(p.model), {**gpu_ref(p.model), "vendor": p.vendor, "architectures": [], "runCount": 0}
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
    return GpuIndex.model_validate(
        {
            "gpus": gpus,
            "architectures": [{"name": a, "gpus": s} for a, s in sorted(architectures.items())],
            "coverage": {
                "gpus": [g["slug"] for g in gpus],
                "operations": rows,
                "legend": "any: runs of the operation on the GPU; verified: those at evidence level verified or replicated",
            },
            "links": {"self": "/gpus", "json": "/api/v1/gpus"},
        }
    )


def gpu_view(conn: Connection, slug: str) -> Gpu | None:
    products = [p for p in entities.hardware_products(conn) if entities.gpu_slug(p.model) == slug]
    if not products:
        return None
    models = sorted({p.model for p in products})
    keys = entities.comparison_keys_on(conn, models)
    groups = ranked_groups(conn, keys)
    leaders = {g.leader.run.run_id: (g, g.leader) for g in groups.values() if g.leader is not None}
    labels = entities.run_labels(conn, list(leaders))
    levels = evidence_for_runs(conn, [lead.run.digest for _, lead in leaders.values() if lead.run.digest])
    slugs = public_slugs(
        conn, ((label.impl_slug, label.impl_id, label.impl_digest) for label in labels.values() if label.impl_digest)
    )
    best = []
    for run_id, (group, lead) in leaders.items():
        label = labels.get(run_id)
        ev = levels.get(lead.run.digest or "")
        best.append(
            GpuBestRun(
                operation={"slug": label.op_slug, "name": label.op_name}
                if label is not None and label.op_slug
                else None,
                workload=(label.wl_name or label.shape_summary) if label is not None else None,
                workloadId=label.workload_id if label is not None else None,
                implementation={"slug": slugs[label.impl_digest], "title": label.impl_title}
                if label is not None and label.impl_slug and label.impl_digest
                else None,
                runId=run_id,
                digest=lead.run.digest,
                groupSize=group.size,
                tied=lead.tied,
                value=lead.run.value,
                display=format_value(lead.run.value, group.unit),
                evidence=ev.level if ev else None,
                comparisonKey=group.comparison_key,
                links={"run": f"/runs/{run_id}", "group": f"/rankings/{group.comparison_key}"},
            )
        )
    best.sort(key=lambda b: ((b.operation or {}).get("name") or "", b.workload or "", b.comparisonKey))
    verified = _verified_counts(conn, models)
    return Gpu.model_validate(
        {
            **gpu_ref(models[0]),
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
    )
