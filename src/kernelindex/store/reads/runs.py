"""Runs: the filtered listing (CLI, pages, API), one run's detail, and the records a run page shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, bindparam, func, or_, select
from sqlalchemy.sql import ColumnElement

from kernelindex.store import tables as t
from kernelindex.store.reads.lookup import operation_clause, row_by, workload_clause
from kernelindex.store.reads.run_facts import facts_of_run, retracted_clause


def manifest_title(column) -> ColumnElement:
    """A record manifest's ``metadata.title`` (JSON path, read by the database)."""
    return column["metadata"]["title"].as_string()


@dataclass(frozen=True)
class RunFilter:
    """Which runs to list; each text names records the way the resolver does, and keeps every match."""

    operation: str | None = None  # id, slug, alias, name or semanticDigest (prefix) of the operation
    workload: str | None = None  # id, name or workloadDigest (prefix)
    source: str | None = None  # source slug
    hardware: str | None = None  # substring of model, or architecture / vendor
    status: str | None = None
    comparison_key: str | None = None
    limit: int | None = 50


def _run_joins():
    r, w, o, s = t.runs, t.workloads, t.operations, t.sources
    return (
        r.outerjoin(w, r.c.workload_id == w.c.id)
        .outerjoin(o, w.c.operation_id == o.c.id)
        .outerjoin(s, r.c.source_id == s.c.id)
    )


def _filtered(query, f: RunFilter):
    """``query`` (over :func:`_run_joins`) kept to the runs ``f`` names."""
    r, s = t.runs, t.sources
    if f.operation:
        query = query.where(operation_clause(f.operation))
    if f.workload:
        query = query.where(workload_clause(f.workload))
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
    if f.comparison_key:
        query = query.where(r.c.comparison_key == f.comparison_key)
    return query


def count_runs(conn: Connection, f: RunFilter) -> int:
    """How many runs ``f`` matches in all (``limit`` aside): what a shortened listing says it shows part of."""
    return conn.execute(_filtered(select(func.count()).select_from(_run_joins()), f)).scalar_one()


def list_runs(conn: Connection, f: RunFilter, after: int | None = None) -> tuple[list[dict[str, Any]], int | None]:
    """Runs in arrival order after ``after`` (a ``seq``), and the ``seq`` to continue from (None: no more)."""
    r, w, o, s = t.runs, t.workloads, t.operations, t.sources
    query = select(
        r.c.seq,
        r.c.id,
        r.c.run_digest,
        r.c.status,
        r.c.observed_at,
        r.c.primary_metric,
        r.c.primary_statistic,
        r.c.primary_unit,
        r.c.primary_value,
        r.c.hardware_model,
        r.c.hardware_architecture,
        r.c.comparison_key,
        r.c.workload_id,
        r.c.workload_digest,
        r.c.implementation_digest,
        r.c.runner_id,
        r.c.source_slug,
        func.coalesce(s.c.slug, r.c.source_slug).label("source"),  # the run names its source before the row arrives
        o.c.slug.label("operation"),
        w.c.name.label("workload"),
        manifest_title(r.c.manifest["run"]).label("run_title"),
        retracted_clause().label("retracted"),
    )
    query = _filtered(query.select_from(_run_joins()), f).order_by(r.c.seq)
    if after is not None:
        query = query.where(r.c.seq > after)
    if not f.limit:
        return [dict(row._mapping) for row in conn.execute(query)], None
    rows = conn.execute(query.limit(f.limit + 1)).all()
    more = len(rows) > f.limit
    rows = rows[: f.limit]
    return [dict(row._mapping) for row in rows], (rows[-1].seq if more and rows else None)


