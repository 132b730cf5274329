"""The real public export (from ../shared): whole on SQLite, a consistent slice on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard
from ingest_kit import read_lines
from sqlalchemy import select

from kernelindex.ingest.bundles import import_bundles
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.export import export_catalog
from kernelindex.store import open_store
from kernelindex.store import tables as t
from kernelindex.store.reads.lookup import resolve_run
from kernelindex.store.reads.runs import run_detail
from kernelindex.store.verify import verify_store


def decompressed(path: Path) -> bytes:
    with open(path, "rb") as f:
        return zstandard.ZstdDecompressor().stream_reader(f).read()


def test_whole_export_on_sqlite(catalog_path, seeds_dir, tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'real.db'}")
    first = import_catalog(store, catalog_path)
    assert first.lines == 31_660 and first.added["runs"] == 5_920
    assert first.added["workloads"] == 4_202 and first.added["implementations"] == 4_135
    assert not first.foreign_tables and not first.unknown_columns
    assert sum(import_catalog(store, catalog_path).added.values()) == 0

    report = verify_store(store)
    assert report.ok, report.mismatches[:5]
    assert report.summary().endswith(", 0 mismatches")

    out = tmp_path / "again.jsonl.zst"
    export_catalog(store, out)
    assert decompressed(out) == decompressed(catalog_path)  # every record and digest, byte for byte

    seeds = import_bundles(store, [seeds_dir])
    assert seeds.added["runs"] == 2
    with store.begin() as conn:
        for prefix, tail in (("149b7c1a", "f41e"), ("deb0ae25", "8bc6")):
            detail = run_detail(conn, resolve_run(conn, prefix).id)
            assert detail["digest"].endswith(tail)
            assert detail["workload"] is not None  # the seeds' workload suites are in the export
            assert detail["keys"]["comparison"] is not None
    store.close()


@pytest.fixture
def slice_path(catalog_path, tmp_path) -> Path:
    """The first 150 runs of the export with every row they need (lines kept byte for byte)."""
    with open(catalog_path, "rb") as stream:
        lines = [(json.loads(text), text) for _, text in read_lines(catalog_path, stream)]
    runs = [obj["row"] for obj, _ in lines if obj["table"] == "benchmark_runs"][:150]
    run_ids = {r["id"] for r in runs}
    workloads = {r["workloadId"] for r in runs}
    impls = {r["implementationId"] for r in runs}
    keep = []
    for obj, text in lines:
        table, row = obj["table"], obj["row"]
        wanted = {
            "benchmark_runs": lambda: row["id"] in run_ids,
            "workloads": lambda: row["id"] in workloads,
            "implementations": lambda: row["id"] in impls,
            "measurements": lambda: row["runId"] in run_ids,
            "record_events": lambda: row["runId"] in run_ids and row["previousRunId"] in run_ids | {None},
        }.get(table, lambda: True)()
        if wanted:
            keep.append(text + "\n")
    path = tmp_path / "slice.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress("".join(keep).encode()))
    return path


def test_export_slice_round_trips_on_both_databases(store, slice_path, tmp_path):
    first = import_catalog(store, slice_path)
    assert first.added["runs"] == 150
    assert sum(import_catalog(store, slice_path).added.values()) == 0
    assert verify_store(store).ok
    out = tmp_path / "slice-out.jsonl.zst"
    export_catalog(store, out)
    assert decompressed(out) == decompressed(slice_path)
    with store.begin() as conn:
        links = conn.execute(select(t.runs.c.workload_id, t.runs.c.implementation_id, t.runs.c.comparison_key)).all()
    assert len(links) == 150 and all(all(row) for row in links)
