"""Reads behind an operation page: its workloads with their axes and run counts, and the measured
values of its case runs for the sweep chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, func, select

from kernelindex.records.vocabulary import RunStatus
from kernelindex.store.tables import implementations, record_events, runs, workloads


def workload_rows(conn: Connection, operation_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Every workload of the operations: id, digest, kind, title, axes, a suite's cases' axes, run count."""
    if not operation_ids:
        return []
    spec = workloads.c.manifest["spec"]
    counts: dict[str, int] = dict(
        conn.execute(
            select(runs.c.workload_id, func.count())
            .join(workloads, workloads.c.id == runs.c.workload_id)
            .where(workloads.c.operation_id.in_(operation_ids))
            .group_by(runs.c.workload_id)
        ).all()
    )
    out = []
    for r in conn.execute(
        select(
            workloads.c.id,
            workloads.c.workload_digest,
            workloads.c.kind,
            workloads.c.name,
            workloads.c.shape_summary,
            workloads.c.manifest["metadata"]["title"].as_string().label("title"),
            spec["axes"].label("axes"),
            spec["cases"].label("cases"),
        )
        .where(workloads.c.operation_id.in_(operation_ids))
        .order_by(workloads.c.seq)
    ):
        cases = [c.get("axes") or {} for c in (r.cases or []) if isinstance(c, dict)]
        out.append(
            {
                "id": r.id,
                "digest": r.workload_digest,
                "kind": r.kind,
                "title": r.title or r.name or r.id,
                "shapeSummary": r.shape_summary,
                "axes": dict(r.axes or {}),
                "caseAxes": cases,
                "runCount": counts.get(r.id, 0),
            }
        )
    return out


def group_keys(conn: Connection, workload_ids: Sequence[str]) -> list[str]:
    """The comparison keys of runs on these workloads."""
    if not workload_ids:
        return []
    return sorted(
        conn.scalars(
            select(runs.c.comparison_key)
            .distinct()
            .where(runs.c.workload_id.in_(workload_ids), runs.c.comparison_key.isnot(None))
        )
    )


class CaseValue(NamedTuple):
    """The lowest and highest value of one implementation's passed runs of one case, on one hardware
    and metric (``measured``: (hardware model, primary metric, statistic, unit)). A plain tuple: a
    sweep reads each field of thousands of these, and a database row's named fields cost ten times more."""

    workload_id: str
    measured: tuple[str | None, str | None, str | None, str | None]
    implementation_digest: str
    title: str | None
    slug: str | None
    low: float
    high: float


def case_measurements(conn: Connection, workload_ids: Sequence[str]) -> list[CaseValue]:
    """What a sweep chart plots: for each workload, hardware, primary metric and implementation, the
    lowest and highest value of its passed, unretracted runs (one row per combination, however many runs).

    Grouped on runs alone, in ``ix_runs_case_sweep``'s order (index-only, no sort), then joined to the
    few implementations; status is compared in Python: in the WHERE clause SQLite would walk the
    (unselective) status index instead."""
    if not workload_ids:
        return []
    keys = (
        runs.c.workload_id,
        runs.c.hardware_model,
        runs.c.primary_metric,
        runs.c.primary_statistic,
        runs.c.primary_unit,
        runs.c.implementation_digest,
        runs.c.implementation_id,
        runs.c.status,
    )
    grouped = (
        select(*keys, func.min(runs.c.primary_value).label("low"), func.max(runs.c.primary_value).label("high"))
        .where(
            runs.c.workload_id.in_(workload_ids),
            runs.c.id.not_in(select(record_events.c.run_id).where(record_events.c.cause == "retracted")),
            runs.c.primary_value.isnot(None),
        )
        .group_by(*keys)
        .subquery()
    )
    query = select(
        grouped.c.workload_id,
        grouped.c.hardware_model,
        grouped.c.primary_metric,
        grouped.c.primary_statistic,
        grouped.c.primary_unit,
        grouped.c.implementation_digest,
        implementations.c.title,
        implementations.c.slug,
        grouped.c.low,
        grouped.c.high,
        grouped.c.status,
    ).outerjoin(implementations, implementations.c.id == grouped.c.implementation_id)
    return [
        CaseValue(workload, (hardware, metric, statistic, unit), digest, title, slug, low, high)
        for workload, hardware, metric, statistic, unit, digest, title, slug, low, high, status in conn.execute(query)
        if status == RunStatus.PASSED
    ]
