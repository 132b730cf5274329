"""Importing a KernelIndex catalog export (``.jsonl.zst``), streamed, in one transaction.

Every record is validated and every digest and key in the file recomputed; any refused line
makes the whole import fail with the list of problems, and the store is left as it was. Tables
this store does not model (newer ones) are kept as foreign rows and
re-exported; columns it does not know are kept in the stored row; both are counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import rfc8785

from kernelindex.ingest.jsonlines import parse_line, read_lines
from kernelindex.ingest.problems import ImportFailed, LineError, Problem
from kernelindex.ingest.serving import SERVING_TABLES
from kernelindex.records.canonical import canonical_json, sha256_digest
from kernelindex.store import rows
from kernelindex.store.database import Store
from kernelindex.store.serving_writes import serving_run_row
from kernelindex.store.writer import Writer

MAX_PROBLEMS = 50

# export table -> (store table, row converter, columns this version understands)
TABLES: dict[str, tuple[str, Callable[[dict], dict], frozenset[str]]] = {
    "sources": ("sources", rows.source_columns, frozenset("id slug kind name policy createdAt".split())),
    "projects": (
        "projects",
        rows.project_columns,
        frozenset("id slug name normalizedName canonicalUrl licenseExpression manifest createdAt".split()),
    ),
    "operations": (
        "operations",
        rows.operation_columns,
        frozenset("id slug family name schemaVersion semanticDigest manifest tags createdAt supersedesId".split()),
    ),
    "operation_aliases": ("operation_aliases", rows.alias_columns, frozenset({"operationId", "alias"})),
    "workloads": (
        "workloads",
        rows.workload_columns,
        frozenset(
            "id operationId workloadDigest schemaVersion manifest shapeSummary dtypes layoutKeys createdAt".split()
        ),
    ),
    "implementations": (
        "implementations",
        rows.implementation_columns,
        frozenset(
            "id projectId operationId slug implementationDigest sourceRevision language framework targetArchitectures "
            "licenseExpression sourceAvailable installable title installKind installCommand licenseDeclared manifest "
            "createdAt supersedesId".split()
        ),
    ),
    "benchmark_runs": (
        "runs",
        rows.catalog_run_columns,
        frozenset(
            "id runDigest implementationId workloadId sourceId status observedAt publishedAt hardwareVendor "
            "hardwareModel hardwareArchitecture driverMajor cudaMajor protocolKey environmentKey correctnessKey "
            "comparisonKey primaryMetric primaryValue primaryUnit sampleCount uncertaintyLow uncertaintyHigh reported "
            "reproducedByKernelindex independentReplicationCount sourceAvailable installable licenseExpression "
            "primaryStatistic hasRawEvidence sourceNative environmentSummary manifest supersedesId retractedAt "
            "retractionReason".split()
        ),
    ),
    "measurements": (
        "measurements",
        rows.measurement_columns,
        frozenset("id runId metric statistic unit value sampleCount".split()),
    ),
    "artifacts": (
        "artifacts",
        rows.artifact_columns,
        frozenset("id contentDigest kind mediaType sizeBytes storage uri license createdAt".split()),
    ),
    "record_events": (
        "record_events",
        rows.event_columns,
        frozenset("id comparisonKey runId previousRunId policyVersion cause reason at createdAt".split()),
    ),
    **SERVING_TABLES,
}


@dataclass
class ImportReport:
    path: str
    lines: int = 0
    added: Counter = field(default_factory=Counter)
    present: Counter = field(default_factory=Counter)
    linked: Counter = field(default_factory=Counter)
    foreign_tables: Counter = field(default_factory=Counter)  # rows kept for tables not modelled
    unknown_columns: Counter = field(default_factory=Counter)  # "table.column" -> rows

    def absorb(self, writer: Writer) -> None:
        self.added.update(writer.added)
        self.present.update(writer.present)
        self.linked.update(writer.linked)


def _foreign_row(table: str, row: Any) -> dict[str, Any]:
    return {"table_name": table, "row_digest": sha256_digest(canonical_json(row)), "row": row}


def import_catalog(
    store: Store, path: Path, *, open_file: Callable[[Path], BinaryIO] | None = None
) -> ImportReport:
    """Import one export file; raises :class:`ImportFailed` (nothing stored) on any refused line."""
    report = ImportReport(str(path))
    problems: list[Problem] = []
    name = str(path)
    with store.begin() as conn, (open_file or (lambda p: open(p, "rb")))(path) as stream:
        writer = Writer(conn)
        try:
            for number, text in read_lines(path, stream):
                report.lines += 1
                try:
                    _add_line(writer, report, number, parse_line(number, text))
                except LineError as exc:
                    problems.append(Problem(name, exc.line, exc.field, exc.reason))
                except rows.RowError as exc:
                    problems.append(Problem(name, number, exc.field, exc.reason))
                except rfc8785.CanonicalizationError as exc:
                    problems.append(Problem(name, number, None, f"has no canonical JSON form: {exc}"))
                if len(problems) + len(writer.problems) >= MAX_PROBLEMS:
                    break
            writer.flush()
        except LineError as exc:
            problems.append(Problem(name, exc.line, exc.field, exc.reason))
        # a dangling reference is reported only when nothing else went wrong: it is usually the
        # echo of a parent line refused above, and one clear message beats a cascade
        primary = bool(problems) or any(not p.consequential for p in writer.problems)
        problems += [Problem(name, p.line, p.field, p.reason) for p in writer.problems if not (primary and p.consequential)]
        if problems:
            problems.sort(key=lambda p: p.line or 0)
            raise ImportFailed(problems)
        report.absorb(writer)
    return report


def _add_line(writer: Writer, report: ImportReport, number: int, obj: Any) -> None:
    if not isinstance(obj, dict) or not isinstance(obj.get("table"), str) or not isinstance(obj.get("row"), dict):
        wrong = "row" if isinstance(obj, dict) and isinstance(obj.get("table"), str) else "table"
        raise LineError(number, 'a catalog line is {"table": NAME, "row": {...}}', wrong)
    table, row = obj["table"], obj["row"]
    for extra in sorted(set(obj) - {"table", "row"}):
        report.unknown_columns[f"(line).{extra}"] += 1
    known = TABLES.get(table)
    if known is None:
        report.foreign_tables[table] += 1
        writer.add("foreign_rows", number, _foreign_row(table, row))
        return
    store_table, convert, columns = known
    for extra in sorted(set(row) - columns):
        report.unknown_columns[f"{table}.{extra}"] += 1
    if table == "serving_runs":
        writer.add(store_table, number, serving_run_row(writer, row))
        return
    writer.add(store_table, number, convert(row))
