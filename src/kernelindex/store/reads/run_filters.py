"""The run filters every listing shares (the API's /runs, the site, ``kernelindex runs``), so
one filter means the same thing everywhere."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import ColumnElement, func, or_, select

from kernelindex.store import tables as t
from kernelindex.store.queries import HEX_PREFIX

RUN_FILTERS = ("operation", "workload", "comparisonKey", "status", "source", "hardware")
"""operation: slug, name, alias or digest prefix; workload: id, name or digest prefix;
comparisonKey and status: exact; source: slug; hardware: model substring, architecture or vendor."""


def _digest_prefix(column, text: str) -> ColumnElement | None:
    match = HEX_PREFIX.match(text.lower())
    return column.like(f"sha256:{match.group(2)}%") if match else None


def run_conditions(filters: Mapping[str, str]) -> list[ColumnElement]:
    """WHERE conditions on ``runs`` for the given filters (the unset ones are skipped)."""
    r = t.runs
    out: list[ColumnElement] = []
    if value := filters.get("operation"):
        aliases = select(t.operation_aliases.c.operation_id).where(t.operation_aliases.c.alias == value)
        named = select(t.operations.c.semantic_digest).where(
            or_(t.operations.c.slug == value, t.operations.c.name == value, t.operations.c.id.in_(aliases)))
        conds = [r.c.operation_digest.in_(named)]
        if (like := _digest_prefix(r.c.operation_digest, value)) is not None:
            conds.append(like)
        out.append(or_(*conds))
    if value := filters.get("workload"):
        named = select(t.workloads.c.id).where(t.workloads.c.name == value)
        conds = [r.c.workload_id == value, r.c.workload_id.in_(named)]
        if (like := _digest_prefix(r.c.workload_digest, value)) is not None:
            conds.append(like)
        out.append(or_(*conds))
    if value := filters.get("comparisonKey"):
        out.append(r.c.comparison_key == value)
    if value := filters.get("status"):
        out.append(r.c.status == value)
    if value := filters.get("source"):
        out.append(r.c.source_slug == value)
    if value := filters.get("hardware"):
        escaped = value.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        out.append(or_(func.lower(r.c.hardware_model).like(f"%{escaped}%", escape="\\"),
                       func.lower(r.c.hardware_architecture) == value.lower(),
                       func.lower(r.c.hardware_vendor) == value.lower()))
    return out
