"""Reads behind the entity pages: implementations, projects and GPUs (hardware products)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, func, select

from kernelindex.store.reads.run_facts import made_by_harness
from kernelindex.store.tables import (
    environments,
    implementations,
    operations,
    projects,
    record_events,
    runs,
    sources,
    workloads,
)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def gpu_slug(model: str | None) -> str:
    """``NVIDIA H200`` -> ``nvidia-h200``: one spelling for URLs, filters and badges."""
    return re.sub(r"[^a-z0-9]+", "-", (model or "").lower()).strip("-") or "unknown"


IMPL_RUN_COLUMNS = (
    runs.c.id,
    runs.c.run_digest,
    runs.c.comparison_key,
    runs.c.workload_id,
    runs.c.status,
    runs.c.hardware_model,
    runs.c.hardware_architecture,
    runs.c.primary_value,
    runs.c.primary_unit,
    runs.c.observed_at,
    runs.c.implementation_digest,
)


def runs_of_implementations(conn: Connection, digests: Sequence[str]) -> Sequence[Row]:
    """Every run of these implementations, with what a best-per-GPU table needs."""
    if not digests:
        return []
    return conn.execute(
        select(*IMPL_RUN_COLUMNS).where(runs.c.implementation_digest.in_(sorted(set(digests)))).order_by(runs.c.seq)
    ).all()


def project_of(conn: Connection, project_id: str | None):
    if not project_id:
        return None
    return conn.execute(select(projects).where(projects.c.id == project_id)).first()


def operation_brief(conn: Connection, operation_id: str | None):
    if not operation_id:
        return None
    return conn.execute(
        select(operations.c.slug, operations.c.name, operations.c.family).where(operations.c.id == operation_id)
    ).first()


def project_by_slug(conn: Connection, ident: str):
    column = projects.c.id if UUID.match(ident) else projects.c.slug
    return conn.execute(select(projects).where(column == ident)).first()


def project_implementations(conn: Connection, project_id: str) -> Sequence[Row]:
    return conn.execute(
        select(
            implementations.c.id,
            implementations.c.slug,
            implementations.c.title,
            implementations.c.implementation_digest,
            implementations.c.language,
            implementations.c.export_row,
        )
        .where(implementations.c.project_id == project_id)
        .order_by(implementations.c.seq)
    ).all()


def leader_events_touching(conn: Connection, run_ids: Sequence[str], since: str) -> Sequence[Row]:
    """Leader changes at or after ``since`` where one of ``run_ids`` became or stopped being the leader."""
    if not run_ids:
        return []
    ids = sorted(set(run_ids))
    return conn.execute(
        select(
            record_events.c.comparison_key, record_events.c.run_id, record_events.c.previous_run_id, record_events.c.at
        )
        .where(
            record_events.c.at >= since,
            record_events.c.cause != "retracted",
            (record_events.c.run_id.in_(ids)) | (record_events.c.previous_run_id.in_(ids)),
        )
        .order_by(record_events.c.at)
    ).all()


@dataclass(frozen=True)
class Product:
    model: str
    vendor: str | None
    architectures: tuple[str, ...]
    runs: int


def hardware_products(conn: Connection) -> list[Product]:
    """Each hardware product with its vendor, architectures and run count. Counts come from the
    hardware_model index alone; vendor and architecture from the (small) environments table."""
    counts = conn.execute(
        select(runs.c.hardware_model, func.count())
        .where(runs.c.hardware_model.isnot(None))
        .group_by(runs.c.hardware_model)
    ).all()
    described: dict[str, tuple[str | None, set[str]]] = {}
    for env in conn.execute(
        select(
            environments.c.hardware_model, environments.c.hardware_vendor, environments.c.hardware_architecture
        ).distinct()
    ):
        vendor, archs = described.setdefault(env.hardware_model, (env.hardware_vendor, set()))
        if env.hardware_architecture:
            archs.add(env.hardware_architecture)
    out = []
    for model, n in counts:
        vendor, archs = described.get(model, (None, set()))
        out.append(Product(model, vendor, tuple(sorted(archs)), n))
    return sorted(out, key=lambda p: p.model)


def coverage_counts(conn: Connection) -> list[tuple[str, str | None, str, int]]:
    """(operation slug, name, hardware model, runs) for every pair that has any run.

    A comparison key fixes the operation and the environment (so the hardware): runs are counted
    per key from its index alone, and one run of each key says which operation and GPU it is."""
    per_key = conn.execute(
        select(func.count(), func.min(runs.c.seq))
        .where(runs.c.comparison_key.isnot(None))
        .group_by(runs.c.comparison_key)
    ).all()
    if not per_key:
        return []
    sampled = (
        select(runs.c.seq, operations.c.slug, operations.c.name, runs.c.hardware_model)
        .select_from(
            runs.join(workloads, workloads.c.id == runs.c.workload_id).join(
                operations, operations.c.id == workloads.c.operation_id
            )
        )
        .where(runs.c.seq.in_([seq for _, seq in per_key]), runs.c.hardware_model.isnot(None))
    )
    sample = {r.seq: r for r in conn.execute(sampled)}
    totals: dict[tuple[str, str | None, str], int] = {}
    for n, seq in per_key:
        r = sample.get(seq)
        if r is not None:
            key = (r.slug, r.name, r.hardware_model)
            totals[key] = totals.get(key, 0) + n
    return [(slug, name, model, n) for (slug, name, model), n in totals.items()]


def harness_runs(conn: Connection, hardware_models: Sequence[str] | None = None) -> Sequence[Row]:
    """Runs from a controlled harness (the only runs that can be verified), with their operation slug."""
    query = (
        select(runs.c.run_digest, runs.c.hardware_model, operations.c.slug)
        .select_from(
            runs.outerjoin(sources, sources.c.id == runs.c.source_id)
            .join(workloads, workloads.c.id == runs.c.workload_id)
            .join(operations, operations.c.id == workloads.c.operation_id)
        )
        .where(made_by_harness())
    )
    if hardware_models is not None:
        query = query.where(runs.c.hardware_model.in_(sorted(set(hardware_models))))
    return conn.execute(query).all()


def comparison_keys_on(conn: Connection, hardware_models: Sequence[str]) -> list[str]:
    return list(
        conn.scalars(
            select(runs.c.comparison_key)
            .distinct()
            .where(runs.c.hardware_model.in_(sorted(set(hardware_models))), runs.c.comparison_key.isnot(None))
        )
    )


def run_labels(conn: Connection, run_ids: Sequence[str]) -> dict[str, Any]:
    """Run id -> title, workload, operation and implementation of each run (for tables of best runs)."""
    if not run_ids:
        return {}
    query = (
        select(
            runs.c.id,
            runs.c.run_digest,
            runs.c.workload_id,
            runs.c.hardware_model,
            runs.c.manifest["run"]["metadata"]["title"].as_string().label("run_title"),
            implementations.c.slug.label("impl_slug"),
            implementations.c.id.label("impl_id"),
            implementations.c.implementation_digest.label("impl_digest"),
            implementations.c.title.label("impl_title"),
            operations.c.slug.label("op_slug"),
            operations.c.name.label("op_name"),
            workloads.c.name.label("wl_name"),
            workloads.c.shape_summary,
        )
        .select_from(
            runs.outerjoin(implementations, implementations.c.id == runs.c.implementation_id)
            .outerjoin(workloads, workloads.c.id == runs.c.workload_id)
            .outerjoin(operations, operations.c.id == workloads.c.operation_id)
        )
        .where(runs.c.id.in_(sorted(set(run_ids))))
    )
    return {r.id: r for r in conn.execute(query)}