def latest_runs(conn: Connection, n: int = 10) -> list[dict[str, Any]]:
    """The ``n`` most recently observed runs, newest first (observation time, then arrival)."""
    r = t.runs
    return [
        dict(row._mapping)
        for row in conn.execute(
            select(
                r.c.seq,
                r.c.id,
                r.c.run_digest,
                r.c.status,
                r.c.observed_at,
                r.c.workload_id,
                r.c.comparison_key,
                r.c.source_slug,
                r.c.hardware_model,
                r.c.primary_metric,
                r.c.primary_statistic,
                r.c.primary_unit,
                r.c.primary_value,
                manifest_title(r.c.manifest["run"]).label("run_title"),
            )
            .where(r.c.observed_at.is_not(None))
            .order_by(r.c.observed_at.desc(), r.c.seq.desc())
            .limit(n)
        )
    ]


def run_by_id(conn: Connection, run_id: str) -> Row | None:
    return conn.execute(row_by(t.runs, "id"), {"value": run_id}).first()


def run_by_digest(conn: Connection, digest: str) -> Row | None:
    return conn.execute(row_by(t.runs, "run_digest"), {"value": digest}).first()


# The run page's reads, built once (see lookup.row_by); each takes its values as parameters.
_IDS_BY_DIGEST = select(t.runs.c.run_digest, t.runs.c.id).where(t.runs.c.run_digest.in_(bindparam("digests")))
_MEASUREMENTS = (
    select(
        t.measurements.c.metric,
        t.measurements.c.statistic,
        t.measurements.c.unit,
        t.measurements.c.value,
        t.measurements.c.sample_count,
    )
    .where(t.measurements.c.run_id == bindparam("run_id"))
    .order_by(t.measurements.c.seq)
)
_ARTIFACTS = (
    select(
        t.run_artifacts.c.role,
        t.artifacts.c.content_digest,
        t.artifacts.c.kind,
        t.artifacts.c.media_type,
        t.artifacts.c.size_bytes,
        t.artifacts.c.uri,
        t.artifacts.c.license,
    )
    .join(t.artifacts, t.artifacts.c.id == t.run_artifacts.c.artifact_id)
    .where(t.run_artifacts.c.run_id == bindparam("run_id"))
    .order_by(t.run_artifacts.c.seq)
)
_REPLICATIONS = (
    select(t.runs.c.id, t.runs.c.status, t.runs.c.primary_value, t.runs.c.primary_unit, t.runs.c.observed_at)
    .where(
        t.runs.c.implementation_digest == bindparam("implementation_digest"),
        t.runs.c.comparison_key == bindparam("comparison_key"),
        t.runs.c.id != bindparam("run_id"),
    )
    .order_by(t.runs.c.observed_at)
)


def run_ids_by_digest(conn: Connection, digests: list[str]) -> dict[str, str]:
    if not digests:
        return {}
    return dict(conn.execute(_IDS_BY_DIGEST, {"digests": list(digests)}).all())


def run_digests_by_runner(conn: Connection, runner_id: str) -> list[str]:
    """Digests of the runs a controlled runner (its key id) made, in arrival order."""
    return list(conn.scalars(select(t.runs.c.run_digest).where(t.runs.c.runner_id == runner_id).order_by(t.runs.c.seq)))


def measurements_of(conn: Connection, run_id: str) -> Sequence[Row]:
    return conn.execute(_MEASUREMENTS, {"run_id": run_id}).all()


def artifacts_of(conn: Connection, run_id: str) -> Sequence[Row]:
    """The artifacts linked to a run, with the role each plays."""
    return conn.execute(_ARTIFACTS, {"run_id": run_id}).all()


def artifact_by_digest(conn: Connection, content_digest: str) -> Row | None:
    return conn.execute(row_by(t.artifacts, "content_digest"), {"value": content_digest}).first()


def events_of(conn: Connection, run_id: str) -> Sequence[Row]:
    e = t.record_events
    return conn.execute(
        select(e.c.cause, e.c.at, e.c.reason, e.c.previous_run_id).where(e.c.run_id == run_id).order_by(e.c.seq)
    ).all()


def replications_of(conn: Connection, row: Any) -> Sequence[Row]:
    """Other runs of the same implementation in the same comparison group, oldest first."""
    if not (row.implementation_digest and row.comparison_key):
        return []
    values = {
        "implementation_digest": row.implementation_digest,
        "comparison_key": row.comparison_key,
        "run_id": row.id,
    }
    return conn.execute(_REPLICATIONS, values).all()


