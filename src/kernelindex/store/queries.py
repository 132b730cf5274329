"""Read queries over the store shared by the CLI (and usable by the web layer)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, exists, func, or_, select

from kernelindex.store import tables as t

HEX_PREFIX = re.compile(r"^(sha256:)?([0-9a-f]{8,64})$")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class LookupProblem(LookupError):
    """An id or digest that names no run, or more than one."""


@dataclass(frozen=True)
class RunFilter:
    operation: str | None = None  # slug, alias, name or semanticDigest (prefix) of the operation
    workload: str | None = None  # id, name or workloadDigest (prefix)
    source: str | None = None  # source slug
    hardware: str | None = None  # substring of model, or architecture / vendor
    status: str | None = None
    limit: int | None = 50


def _digest_like(column, text: str):
    match = HEX_PREFIX.match(text.lower())
    return column.like(f"sha256:{match.group(2)}%") if match else None


def _retracted():
    events = t.record_events
    return or_(
        t.runs.c.retracted_at.is_not(None),
        exists().where(and_(events.c.run_id == t.runs.c.id, events.c.cause == "retracted")),
    )


def list_runs(conn: Connection, f: RunFilter) -> list[dict[str, Any]]:
    r, w, o, s = t.runs, t.workloads, t.operations, t.sources
    query = (
        select(
            r.c.id, r.c.run_digest, r.c.status, r.c.observed_at, r.c.primary_metric, r.c.primary_statistic,
            r.c.primary_unit, r.c.primary_value, r.c.hardware_model, r.c.hardware_architecture,
            r.c.comparison_key, r.c.workload_digest, r.c.implementation_digest, r.c.runner_id,
            func.coalesce(s.c.slug, r.c.source_slug).label("source"),  # the run names its source before the row arrives
            o.c.slug.label("operation"), w.c.name.label("workload"),
            _retracted().label("retracted"),
        )
        .select_from(r.outerjoin(w, r.c.workload_id == w.c.id).outerjoin(o, w.c.operation_id == o.c.id).outerjoin(s, r.c.source_id == s.c.id))
        .order_by(r.c.seq)
    )
    if f.operation:
        aliases = select(t.operation_aliases.c.operation_id).where(t.operation_aliases.c.alias == f.operation)
        conds = [o.c.slug == f.operation, o.c.name == f.operation, o.c.id.in_(aliases)]
        if (like := _digest_like(r.c.operation_digest, f.operation)) is not None:
            conds.append(like)
        query = query.where(or_(*conds))
    if f.workload:
        conds = [w.c.id == f.workload, w.c.name == f.workload]
        if (like := _digest_like(r.c.workload_digest, f.workload)) is not None:
            conds.append(like)
        query = query.where(or_(*conds))
    if f.source:
        query = query.where(or_(s.c.slug == f.source, r.c.source_slug == f.source))
    if f.hardware:
        needle = f"%{f.hardware.lower()}%"
        query = query.where(
            or_(
                func.lower(r.c.hardware_model).like(needle),
                func.lower(r.c.hardware_architecture) == f.hardware.lower(),
                func.lower(r.c.hardware_vendor) == f.hardware.lower(),
            )
        )
    if f.status:
        query = query.where(r.c.status == f.status)
    if f.limit:
        query = query.limit(f.limit)
    return [dict(row._mapping) for row in conn.execute(query)]


def find_run_id(conn: Connection, id_or_digest: str) -> str:
    """The run named by its id, its digest, or a digest prefix of 8+ hex characters (unique)."""
    text = id_or_digest.strip()
    if UUID.match(text.lower()):
        found = conn.scalar(select(t.runs.c.id).where(t.runs.c.id == text.lower()))
        if found is None:
            raise LookupProblem(f"no run with id {text}")
        return found
    like = _digest_like(t.runs.c.run_digest, text)
    if like is None:
        raise LookupProblem(f"{text!r} is neither a run id (UUID) nor a digest prefix of 8+ hex characters")
    ids = conn.scalars(select(t.runs.c.id).where(like).limit(6)).all()
    if not ids:
        raise LookupProblem(f"no run digest starts with {text}")
    if len(ids) > 1:
        raise LookupProblem(f"digest prefix {text} matches {len(ids) if len(ids) < 6 else 'several'} runs: give more characters")
    return ids[0]


def run_detail(conn: Connection, run_id: str) -> dict[str, Any]:
    """A run with its protocol, environment, workload, implementation, measurements and history."""
    run = conn.execute(select(t.runs).where(t.runs.c.id == run_id)).mappings().one()
    bundle = run["manifest"]

    def record(table, digest_col, digest) -> Mapping[str, Any] | None:
        row = conn.execute(select(table).where(table.c[digest_col] == digest)).mappings().first()
        return None if row is None else {"id": row.get("id"), "digest": digest, "manifest": row["manifest"]}

    source = None
    if run["source_id"]:
        src = conn.execute(select(t.sources).where(t.sources.c.id == run["source_id"])).mappings().one()
        source = {"id": src["id"], "slug": src["slug"], "kind": src["kind"], "name": src["name"]}
    measurements = conn.execute(
        select(t.measurements.c.metric, t.measurements.c.statistic, t.measurements.c.unit, t.measurements.c.value, t.measurements.c.sample_count)
        .where(t.measurements.c.run_id == run_id)
        .order_by(t.measurements.c.seq)
    ).mappings().all()
    events = conn.execute(
        select(t.record_events.c.cause, t.record_events.c.at, t.record_events.c.reason, t.record_events.c.previous_run_id)
        .where(t.record_events.c.run_id == run_id)
        .order_by(t.record_events.c.seq)
    ).mappings().all()
    artifacts = conn.execute(
        select(t.run_artifacts.c.role, t.artifacts.c.content_digest, t.artifacts.c.kind, t.artifacts.c.media_type, t.artifacts.c.size_bytes)
        .join(t.artifacts, t.artifacts.c.id == t.run_artifacts.c.artifact_id)
        .where(t.run_artifacts.c.run_id == run_id)
    ).mappings().all()
    return {
        "id": run["id"],
        "digest": run["run_digest"],
        "status": run["status"],
        "observedAt": run["observed_at"],
        "source": source,
        "primary": {
            "metric": run["primary_metric"], "statistic": run["primary_statistic"],
            "unit": run["primary_unit"], "value": run["primary_value"],
        },
        "hardware": {"vendor": run["hardware_vendor"], "model": run["hardware_model"], "architecture": run["hardware_architecture"]},
        "keys": {
            "protocol": run["protocol_key"], "environment": run["environment_key"], "workload": run["workload_digest"],
            "implementation": run["implementation_digest"], "operation": run["operation_digest"],
            "correctness": run["correctness_key"], "comparison": run["comparison_key"],
        },
        "pending": [name for name, col in (("workload", "workload_id"), ("implementation", "implementation_id")) if run[col] is None],
        "runner": {"id": run["runner_id"], "host": run["runner_host"]},
        "supersedesId": run["supersedes_id"],
        "retracted": run["retracted_at"] is not None or any(e["cause"] == "retracted" for e in events),
        "run": bundle["run"],
        "protocol": bundle["protocol"],
        "environment": bundle["environment"],
        "workload": record(t.workloads, "workload_digest", run["workload_digest"]),
        "implementation": record(t.implementations, "implementation_digest", run["implementation_digest"]),
        "measurements": [dict(m) for m in measurements],
        "events": [dict(e) for e in events],
        "artifacts": [dict(a) for a in artifacts],
    }


def store_stats(conn: Connection) -> dict[str, Any]:
    counts = {
        table.name: conn.scalar(select(func.count()).select_from(table)) or 0
        for table in (
            t.sources, t.projects, t.operations, t.operation_aliases, t.workloads, t.implementations,
            t.protocols, t.environments, t.runs, t.measurements, t.artifacts, t.record_events, t.foreign_rows,
        )
    }
    r = t.runs
    pending = {
        "workload": conn.scalar(select(func.count()).where(r.c.workload_id.is_(None))) or 0,
        "implementation": conn.scalar(select(func.count()).where(r.c.implementation_id.is_(None))) or 0,
    }
    by_source = dict(
        conn.execute(
            select(func.coalesce(t.sources.c.slug, r.c.source_slug, "(none)"), func.count())
            .select_from(r.outerjoin(t.sources, r.c.source_id == t.sources.c.id))
            .group_by(func.coalesce(t.sources.c.slug, r.c.source_slug, "(none)"))
        ).all()
    )
    by_status = dict(conn.execute(select(r.c.status, func.count()).group_by(r.c.status)).all())
    cohorts = conn.scalar(select(func.count(func.distinct(r.c.comparison_key)))) or 0
    return {"tables": counts, "pendingLinks": pending, "runsBySource": by_source, "runsByStatus": by_status, "cohorts": cohorts}
