"""Storing MLPerf's serving records in the serving tables, as a catalog export's serving rows.

Each record becomes the export row the public site writes for it and then goes through the very
converters a catalog's serving tables go through (:data:`kernelindex.ingest.serving.SERVING_TABLES`
and :func:`kernelindex.store.serving.writes.serving_run_row`): every digest and key recomputed,
every restated column checked. Everything is written in one transaction (the caller's when it holds
one, e.g. a use case's), under the source row whose policy carries upstream's URL, terms and
licence; anything refused leaves the store as it was. Re-importing adds nothing: rows whose digest
is stored are counted as present and their children pointed at the stored ids.
"""

from __future__ import annotations

from typing import Any

from kernelindex import API_VERSION
from kernelindex.ingest.catalog import ImportReport
from kernelindex.ingest.problems import ImportProblem
from kernelindex.ingest.serving import SERVING_TABLES
from kernelindex.ingest.upstream.common import settle
from kernelindex.ingest.upstream.mlperf import ServingRecords
from kernelindex.records.canonical import digest
from kernelindex.records.serving_keys import run_keys
from kernelindex.store.ids import uuid7
from kernelindex.store.rows import RowError
from kernelindex.store.serving.writes import serving_run_row
from kernelindex.store.writer import Writer, now_iso


def store_serving(store, parsed: ServingRecords, name: str, *, check: bool = False) -> ImportReport:
    """Store ``parsed`` (nothing when anything is refused, or when ``check``); raises ImportFailed."""
    report = ImportReport(name, lines=parsed.rows, checked_only=check)
    prov = parsed.provenance
    problems: list[ImportProblem] = []
    with store.begin() as conn:
        transaction = conn.begin_nested()
        writer = Writer(conn)
        rows = _Rows(writer.ensure_source(prov.slug, prov.kind, prov.name, prov.policy()), now_iso())

        def add(table: str, line: int | None, row: dict[str, Any]) -> None:
            try:
                columns = serving_run_row(writer, row) if table == "serving_runs" else SERVING_TABLES[table][1](row)
            except RowError as exc:
                problems.append(ImportProblem(name, line, exc.field, exc.reason))
                return
            writer.add(table, line, columns)

        for table, records in (
            ("model_revisions", parsed.models),
            ("serving_stack_revisions", parsed.stacks),
            ("serving_configurations", parsed.configurations),
            ("serving_workloads", parsed.workloads),
        ):
            for key, rec in records.items():
                add(table, None, rows.parent(table, key, rec))
        writer.flush()  # parents before the runs whose keys need them
        for (_, run), line in zip(parsed.runs, parsed.run_lines, strict=True):
            run_row = rows.run(run, parsed)
            add("serving_runs", line, run_row)
            for measurement in run["spec"]["measurements"]:
                add("serving_measurements", line, rows.measurement(run_row["id"], measurement))
        writer.flush()
        settle(conn, transaction, writer, report, problems, prov.slug, parsed.skipped, check=check)
    report.source_slugs.add(prov.slug)
    return report


class _Rows:
    """Export rows for one import's records: new ids, and the ids given to each parent's digest."""

    def __init__(self, source_id: str, now: str) -> None:
        self.source_id, self.now = source_id, now
        self.ids: dict[str, str] = {}  # record digest -> the id its row was given

    def _common(self, key: str, rec: dict[str, Any]) -> dict[str, Any]:
        self.ids[key] = uuid7()
        return {"id": self.ids[key], "slug": rec["metadata"]["name"], "schemaVersion": API_VERSION}

    def parent(self, table: str, key: str, rec: dict[str, Any]) -> dict[str, Any]:
        spec, title = rec["spec"], rec["metadata"].get("title")
        row = self._common(key, rec)
        if table == "model_revisions":
            tokenizer = (spec.get("tokenizer") or {}).get("name")
            row |= {"modelDigest": key, "name": title or spec["model"], "parameterCount": spec.get("parameterCount")}
            row |= {"contextLength": spec.get("contextLength"), "tokenizer": tokenizer, "license": spec.get("license")}
        elif table == "serving_stack_revisions":
            version = (spec.get("revision") or {}).get("version")
            row |= {"projectId": None, "stackDigest": key, "name": spec["project"]["name"], "version": version}
        elif table == "serving_configurations":
            options = spec.get("options") or {}
            row |= {"stackRevisionId": self.ids.get(spec["stackDigest"]), "configurationDigest": key}
            row |= {"dtype": spec.get("dtype"), "quantization": None}
            row |= {"tensorParallel": (spec.get("parallelism") or {}).get("tensor"), "summary": options.get("system")}
            del row["slug"]  # the export's configuration rows have none
        else:
            row |= {"workloadDigest": key, "name": title, "streaming": spec.get("streaming")}
            row |= {"loadGeneration": spec.get("loadGeneration")}
        return row | {"manifest": rec, "createdAt": self.now}

    def run(self, run: dict[str, Any], parsed: ServingRecords) -> dict[str, Any]:
        spec = run["spec"]
        model = parsed.models[spec["modelDigest"]]
        workload = parsed.workloads[spec["workloadDigest"]]
        topology = spec["topology"]
        return {
            "id": uuid7(),
            "runDigest": digest(run),
            "modelRevisionId": self.ids[spec["modelDigest"]],
            "configurationId": self.ids[spec["configurationDigest"]],
            "workloadId": self.ids[spec["workloadDigest"]],
            "sourceId": self.source_id,
            "status": spec["status"],
            "observedAt": spec.get("observedAt"),
            "publishedAt": self.now,
            **run_keys(spec, model["spec"], workload["spec"]),
            "qualityPolicy": spec["qualityPolicy"],
            "scenario": (spec.get("sourceNative") or {}).get("scenario"),
            "acceleratorVendor": topology.get("acceleratorVendor"),
            "acceleratorModel": topology["acceleratorModel"],
            "acceleratorCount": topology["acceleratorsPerNode"],
            "nodeCount": topology["nodeCount"],
            "totalAccelerators": topology["acceleratorsPerNode"] * topology["nodeCount"],
            "reported": True,
            "schemaVersion": API_VERSION,
            "manifest": run,
            "supersedesId": None,
            "retractedAt": None,
            "retractionReason": None,
            "createdAt": self.now,
        }

    def measurement(self, run_id: str, m: dict[str, Any]) -> dict[str, Any]:
        return {"id": uuid7(), "runId": run_id, **m, "sampleCount": m.get("sampleCount")}
