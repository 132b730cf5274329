"""Adding rows to the store in bulk, inside one transaction, idempotently and append-only.

A :class:`Writer` takes checked rows table by table (parents before children), and inserts them
in batches. A row whose identity (its digest, or its natural key) is already stored is counted
as present and not touched; if it came under a different id, later rows that point at that id
are pointed at the stored one. References that name nothing are problems, except a run's
workload, implementation and source, which are kept as pending links (the run always keeps the
digests) and filled in when those rows arrive: the one UPDATE this store ever makes.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any

from sqlalchemy import JSON, Connection, Table, and_, insert, select, update

from kernelindex.records import names
from kernelindex.records.canonical import digest, sha256_digest
from kernelindex.store import tables as t
from kernelindex.store.bulk import in_chunks, insert_rows, json_columns, select_in
from kernelindex.store.database import json_bytes
from kernelindex.store.ids import uuid7
from kernelindex.store.rows import (
    RowError,
    derived_measurements,
    implementation_columns,
    operation_columns,
    project_columns,
    run_columns,
    run_keys,
    source_columns,
    workload_columns,
)
from kernelindex.store.serving import tables as st

BATCH = 1000


@dataclass(frozen=True)
class RowProblem:
    line: int | None
    field: str | None
    reason: str
    consequential: bool = False  # a dangling reference, often only the echo of a refused parent row


@dataclass(frozen=True)
class TableSpec:
    table: Table
    key: tuple[str, ...]  # the row's identity: a digest or a natural key
    refs: Mapping[str, str] = field(default_factory=dict)  # column -> parent table name

    def key_of(self, columns: Mapping[str, Any]) -> tuple:
        """The row's identity as a tuple of its ``key`` columns' values."""
        return tuple(map(columns.__getitem__, self.key))


SPECS: dict[str, TableSpec] = {
    "sources": TableSpec(t.sources, ("slug",)),
    "projects": TableSpec(t.projects, ("slug",)),
    "operations": TableSpec(t.operations, ("semantic_digest",)),
    "operation_aliases": TableSpec(t.operation_aliases, ("operation_id", "alias"), {"operation_id": "operations"}),
    "workloads": TableSpec(t.workloads, ("workload_digest",), {"operation_id": "operations"}),
    "implementations": TableSpec(
        t.implementations, ("implementation_digest",), {"project_id": "projects", "operation_id": "operations"}
    ),
    "runs": TableSpec(t.runs, ("run_digest",), {"source_id": "sources"}),
    "measurements": TableSpec(t.measurements, ("run_id", "metric", "statistic", "unit"), {"run_id": "runs"}),
    "artifacts": TableSpec(t.artifacts, ("content_digest",)),
    "record_events": TableSpec(t.record_events, ("id",), {"run_id": "runs", "previous_run_id": "runs"}),
    "foreign_rows": TableSpec(t.foreign_rows, ("table_name", "row_digest")),
    "model_revisions": TableSpec(st.model_revisions, ("model_digest",)),
    "serving_stack_revisions": TableSpec(st.serving_stack_revisions, ("stack_digest",), {"project_id": "projects"}),
    "serving_configurations": TableSpec(
        st.serving_configurations, ("configuration_digest",), {"stack_revision_id": "serving_stack_revisions"}
    ),
    "serving_workloads": TableSpec(st.serving_workloads, ("workload_digest",)),
    "serving_runs": TableSpec(
        st.serving_runs,
        ("run_digest",),
        {
            "model_revision_id": "model_revisions",
            "configuration_id": "serving_configurations",
            "workload_id": "serving_workloads",
            "source_id": "sources",
        },
    ),
    "serving_measurements": TableSpec(
        st.serving_measurements, ("run_id", "metric", "statistic", "unit"), {"run_id": "serving_runs"}
    ),
}


# parents that writers of different files share: inserted so that two writers at once cannot clash
SHARED_PARENTS = frozenset({"sources", "projects", "operations"})

INT64 = range(-(2**63), 2**63)


# a run's rows of its protocol and environment (stored once each, not run columns): key -> its table
RUN_PARTS = {"protocol_row": t.protocols, "environment_row": t.environments}


def with_json_encoded(table: str, columns: dict[str, Any]) -> dict[str, Any]:
    """``columns`` of a row for ``table`` with every JSON value already encoded (see
    :func:`~kernelindex.store.bulk.insert_rows`): how a process that converted the row sends it on
    (one bytes object, not a nested value). A run's protocol and environment rows are not columns:
    :func:`encoded_part` encodes each."""
    for name in json_columns(SPECS[table].table):
        if name in columns:
            columns[name] = json_bytes(columns[name])
    return columns


def encoded_part(row: dict[str, Any]) -> dict[str, Any]:
    """A run's protocol or environment row (see :data:`RUN_PARTS`) with its manifest encoded."""
    return {**row, "manifest": json_bytes(row["manifest"])}


