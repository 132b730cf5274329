"""Reads of the serving side: models, serving runs with what they name, cohorts, a model's runs on a GPU.

Rows come back as plain dicts (JSON-ready) so the pages, the API and the ranking share them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, func, select

from kernelindex.store import tables as t
from kernelindex.store.reads.lookup import contains_pattern
from kernelindex.store.serving import tables as st

_r, _m, _c, _s, _w = (
    st.serving_runs,
    st.model_revisions,
    st.serving_configurations,
    st.serving_stack_revisions,
    st.serving_workloads,
)


def list_models(conn: Connection) -> list[dict[str, Any]]:
    """Every model with its number of serving runs and GPU products."""
    counts: dict[str | None, int] = dict(
        conn.execute(select(_r.c.model_revision_id, func.count()).group_by(_r.c.model_revision_id)).all()
    )
    gpus: dict[str, set[str]] = defaultdict(set)
    for model_id, gpu in conn.execute(select(_r.c.model_revision_id, _r.c.accelerator_model).distinct()):
        gpus[model_id].add(gpu)
    rows = conn.execute(select(_m.c.id, _m.c.slug, _m.c.name, _m.c.model_digest).order_by(_m.c.name)).mappings()
    return [{**row, "runs": counts.get(row["id"], 0), "gpus": sorted(gpus[row["id"]])} for row in rows]


def _run_select(detail: bool = False):
    """The run with what it names; the records of its configuration, stack and its own manifest
    only when ``detail`` (one run's page): listings need their titles, not the records."""
    records = (
        [
            _r.c.manifest,
            _c.c.manifest.label("configuration"),
            _s.c.manifest.label("stack"),
            t.sources.c.policy.label("source_policy"),
        ]
        if detail
        else [_r.c.manifest[("metadata", "title")].as_string().label("title")]
    )
    return select(
        _r.c.id,
        _r.c.run_digest,
        _r.c.status,
        _r.c.observed_at,
        _r.c.cohort_key,
        _r.c.protocol_key,
        _r.c.quality_policy,
        _r.c.metric_set_key,
        _r.c.scenario,
        _r.c.accelerator_vendor,
        _r.c.accelerator_model,
        _r.c.accelerator_count,
        _r.c.node_count,
        _r.c.total_accelerators,
        _r.c.retracted_at,
        _r.c.retraction_reason,
        _r.c.supersedes_id,
        *records,
        _m.c.id.label("model_id"),
        _m.c.slug.label("model_slug"),
        _m.c.name.label("model_name"),
        _m.c.model_digest,
        _c.c.id.label("configuration_id"),
        _c.c.configuration_digest,
        _c.c.summary.label("configuration_summary"),
        _c.c.dtype,
        _c.c.quantization,
        _s.c.id.label("stack_id"),
        _s.c.name.label("stack_name"),
        _s.c.stack_digest,
        t.projects.c.slug.label("project_slug"),
        t.projects.c.name.label("project_name"),
        _w.c.id.label("workload_id"),
        _w.c.slug.label("workload_slug"),
        _w.c.name.label("workload_name"),
        _w.c.workload_digest,
        t.sources.c.slug.label("source_slug"),
        t.sources.c.name.label("source_name"),
        t.sources.c.kind.label("source_kind"),
    ).select_from(
        _r.outerjoin(_m, _r.c.model_revision_id == _m.c.id)
        .outerjoin(_c, _r.c.configuration_id == _c.c.id)
        .outerjoin(_s, _c.c.stack_revision_id == _s.c.id)
        .outerjoin(t.projects, _s.c.project_id == t.projects.c.id)
        .outerjoin(_w, _r.c.workload_id == _w.c.id)
        .outerjoin(t.sources, _r.c.source_id == t.sources.c.id)
    )


def _with_measurements(conn: Connection, rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Rows with their measurements and their workload's record (read once per workload)."""
    out = [dict(row) for row in rows]
    workload_ids = sorted({row["workload_id"] for row in out if row["workload_id"]})
    workloads = dict(conn.execute(select(_w.c.id, _w.c.manifest).where(_w.c.id.in_(workload_ids))).all())
    for row in out:
        row["workload"] = workloads.get(row["workload_id"])
    by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ids = [row["id"] for row in out]
    ms = st.serving_measurements
    for start in range(0, len(ids), 500):
        query = (
            select(ms.c.run_id, ms.c.metric, ms.c.statistic, ms.c.unit, ms.c.value, ms.c.sample_count)
            .where(ms.c.run_id.in_(ids[start : start + 500]))
            .order_by(ms.c.seq)
        )
        for m in conn.execute(query).mappings():
            by_run[m["run_id"]].append({k: m[k] for k in ("metric", "statistic", "unit", "value", "sample_count")})
    for row in out:
        row["measurements"] = by_run[row["id"]]
    return out


def serving_run_detail(conn: Connection, run_id: str) -> dict[str, Any]:
    """One serving run (by id, as the resolver found it) with every record it names."""
    rows = conn.execute(_run_select(detail=True).where(_r.c.id == run_id)).mappings().all()
    return _with_measurements(conn, rows)[0]


def serving_run_by_digest(conn: Connection, digest: str) -> str | None:
    """The id of the serving run with this full digest (permalinks)."""
    return conn.scalar(select(_r.c.id).where(_r.c.run_digest == digest))


def cohort_runs(conn: Connection, cohort_key: str) -> list[dict[str, Any]]:
    rows = conn.execute(_run_select().where(_r.c.cohort_key == cohort_key).order_by(_r.c.seq)).mappings().all()
    return _with_measurements(conn, rows)


def model_runs(conn: Connection, model_id: str, gpu: str | None = None) -> list[dict[str, Any]]:
    """A model's serving runs, optionally on GPU products whose name contains ``gpu`` (case-insensitive)."""
    query = _run_select().where(_r.c.model_revision_id == model_id)
    if gpu:
        pattern = contains_pattern(gpu)
        query = query.where(func.lower(_r.c.accelerator_model).like(pattern, escape="\\"))
    return _with_measurements(conn, conn.execute(query.order_by(_r.c.seq)).mappings().all())


def serving_stats(conn: Connection) -> dict[str, int]:
    return {table.name: conn.scalar(select(func.count()).select_from(table)) or 0 for table in (_m, _s, _c, _w, _r)}
