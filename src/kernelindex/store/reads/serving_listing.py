"""Keyset-paged listings of the serving side (``GET /api/v1/serving-runs``, ``/serving-configurations``,
the ``/serving`` page): rows after a sequence number, filtered, in arrival order."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, func, select

from kernelindex.store import tables as t
from kernelindex.store.reads.lookup import contains_pattern
from kernelindex.store.reads.serving import _run_select, _with_measurements
from kernelindex.store.serving import tables as st

_r, _c, _s, _m = st.serving_runs, st.serving_configurations, st.serving_stack_revisions, st.model_revisions


def serving_runs_page(
    conn: Connection,
    after: int | None,
    limit: int,
    *,
    model_id: str | None = None,
    gpu: str | None = None,
    scenario: str | None = None,
    status: str | None = None,
    source: str | None = None,
    configuration_id: str | None = None,
) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``limit`` serving runs after sequence ``after`` (with measurements), and the last sequence
    number when more follow (else None). ``gpu`` matches part of the accelerator's name, case-folded."""
    query = _run_select().add_columns(_r.c.seq)
    if after is not None:
        query = query.where(_r.c.seq > after)
    if model_id:
        query = query.where(_r.c.model_revision_id == model_id)
    if gpu:
        query = query.where(func.lower(_r.c.accelerator_model).like(contains_pattern(gpu), escape="\\"))
    if scenario:
        query = query.where(func.lower(_r.c.scenario) == scenario.lower())
    if status:
        query = query.where(_r.c.status == status)
    if source:
        query = query.where(t.sources.c.slug == source)
    if configuration_id:
        query = query.where(_r.c.configuration_id == configuration_id)
    rows = conn.execute(query.order_by(_r.c.seq).limit(limit + 1)).mappings().all()
    more = len(rows) > limit
    rows = rows[:limit]
    return _with_measurements(conn, rows), (rows[-1]["seq"] if more and rows else None)


def configurations_page(
    conn: Connection, after: int | None, limit: int, *, stack: str | None = None, model_id: str | None = None
) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``limit`` serving configurations after sequence ``after``, each with its stack, project, the
    models and GPUs of its runs and how many runs it has; ``stack`` matches part of the stack's name."""
    query = (
        select(
            _c.c.seq,
            _c.c.id,
            _c.c.configuration_digest,
            _c.c.summary,
            _c.c.dtype,
            _c.c.quantization,
            _c.c.tensor_parallel,
            _s.c.name.label("stack_name"),
            _s.c.version.label("stack_version"),
            _s.c.stack_digest,
            t.projects.c.slug.label("project_slug"),
            t.projects.c.name.label("project_name"),
        )
        .select_from(
            _c.outerjoin(_s, _c.c.stack_revision_id == _s.c.id).outerjoin(
                t.projects, _s.c.project_id == t.projects.c.id
            )
        )
        .order_by(_c.c.seq)
    )
    if after is not None:
        query = query.where(_c.c.seq > after)
    if stack:
        query = query.where(func.lower(_s.c.name).like(contains_pattern(stack), escape="\\"))
    if model_id:
        query = query.where(_c.c.id.in_(select(_r.c.configuration_id).where(_r.c.model_revision_id == model_id)))
    rows = [dict(r) for r in conn.execute(query.limit(limit + 1)).mappings()]
    more = len(rows) > limit
    rows = rows[:limit]
    ids = [r["id"] for r in rows]
    runs: dict[str, int] = defaultdict(int)
    models: dict[str, set[str]] = defaultdict(set)
    gpus: dict[str, set[str]] = defaultdict(set)
    if ids:
        found = conn.execute(
            select(_r.c.configuration_id, _m.c.slug, _r.c.accelerator_model, func.count())
            .select_from(_r.outerjoin(_m, _r.c.model_revision_id == _m.c.id))
            .where(_r.c.configuration_id.in_(ids))
            .group_by(_r.c.configuration_id, _m.c.slug, _r.c.accelerator_model)
        )
        for config_id, model_slug, gpu, count in found:
            runs[config_id] += count
            if model_slug:
                models[config_id].add(model_slug)
            if gpu:
                gpus[config_id].add(gpu)
    for r in rows:
        r.update(runs=runs[r["id"]], models=sorted(models[r["id"]]), gpus=sorted(gpus[r["id"]]))
    return rows, (rows[-1]["seq"] if more and rows else None)