def _camel(column: str) -> str:
    head, *rest = column.split("_")
    return head + "".join(part.title() for part in rest)


_WANTED = {float: "a finite number", int: "a 64-bit integer", str: "a string", bool: "true or false"}


@dataclass(frozen=True)
class _Checks:
    """A table's non-JSON columns grouped for one quick pass over a row (most values are exactly
    their column's type and fit): strings with their length limit, then the rest by type."""

    texts: tuple[tuple[str, int], ...]  # (column, length limit; sys.maxsize when it has none)
    others: tuple[tuple[str, type], ...]


@cache
def _checks_of(table: Table) -> _Checks:
    columns = [c for c in table.c if not isinstance(c.type, JSON)]
    return _Checks(
        texts=tuple(
            (c.name, getattr(c.type, "length", None) or sys.maxsize) for c in columns if c.type.python_type is str
        ),
        others=tuple((c.name, c.type.python_type) for c in columns if c.type.python_type is not str),
    )


def _column_problem(table: Table, columns: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, reason) for the first value its column's SQL type cannot hold (type, range, length);
    JSON columns take anything. Values that pass at a glance are not looked at again."""
    checks = _checks_of(table)
    get = columns.get
    for name, limit in checks.texts:
        value = get(name)
        if value is not None and (type(value) is not str or len(value) > limit):
            return _value_problem(name, str, limit, value)
    for name, kind in checks.others:
        value = get(name)
        if value is None or _fits_at_a_glance(kind, value):
            continue
        if (problem := _value_problem(name, kind, None, value)) is not None:
            return problem
    return None


def _fits_at_a_glance(kind: type, value: Any) -> bool:
    if kind is int:
        return type(value) is int and value in INT64
    if kind is float:
        return type(value) is float and abs(value) <= sys.float_info.max
    return type(value) is kind


def _value_problem(name: str, kind: type, limit: int | None, value: Any) -> tuple[str, str] | None:
    """(field, reason) when ``value`` does not fit its column (an int fits a float column)."""
    if kind is float:
        fits = isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= sys.float_info.max
    elif kind is int:
        fits = isinstance(value, int) and not isinstance(value, bool) and value in INT64
    else:
        fits = isinstance(value, kind)
    if not fits:
        return _camel(name), f"expected {_WANTED.get(kind, kind.__name__)}, got {str(value)[:40]!r}"
    if kind is str and limit and len(value) > limit:  # PostgreSQL enforces it; SQLite must refuse alike
        return _camel(name), f"longer than {limit} characters: {value[:40]!r}…"
    return None


def row_problem(table: str, columns: Mapping[str, Any], *, parts: bool = True) -> tuple[str, str] | None:
    """(field, reason) for the first value of a row for ``table`` that its column cannot hold (a
    list for a name, 10**30 for a size), a run's stated retraction included, and its protocol and
    environment rows unless ``parts`` is false (:func:`part_problem`); None when all fit. Pure, so a
    process that converts rows checks them there (:meth:`Writer.add`)."""
    if (bad := _column_problem(SPECS[table].table, columns)) is not None:
        return bad
    if table == "runs":
        for part in RUN_PARTS if parts else ():
            if (bad := part_problem(part, columns[part])) is not None:
                return bad
        # a retraction the row states becomes a record event: its time and reason must fit there
        if (stated := columns.get("stated_retraction")) is not None:
            at, reason = stated
            if (bad := _column_problem(t.record_events, {"at": at, "reason": reason})) is not None:
                return _RETRACTION_FIELDS[bad[0]], bad[1]
    return None


_RETRACTION_FIELDS = {"at": "retractedAt", "reason": "retractionReason"}  # event column -> run row field


def part_problem(part: str, row: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, reason) when a run's protocol or environment row (``part``, a key of
    :data:`RUN_PARTS`) does not fit its table: PostgreSQL enforces lengths; SQLite would not."""
    if (bad := _column_problem(RUN_PARTS[part], row)) is not None:
        return f"{part.removesuffix('_row')}.{bad[0]}", bad[1]
    return None


DERIVED_FROM_RUN_ROW = "benchmark_runs.retractedAt"  # marks an event the run's own export row already states