@dataclass(frozen=True)
class RunRecords:
    """The records a run refers to (each None while pending)."""

    source: Row | None
    implementation: Row | None
    project: Row | None
    workload: Row | None
    operation: Row | None


def _by_id(conn: Connection, table, row_id: str | None) -> Row | None:
    return conn.execute(row_by(table, "id"), {"value": row_id}).first() if row_id else None


def records_of(conn: Connection, row: Any) -> RunRecords:
    impl = _by_id(conn, t.implementations, row.implementation_id)
    workload = _by_id(conn, t.workloads, row.workload_id)
    return RunRecords(
        source=_by_id(conn, t.sources, row.source_id),
        implementation=impl,
        project=_by_id(conn, t.projects, impl.project_id if impl is not None else None),
        workload=workload,
        operation=_by_id(conn, t.operations, workload.operation_id if workload is not None else None),
    )


def run_detail(conn: Connection, run_id: str) -> dict[str, Any]:
    """A run with its protocol, environment, workload, implementation, measurements and history (the CLI's view)."""
    run = conn.execute(select(t.runs).where(t.runs.c.id == run_id)).mappings().one()
    bundle = run["manifest"]

    def record(table, digest_col, digest) -> Mapping[str, Any] | None:
        row = conn.execute(select(table).where(table.c[digest_col] == digest)).mappings().first()
        return None if row is None else {"id": row.get("id"), "digest": digest, "manifest": row["manifest"]}

    source = None
    if run["source_id"]:
        src = conn.execute(select(t.sources).where(t.sources.c.id == run["source_id"])).mappings().one()
        source = {"id": src["id"], "slug": src["slug"], "kind": src["kind"], "name": src["name"]}
    facts = facts_of_run(conn, run_id)
    return {
        "id": run["id"],
        "digest": run["run_digest"],
        "status": run["status"],
        "observedAt": run["observed_at"],
        "source": source,
        "primary": {
            "metric": run["primary_metric"],
            "statistic": run["primary_statistic"],
            "unit": run["primary_unit"],
            "value": run["primary_value"],
        },
        "hardware": {
            "vendor": run["hardware_vendor"],
            "model": run["hardware_model"],
            "architecture": run["hardware_architecture"],
        },
        "keys": {
            "protocol": run["protocol_key"],
            "environment": run["environment_key"],
            "workload": run["workload_digest"],
            "implementation": run["implementation_digest"],
            "operation": run["operation_digest"],
            "correctness": run["correctness_key"],
            "comparison": run["comparison_key"],
        },
        "pending": [
            name
            for name, col in (("workload", "workload_id"), ("implementation", "implementation_id"))
            if run[col] is None
        ],
        "runner": {"id": run["runner_id"], "host": run["runner_host"]},
        "supersedesId": run["supersedes_id"],
        "supersededBy": facts.superseded_by,
        "retracted": facts.retracted,
        "run": bundle["run"],
        "protocol": bundle["protocol"],
        "environment": bundle["environment"],
        "workload": record(t.workloads, "workload_digest", run["workload_digest"]),
        "implementation": record(t.implementations, "implementation_digest", run["implementation_digest"]),
        "measurements": [dict(m._mapping) for m in measurements_of(conn, run_id)],
        "events": [dict(e._mapping) for e in events_of(conn, run_id)],
        "artifacts": [
            {k: a._mapping[k] for k in ("role", "content_digest", "kind", "media_type", "size_bytes")}
            for a in artifacts_of(conn, run_id)
        ],
    }


def runs_by_digest(conn: Connection, digests: list[str]) -> dict[str, Row]:
    """Run digest -> its row (headline columns and manifest) for the digests stored."""
    r = t.runs
    return {
        row.run_digest: row
        for row in conn.execute(
            select(
                r.c.id, r.c.run_digest, r.c.status, r.c.primary_value, r.c.primary_unit, r.c.workload_id, r.c.manifest
            ).where(r.c.run_digest.in_(digests))
        )
    }
