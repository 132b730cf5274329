"""Recomputing every stored digest and key from the stored records, every denormalised column
from its record (:mod:`kernelindex.store.verify_columns`), and the transparency log from the
records (:mod:`kernelindex.store.transparency.verify`).

A mismatch means the database was changed behind the store's back (records are never edited by
it), so ``kernelindex verify`` exits non-zero on any.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Connection, RowMapping, Table, select

from kernelindex.records.canonical import (
    canonical_json,
    comparison_key,
    correctness_key,
    digest,
    metric_key,
    sha256_digest,
)
from kernelindex.store import tables as t
from kernelindex.store.database import Store
from kernelindex.store.serving.verify import count_serving, serving_checks
from kernelindex.store.transparency.verify import count_log_checks, log_checks
from kernelindex.store.verify_columns import column_checks, count_column_checks


@dataclass(frozen=True)
class Mismatch:
    table: str
    id: str
    field: str
    stored: Any
    computed: Any

    def __str__(self) -> str:
        return f"{self.table} {self.id}: {self.field}: stored {self.stored}, recomputed {self.computed}"


@dataclass
class VerifyReport:
    checked: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def summary(self) -> str:
        return f"{self.checked} records checked, {len(self.mismatches)} mismatches"


def _rows(conn: Connection, table: Table, *columns: ColumnElement[Any]) -> Iterator[RowMapping]:
    stream = conn.execution_options(stream_results=True, yield_per=1000)
    for row in stream.execute(select(*columns).order_by(table.c.seq)):
        yield row._mapping


def _record_checks(conn: Connection) -> Iterator[tuple[str, str, list[tuple[str, Any, Any]]]]:
    """``(table, id, [(field, stored, recomputed), ...])`` for every stored row with a digest."""
    ops = t.operations
    for r in _rows(conn, ops, ops.c.id, ops.c.semantic_digest, ops.c.manifest, ops.c.export_row):
        d = digest(r["manifest"])
        yield (
            "operations",
            r["id"],
            [
                ("semantic_digest", r["semantic_digest"], d),
                ("semanticDigest", r["export_row"].get("semanticDigest", d), d),
            ],
        )
    w = t.workloads
    for r in _rows(
        conn, w, w.c.id, w.c.workload_digest, w.c.correctness_key, w.c.operation_digest, w.c.manifest, w.c.export_row
    ):
        d, spec = digest(r["manifest"]), r["manifest"]["spec"]
        yield (
            "workloads",
            r["id"],
            [
                ("workload_digest", r["workload_digest"], d),
                ("workloadDigest", r["export_row"].get("workloadDigest", d), d),
                ("correctness_key", r["correctness_key"], correctness_key(spec.get("correctness"))),
                ("operation_digest", r["operation_digest"], spec.get("operationSpecDigest")),
            ],
        )
    i = t.implementations
    for r in _rows(conn, i, i.c.id, i.c.implementation_digest, i.c.manifest, i.c.export_row):
        d = digest(r["manifest"])
        yield (
            "implementations",
            r["id"],
            [
                ("implementation_digest", r["implementation_digest"], d),
                ("implementationDigest", r["export_row"].get("implementationDigest", d), d),
            ],
        )
    for table, key in ((t.protocols, "protocol_digest"), (t.environments, "environment_digest")):
        for r in _rows(conn, table, table.c[key], table.c.manifest):
            yield table.name, r[key], [(key, r[key], digest(r["manifest"]))]
    yield from _run_checks(conn)
    a = t.artifacts
    for r in _rows(conn, a, a.c.id, a.c.content_digest, a.c.content):
        if r["content"] is not None:
            yield "artifacts", r["id"], [("content_digest", r["content_digest"], sha256_digest(bytes(r["content"])))]
    yield from serving_checks(conn)
    yield from column_checks(conn)
    yield from log_checks(conn)
    f = t.foreign_rows
    for r in _rows(conn, f, f.c.seq, f.c.table_name, f.c.row_digest, f.c.row):
        yield (
            f"foreign_rows:{r['table_name']}",
            str(r["seq"]),
            [("row_digest", r["row_digest"], sha256_digest(canonical_json(r["row"])))],
        )


def _run_checks(conn: Connection) -> Iterator[tuple[str, str, list[tuple[str, Any, Any]]]]:
    r_, w = t.runs, t.workloads
    query = (
        select(
            r_.c.id,
            r_.c.run_digest,
            r_.c.protocol_key,
            r_.c.environment_key,
            r_.c.workload_digest,
            r_.c.implementation_digest,
            r_.c.correctness_key,
            r_.c.comparison_key,
            r_.c.primary_metric,
            r_.c.primary_statistic,
            r_.c.primary_unit,
            r_.c.manifest,
            r_.c.export_row,
            w.c.operation_digest.label("w_operation"),
            w.c.correctness_key.label("w_correctness"),
        )
        .select_from(r_.outerjoin(w, r_.c.workload_id == w.c.id))
        .order_by(r_.c.seq)
    )
    for result in conn.execution_options(stream_results=True, yield_per=1000).execute(query):
        r = result._mapping
        bundle, row = r["manifest"], r["export_row"]
        spec = bundle["run"]["spec"]
        protocol, environment = digest(bundle["protocol"]), digest(bundle["environment"])
        checks = [
            ("run_digest", r["run_digest"], digest(bundle["run"])),
            ("runDigest", row.get("runDigest", r["run_digest"]), digest(bundle["run"])),
            ("protocol_key", r["protocol_key"], protocol),
            ("run.spec.protocolDigest", spec.get("protocolDigest"), protocol),
            ("environment_key", r["environment_key"], environment),
            ("run.spec.environmentDigest", spec.get("environmentDigest"), environment),
            ("workload_digest", r["workload_digest"], spec.get("workloadDigest")),
            ("implementation_digest", r["implementation_digest"], spec.get("implementationDigest")),
        ]
        if r["w_correctness"] is not None:  # linked: the workload-dependent keys can be recomputed
            metric = metric_key(r["primary_metric"], r["primary_statistic"], r["primary_unit"])
            key = comparison_key(
                operation=r["w_operation"],
                workload=r["workload_digest"],
                protocol=protocol,
                environment=environment,
                correctness=r["w_correctness"],
                metric=metric,
            )
            checks += [
                ("correctness_key", r["correctness_key"], r["w_correctness"]),
                ("comparison_key", r["comparison_key"], key),
            ]
            for stated, computed in (("correctnessKey", r["w_correctness"]), ("comparisonKey", key)):
                if row.get(stated) is not None:
                    checks.append((stated, row[stated], computed))
        yield "runs", r["id"], checks


def verify_store(store: Store, *, on_record: Callable[[], None] | None = None) -> VerifyReport:
    report = VerifyReport()
    with store.begin() as conn:
        for table, row_id, checks in _record_checks(conn):
            report.checked += 1
            for name, stored, computed in checks:
                if stored != computed:
                    report.mismatches.append(Mismatch(table, row_id, name, stored, computed))
            if on_record:
                on_record()
    return report


def count_records(store: Store) -> int:
    """How many rows :func:`verify_store` will check (for a progress bar)."""
    from sqlalchemy import func

    with store.begin() as conn:
        total = 0
        for table in (
            t.operations,
            t.workloads,
            t.implementations,
            t.protocols,
            t.environments,
            t.runs,
            t.foreign_rows,
        ):
            total += conn.scalar(select(func.count()).select_from(table)) or 0
        total += count_serving(conn) + count_column_checks(conn) + count_log_checks(conn)
        total += (
            conn.scalar(select(func.count()).select_from(t.artifacts).where(t.artifacts.c.content.is_not(None))) or 0
        )
    return total