def now_iso() -> str:
    """UTC now in the exports' form, ``2026-05-27T05:56:21.957Z``."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


@dataclass
class Writer:
    """Bulk, idempotent inserts into one open transaction (``conn``).

    ``sole``: nothing else writes this writer's tables while it lives (an import's one writer), so
    a table that held no rows when it first came to it holds only rows it inserted, and whether a
    row of that table is stored already is answered from memory, not by a query per batch."""

    conn: Connection
    sole: bool = False
    added: Counter = field(default_factory=Counter)
    present: Counter = field(default_factory=Counter)
    linked: Counter = field(default_factory=Counter)
    problems: list[RowProblem] = field(default_factory=list)
    _alias: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    _known: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    _new: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # ids this writer inserted
    _new_keys: dict[str, dict[tuple, str | None]] = field(default_factory=lambda: defaultdict(dict))  # key -> id
    _empty_at_start: dict[str, bool] = field(default_factory=dict)  # table -> it held no rows at first
    # while building_indexes_last: table -> the CREATE INDEX statements of the indexes it dropped
    _deferred_indexes: dict[str, list[str]] | None = None
    _pending: list[tuple[int | None, dict[str, Any]]] = field(default_factory=list)
    _pending_table: str | None = None

    # -- feeding rows ---------------------------------------------------------------------

    def add(self, table: str, line: int | None, columns: dict[str, Any], *, fits: bool = False) -> None:
        """Queue one checked row; rows are written when the table changes or a batch fills.

        A value its column cannot hold is a problem on that line (:func:`row_problem`), not a
        driver error halfway through the transaction; ``fits`` says the row passed that check
        already (where it was converted)."""
        if not fits and (bad := row_problem(table, columns)) is not None:
            self.problem(line, *bad)
            return
        if table != self._pending_table:
            self.flush()
            if self._deferred_indexes and self._pending_table in self._deferred_indexes:
                self._build_indexes(self._pending_table)  # done with it, most likely: build them now
            self._pending_table = table
        self._pending.append((line, columns))
        if len(self._pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            batch, table = self._pending, self._pending_table
            assert table is not None  # add() sets it with the first pending row
            self._pending = []
            if table == "runs":
                self._write_runs(batch)
            else:
                self._write(table, batch)

    def oldest_pending_line(self) -> int | None:
        """The line number of the first row queued but not written yet (rows queue in line order)."""
        return self._pending[0][0] if self._pending else None

    def problem(self, line: int | None, field_: str | None, reason: str, *, consequential: bool = False) -> None:
        self.problems.append(RowProblem(line, field_, reason, consequential))

    # -- generic tables -------------------------------------------------------------------

    def _resolve_refs(self, spec: TableSpec, batch: list[tuple[int | None, dict]]) -> list[tuple[int | None, dict]]:
        """Point references at stored ids; drop (as problems) rows whose references name nothing."""
        unknown: dict[str, set[str]] = {}  # column -> the ids it names that are nowhere
        for column, parent in spec.refs.items():
            alias, known = self._alias[parent], self._known[parent]
            wanted = set()
            for _, cols in batch:
                value = cols.get(column)
                if value is not None:
                    if alias:
                        cols[column] = value = alias.get(value, value)
                    if value not in known:
                        wanted.add(value)
            self._load_known(parent, wanted)
            if missing := wanted - known:
                unknown[column] = missing
        if not unknown:
            return batch
        kept: list[tuple[int | None, dict]] = []
        for line, cols in batch:
            dangling = next((c for c in spec.refs if c in unknown and cols.get(c) in unknown[c]), None)
            if dangling is not None:
                reason = (
                    f"refers to {spec.refs[dangling]} id {cols[dangling]} which is neither in this import nor stored"
                )
                self.problem(line, _camel(dangling), reason, consequential=True)
            else:
                kept.append((line, cols))
        return kept

    def _load_known(self, table: str, ids: set[str]) -> None:
        if ids:
            self._known[table].update(r[0] for r in select_in(self.conn, SPECS[table].table, ["id"], ["id"], ids))

    def _stored_keys(self, spec: TableSpec, keys: list[tuple]) -> dict[tuple, str | None]:
        width = len(spec.key)
        has_id = "id" in spec.table.c
        values = [k[0] for k in keys] if width == 1 else keys
        wanted = [*spec.key, "id"] if has_id else list(spec.key)
        return {
            row[:width]: row[-1] if has_id else None
            for row in select_in(self.conn, spec.table, wanted, spec.key, values)
        }

    def _only_mine(self, table: str) -> bool:
        """Every stored row of ``table`` is one this writer inserted (see ``sole``)."""
        if not self.sole:
            return False
        if table not in self._empty_at_start:
            name = self.conn.dialect.identifier_preparer.quote(SPECS[table].table.name)
            self._empty_at_start[table] = self.conn.exec_driver_sql(f"SELECT 1 FROM {name} LIMIT 1").first() is None
            if self._empty_at_start[table] and self._deferred_indexes is not None:
                self._drop_indexes(table)
        return self._empty_at_start[table]

    @contextmanager
    def building_indexes_last(self) -> Iterator[None]:
        """While the block runs (a sole writer on SQLite), a table that held no rows when this
        writer came to it has its non-unique indexes dropped; they are built again from the rows
        when the writer goes on to another table (rows that come back for it later go in row by
        row) or when the block ends: one sort each instead of an index update per row (the runs
        table has seventeen: its rows go in in about three quarters of the time). Unique indexes stay:
        they decide what clashes. Inside the transaction, so readers see the old schema until the
        commit and a rollback restores them; built again however the block ends, so no path
        commits without them. Flush the rows before the block ends, where they go in sooner."""
        if not self.sole or self.conn.dialect.name != "sqlite" or self._deferred_indexes is not None:
            yield
            return
        self._deferred_indexes = {}
        try:
            yield
        finally:
            for table in list(self._deferred_indexes):
                self._build_indexes(table)
            self._deferred_indexes = None

    def _drop_indexes(self, table: str) -> None:
        assert self._deferred_indexes is not None
        quote = self.conn.dialect.identifier_preparer.quote
        name = SPECS[table].table.name
        made_by_create_index = [
            row[1]
            for row in self.conn.exec_driver_sql(f"PRAGMA index_list({quote(name)})")
            if row[2] == 0 and row[3] == "c"
        ]
        statements = []
        for index in made_by_create_index:
            (statement,) = self.conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (index,)
            ).one()
            self.conn.exec_driver_sql(f"DROP INDEX {quote(index)}")
            statements.append(statement)
        if statements:
            self._deferred_indexes[table] = statements

    def _build_indexes(self, table: str) -> None:
        assert self._deferred_indexes is not None
        for statement in self._deferred_indexes.pop(table):
            self.conn.exec_driver_sql(statement)

    def _split_new(self, table: str, batch: list[tuple[int | None, dict]]) -> list[tuple[int | None, dict]]:
        """Keep the rows not stored yet; map the ids of those that are."""
        spec = SPECS[table]
        keys = [spec.key_of(cols) for _, cols in batch]
        only_mine = self._only_mine(table)
        if only_mine:
            lookup = []
        else:  # a key naming a parent this writer inserted can only be stored by this writer: not looked up
            fresh = [(i, self._new[spec.refs[k]]) for i, k in enumerate(spec.key) if k in spec.refs]
            lookup = [k for k in set(keys) if not any(k[i] in ids for i, ids in fresh)]
        stored = self._stored_keys(spec, lookup)
        mine = self._new_keys[table]
        stored.update((k, mine[k]) for k in set(keys) if k in mine)
        new: list[tuple[int | None, dict]] = []
        seen: dict[tuple, str | None] = {}
        for (line, cols), key in zip(batch, keys, strict=True):
            if key in stored or key in seen:
                stored_id = stored[key] if key in stored else seen[key]
                self.present[table] += 1
                if stored_id is not None and cols.get("id") not in (None, stored_id):
                    self._alias[table][cols["id"]] = stored_id
                continue
            seen[key] = cols.get("id")
            new.append((line, cols))
        if "id" in spec.table.c and new:
            ids = [cols["id"] for _, cols in new]
            if only_mine:
                clashes = self._new[table].intersection(ids)
            else:
                clashes = {r[0] for r in select_in(self.conn, spec.table, ["id"], ["id"], ids)}
            kept: dict[str, tuple[int | None, dict]] = {}
            for line, cols in new:
                if cols["id"] in clashes:
                    self.problem(line, "id", f"{table} id {cols['id']} is already stored for a different record")
                elif cols["id"] in kept:  # two different records under one id in this file
                    self.problem(
                        line,
                        "id",
                        f"{table} id {cols['id']} is also given to a different record on line {kept[cols['id']][0]}",
                    )
                else:
                    kept[cols["id"]] = (line, cols)
            new = list(kept.values())
        return new

    def _check_operation_links(self, batch: list[tuple[int | None, dict]], field_: str, stated_in: str) -> list:
        """A workload's or implementation's operationId must name the operation its spec names
        (the spec's digest, which the row's converter put in ``stated_in``)."""
        ids = {cols["operation_id"] for _, cols in batch if cols.get("operation_id")}
        digests = dict(select_in(self.conn, t.operations, ["id", "semantic_digest"], ["id"], ids))
        kept = []
        for line, cols in batch:
            stated = cols[stated_in]
            if cols.get("operation_id") and stated is not None and digests.get(cols["operation_id"]) != stated:
                self.problem(
                    line,
                    "operationId",
                    f"names operation {cols['operation_id']}, whose digest is not the {field_} {stated}",
                )
            else:
                kept.append((line, cols))
        return kept

    def _write(self, table: str, batch: list[tuple[int | None, dict]]) -> None:
        spec = SPECS[table]
        batch = self._resolve_refs(spec, batch)
        # the file's claims are checked whether or not the row is stored already
        if table == "workloads":
            batch = self._check_operation_links(batch, "spec.operationSpecDigest", "operation_digest")
        elif table == "implementations":
            batch = self._check_operation_links(batch, "spec.operation.specDigest", "operation_spec_digest")
            for _, cols in batch:
                del cols["operation_spec_digest"]  # checked; not a column
        batch = self._split_new(table, batch)
        if not batch:
            return
        if table in SHARED_PARENTS:
            batch = self._insert_race_free(table, batch)
        else:
            insert_rows(self.conn, spec.table, [cols for _, cols in batch])
        self.added[table] += len(batch)
        if "id" in spec.table.c:
            self._known[table].update(cols["id"] for _, cols in batch)
            self._new[table].update(cols["id"] for _, cols in batch)
        self._new_keys[table].update((spec.key_of(c), c.get("id")) for _, c in batch)
        if table == "workloads":
            self._link_pending_runs(t.runs.c.workload_digest, [c["workload_digest"] for _, c in batch])
        elif table == "implementations":
            self._link_pending_runs(t.runs.c.implementation_digest, [c["implementation_digest"] for _, c in batch])
        elif table == "sources":
            self._link_pending_runs(t.runs.c.source_slug, [c["slug"] for _, c in batch])

    def _insert_race_free(self, table: str, batch: list[tuple[int | None, dict]]) -> list[tuple[int | None, dict]]:
        """Insert rows another writer may be adding at the same moment: a conflict is skipped and the
        stored row re-read, so a parent added by both ends up stored once and both name its id."""
        spec = SPECS[table]
        insert_rows(self.conn, spec.table, [cols for _, cols in batch], skip_clashes=True)
        keys = [spec.key_of(cols) for _, cols in batch]
        stored = self._stored_keys(spec, keys)
        inserted = []
        for (line, cols), key in zip(batch, keys, strict=True):
            if stored.get(key) == cols["id"]:
                inserted.append((line, cols))
            elif (stored_id := stored.get(key)) is not None:  # a shared parent's row always has an id
                self.present[table] += 1
                self._alias[table][cols["id"]] = stored_id
            else:
                self.problem(line, "id", f"{table} id {cols['id']} is already stored for a different record")
        return inserted

    # -- runs -----------------------------------------------------------------------------

    def _write_runs(self, batch: list[tuple[int | None, dict]]) -> None:
        batch = self._split_new("runs", self._checked_runs(self._resolve_refs(SPECS["runs"], batch)))
        if not batch:
            return
        protocols = [cols.pop("protocol_row") for _, cols in batch]
        environments = [cols.pop("environment_row") for _, cols in batch]
        self._add_missing(t.protocols, "protocol_digest", protocols)
        self._add_missing(t.environments, "environment_digest", environments)
        sources = self._sources_by_slug([c["source_slug"] for _, c in batch if c.get("source_id") is None])
        rows, retractions = [], []
        for _, cols in batch:
            if cols.get("source_id") is None and cols.get("source_slug") in sources:
                cols["source_id"] = sources[cols["source_slug"]]
            if (stated := cols.pop("stated_retraction", None)) is not None:
                retractions.append((cols["id"], cols.get("comparison_key"), *stated))
            rows.append(cols)
        # links and keys are set only on runs whose workload/implementation is stored (absent = NULL)
        insert_rows(self.conn, t.runs, rows)
        self.added["runs"] += len(rows)
        self._known["runs"].update(c["id"] for c in rows)
        self._new["runs"].update(c["id"] for c in rows)
        self._new_keys["runs"].update(((c["run_digest"],), c["id"]) for c in rows)
        for run_id, comparison_key, at, reason in retractions:
            self._insert_retraction(run_id, comparison_key, reason, at, stated_by_run=True)

    def _checked_runs(self, batch: list[tuple[int | None, dict]]) -> list[tuple[int | None, dict]]:
        """Link runs to stored workloads/implementations and check what the file says about them."""
        workloads = self._by_digest(t.workloads, "workload_digest", [c["workload_digest"] for _, c in batch])
        impls = self._by_digest(
            t.implementations, "implementation_digest", [c["implementation_digest"] for _, c in batch]
        )
        kept = []
        for line, cols in batch:
            stated_workload = cols.pop("stated_workload_id", None)
            stated_impl = cols.pop("stated_implementation_id", None)
            stated_keys = cols.pop("stated_keys", {})
            try:
                workload = workloads.get(cols["workload_digest"])
                if workload is not None:
                    self._check_link("workloadId", "workloads", stated_workload, workload["id"])
                    cols.update(run_keys(cols, workload))
                    for key, column in (("correctnessKey", "correctness_key"), ("comparisonKey", "comparison_key")):
                        if stated_keys.get(key) is not None and stated_keys[key] != cols[column]:
                            raise RowError(
                                key, f"key mismatch: the file says {stated_keys[key]}, recomputed {cols[column]}"
                            )
                impl = impls.get(cols["implementation_digest"])
                if impl is not None:
                    self._check_link("implementationId", "implementations", stated_impl, impl["id"])
                    cols["implementation_id"] = impl["id"]
            except RowError as exc:
                self.problem(line, exc.field, exc.reason)
                continue
            kept.append((line, cols))
        return kept

    def _check_link(self, field_: str, table: str, stated: str | None, actual: str) -> None:
        if stated is not None and self._alias[table].get(stated, stated) != actual:
            raise RowError(field_, f"names {table} id {stated}, but the run's digest belongs to {actual}")

    def _add_missing(self, table: Table, key: str, rows: list[dict]) -> None:
        unique = {r[key]: r for r in rows}
        stored = {r[0] for r in select_in(self.conn, table, [key], [key], unique)}
        new = [r for k, r in unique.items() if k not in stored]
        if new:
            insert_rows(self.conn, table, new)
            self.added[table.name] += len(new)

    def _by_digest(self, table: Table, key: str, digests: list[str]) -> dict[str, dict]:
        columns = [key, "id", *(["operation_digest", "correctness_key"] if table is t.workloads else [])]
        return {
            row[0]: dict(zip(columns, row, strict=True)) for row in select_in(self.conn, table, columns, [key], digests)
        }

    def _sources_by_slug(self, slugs: list[str | None]) -> dict[str, str]:
        return dict(select_in(self.conn, t.sources, ["slug", "id"], ["slug"], (s for s in slugs if s)))

    def _link_pending_runs(self, digest_column, values: list[str]) -> None:
        """Fill the links of stored runs that were waiting for these workloads/implementations/sources."""
        if self._only_mine("runs") and not self._new["runs"]:
            return  # no run is stored at all
        for chunk in in_chunks(sorted(set(values))):
            pending_column = {
                "workload_digest": t.runs.c.workload_id,
                "implementation_digest": t.runs.c.implementation_id,
                "source_slug": t.runs.c.source_id,
            }[digest_column.name]
            waiting = (
                self.conn.execute(select(t.runs).where(and_(digest_column.in_(chunk), pending_column.is_(None))))
                .mappings()
                .all()
            )
            if not waiting:
                continue
            targets: Mapping[str, Any]  # rows by digest, or source ids by slug
            if digest_column.name == "workload_digest":
                targets = self._by_digest(t.workloads, "workload_digest", [r["workload_digest"] for r in waiting])
                fill: Callable[..., dict] = lambda r, targets=targets: run_keys(  # noqa: E731
                    r, targets[r["workload_digest"]]
                )
            elif digest_column.name == "implementation_digest":
                digests = [r["implementation_digest"] for r in waiting]
                targets = self._by_digest(t.implementations, "implementation_digest", digests)
                fill = lambda r, targets=targets: {  # noqa: E731
                    "implementation_id": targets[r["implementation_digest"]]["id"]
                }
            else:
                targets = self._sources_by_slug([r["source_slug"] for r in waiting])
                fill = lambda r, targets=targets: {"source_id": targets[r["source_slug"]]}  # noqa: E731
            for run in waiting:
                self.conn.execute(update(t.runs).where(t.runs.c.id == run["id"]).values(**fill(run)))
                self.linked[pending_column.name] += 1

    # -- programmatic additions -----------------------------------------------------------

    def add_run_bundle(
        self,
        bundle: Mapping[str, Any],
        *,
        line: int | None = None,
        runner_id: str | None = None,
        runner_host: str | None = None,
        supersedes_id: str | None = None,
        published_at: str | None = None,
    ) -> str | None:
        """Store one ``{run, protocol, environment}`` bundle (and its measurements).

        Returns the new run's id, or ``None`` when a run with that digest is already stored.
        Raises :class:`RowError` when the bundle is refused.
        """
        cols = run_columns(bundle)
        cols.update(
            id=uuid7(),
            published_at=published_at or now_iso(),
            runner_id=runner_id,
            runner_host=runner_host,
            supersedes_id=supersedes_id,
        )
        cols["export_row"] = bundle_export_row(cols)
        self.add("runs", line, cols)
        self.flush()
        run_id = self._new_keys["runs"].get((cols["run_digest"],))
        if run_id is not None and run_id == cols["id"]:
            spec = bundle["run"]["spec"]
            for m in derived_measurements(spec):
                self.add("measurements", line, _measurement(run_id, m))
            self.flush()
            return run_id
        return None

    def ensure_source(self, slug: str, kind: str, name: str, policy: Mapping[str, Any] | None = None) -> str:
        """The id of the source ``slug``, added if absent (e.g. ``kernelindex-harness``, ``controlled``)."""
        found = self._sources_by_slug([slug])
        if slug in found:
            return found[slug]
        row: dict[str, Any] = {
            "id": uuid7(),
            "slug": slug,
            "kind": kind,
            "name": name,
            "policy": policy,
            "createdAt": now_iso(),
        }
        self.add("sources", None, source_columns(row))
        self.flush()
        return row["id"]

    def add_record(self, record: Mapping[str, Any], *, project_id: str | None = None, slug: str | None = None) -> str:
        """Store a SoftwareProject, OperationSpec, WorkloadCase/Suite or ImplementationRevision.

        Returns the stored row's id (the existing one when a record with that digest is stored).
        Workloads and implementations are linked to their operation by its digest when stored;
        runs waiting for this workload or implementation are linked now. Raises RowError.
        """
        kind = record.get("kind")
        if kind not in _RECORD_ROWS:
            raise RowError("kind", f"add_record takes {', '.join(_RECORD_ROWS)}, not {kind!r}")
        table, build = _RECORD_ROWS[kind]
        row = build(self, record, project_id=project_id, slug=slug or names.slug(record["metadata"]["name"], url=True))
        converter = {
            "projects": project_columns,
            "operations": operation_columns,
            "workloads": workload_columns,
            "implementations": implementation_columns,
        }[table]
        cols = converter(row)
        self.add(table, None, cols)
        self.flush()
        spec = SPECS[table]
        key = spec.key_of(cols)
        stored_id = self._stored_keys(spec, [key])[key]
        assert stored_id is not None  # these four tables' rows all have an id
        return stored_id

    def _operation_id(self, semantic_digest: str | None) -> str | None:
        if semantic_digest is None:
            return None
        return self.conn.scalar(select(t.operations.c.id).where(t.operations.c.semantic_digest == semantic_digest))

    def add_artifact(
        self, *, run_id: str | None, role: str, kind: str, media_type: str, content: bytes, license_: str | None = None
    ) -> str:
        """Keep bytes (e.g. raw timing samples) as an artifact linked to a run; returns its digest."""
        content_digest = sha256_digest(content)
        cols = {
            "id": uuid7(),
            "content_digest": content_digest,
            "kind": kind,
            "media_type": media_type,
            "size_bytes": len(content),
            "storage": "inline",
            "uri": None,
            "license": license_,
            "content": content,
            "created_at": now_iso(),
        }
        cols["export_row"] = {
            "id": cols["id"],
            "contentDigest": content_digest,
            "kind": kind,
            "mediaType": media_type,
            "sizeBytes": len(content),
            "storage": "inline",
            "uri": None,
            "license": license_,
            "createdAt": cols["created_at"],
        }
        self.add("artifacts", None, cols)
        self.flush()
        artifact_id = self.conn.scalar(select(t.artifacts.c.id).where(t.artifacts.c.content_digest == content_digest))
        if run_id is not None:
            link = {"run_id": run_id, "artifact_id": artifact_id, "role": role}
            exists = self.conn.scalar(select(t.run_artifacts.c.seq).filter_by(**link))
            if exists is None:
                self.conn.execute(insert(t.run_artifacts), [link])
        return content_digest

    def retract_run(self, run_id: str, reason: str, *, at: str | None = None) -> str:
        """A retraction is a new event row; the run itself is never edited."""
        comparison = self.conn.scalar(select(t.runs.c.comparison_key).where(t.runs.c.id == run_id))
        return self._insert_retraction(run_id, comparison, reason, at or now_iso())

    def _insert_retraction(
        self, run_id: str, comparison_key: str | None, reason: str | None, at: str, *, stated_by_run: bool = False
    ) -> str:
        """The one way a retraction is stored: a ``retracted`` event. One a catalog run row states
        (``retractedAt``) is marked ``derivedFrom`` so the export writes it back on the run row only."""
        event_id = uuid7()
        row = {
            "id": event_id,
            "comparisonKey": comparison_key,
            "runId": run_id,
            "previousRunId": None,
            "policyVersion": None,
            "cause": "retracted",
            "reason": reason,
            "at": at,
            "createdAt": at,
        }
        if stated_by_run:
            row["derivedFrom"] = DERIVED_FROM_RUN_ROW
        self.flush()
        self.conn.execute(
            insert(t.record_events),
            [
                {
                    "id": event_id,
                    "comparison_key": comparison_key,
                    "run_id": run_id,
                    "previous_run_id": None,
                    "policy_version": None,
                    "cause": "retracted",
                    "reason": reason,
                    "at": at,
                    "created_at": at,
                    "export_row": row,
                }
            ],
        )
        self.added["record_events"] += 1
        self._new["record_events"].add(event_id)
        self._new_keys["record_events"][(event_id,)] = event_id
        return event_id


def _project_row(writer: Writer, record: Mapping, *, project_id: str | None, slug: str) -> dict[str, Any]:
    name = record["spec"].get("name", slug)
    return {
        "id": uuid7(),
        "slug": slug,
        "name": name,
        "normalizedName": name.lower(),
        "canonicalUrl": None,
        "licenseExpression": None,
        "manifest": record,
        "createdAt": now_iso(),
    }


def _operation_row(writer: Writer, record: Mapping, *, project_id: str | None, slug: str) -> dict[str, Any]:
    return {
        "id": uuid7(),
        "slug": slug,
        "family": record["spec"].get("family"),
        "name": record["metadata"].get("title", slug),
        "schemaVersion": record["apiVersion"],
        "semanticDigest": digest(record),
        "manifest": record,
        "tags": [],
        "createdAt": now_iso(),
        "supersedesId": None,
    }


def _workload_row(writer: Writer, record: Mapping, *, project_id: str | None, slug: str) -> dict[str, Any]:
    return {
        "id": uuid7(),
        "operationId": writer._operation_id(record["spec"].get("operationSpecDigest")),
        "workloadDigest": digest(record),
        "schemaVersion": record["apiVersion"],
        "manifest": record,
        "shapeSummary": None,
        "dtypes": [],
        "layoutKeys": [],
        "createdAt": now_iso(),
    }


def _implementation_row(writer: Writer, record: Mapping, *, project_id: str | None, slug: str) -> dict[str, Any]:
    spec = record["spec"]
    return {
        "id": uuid7(),
        "projectId": project_id,
        "operationId": writer._operation_id((spec.get("operation") or {}).get("specDigest")),
        "slug": slug,
        "implementationDigest": digest(record),
        "sourceRevision": None,
        "language": (spec.get("callable") or {}).get("language"),
        "framework": None,
        "targetArchitectures": [],
        "licenseExpression": None,
        "sourceAvailable": "source" in spec,
        "installable": False,
        "title": record["metadata"].get("title", slug),
        "installKind": None,
        "installCommand": None,
        "licenseDeclared": None,
        "manifest": record,
        "createdAt": now_iso(),
        "supersedesId": None,
    }


# record kind -> (store table, builder of its export row)
_RECORD_ROWS = {
    "SoftwareProject": ("projects", _project_row),
    "OperationSpec": ("operations", _operation_row),
    "WorkloadCase": ("workloads", _workload_row),
    "WorkloadSuite": ("workloads", _workload_row),
    "ImplementationRevision": ("implementations", _implementation_row),
}


def _measurement(run_id: str, m: Mapping[str, Any]) -> dict[str, Any]:
    row = {"id": uuid7(), "runId": run_id, **m}
    return {
        "id": row["id"],
        "run_id": run_id,
        "metric": m["metric"],
        "statistic": m["statistic"],
        "unit": m["unit"],
        "value": m["value"],
        "sample_count": m.get("sampleCount"),
        "export_row": row,
    }


def bundle_export_row(cols: Mapping[str, Any]) -> dict[str, Any]:
    """A ``benchmark_runs`` export row for a run that came as a bundle (links filled on export)."""
    return {
        "id": cols["id"],
        "runDigest": cols["run_digest"],
        "implementationId": None,
        "workloadId": None,
        "sourceId": None,
        "status": cols["status"],
        "observedAt": cols["observed_at"],
        "publishedAt": cols["published_at"],
        "hardwareVendor": cols["hardware_vendor"],
        "hardwareModel": cols["hardware_model"],
        "hardwareArchitecture": cols["hardware_architecture"],
        "protocolKey": cols["protocol_key"],
        "environmentKey": cols["environment_key"],
        "correctnessKey": None,
        "comparisonKey": None,
        "primaryMetric": cols["primary_metric"],
        "primaryValue": cols["primary_value"],
        "primaryUnit": cols["primary_unit"],
        "sampleCount": cols["sample_count"],
        "primaryStatistic": cols["primary_statistic"],
        "hasRawEvidence": cols["has_raw_evidence"],
        "manifest": None,
        "supersedesId": cols.get("supersedes_id"),
        "retractedAt": None,
        "retractionReason": None,
    }
