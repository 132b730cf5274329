"""Importing small hand-made catalogs: counts, idempotency, round trip, unknown tables, links."""

from __future__ import annotations

import copy
import json
import random

import pytest
from ingest_kit import read_lines
from sqlalchemy import select

from catalog_kit import bundle, catalog_lines, implementation, operation, workload, write_catalog
from kernelindex.ingest.bundles import import_bundles
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.export import export_catalog
from kernelindex.ingest.problems import ImportFailed
from kernelindex.records.canonical import digest
from kernelindex.store import tables as t
from kernelindex.store.reads.export import export_lines
from kernelindex.store.verify import count_records, verify_store


def exported(store) -> list[dict]:
    with store.begin() as conn:
        return [{"table": table, "row": row} for table, row in export_lines(conn)]


def test_import_counts_and_reimport_adds_nothing(store, tmp_path):
    path = write_catalog(tmp_path / "small.jsonl.zst")
    first = import_catalog(store, path)
    assert first.added["runs"] == 2 and first.added["measurements"] == 4 and first.added["workloads"] == 1
    assert first.added["protocols"] == 1 and first.added["environments"] == 1
    again = import_catalog(store, path)
    assert sum(again.added.values()) == 0
    assert again.present["runs"] == 2 and again.present["measurements"] == 4
    with store.begin() as conn:
        runs = conn.execute(select(t.runs.c.workload_id, t.runs.c.comparison_key, t.runs.c.source_id)).all()
    assert all(r.workload_id and r.comparison_key and r.source_id for r in runs)


def test_export_reproduces_every_record_and_digest(store, tmp_path):
    lines = catalog_lines()
    source = write_catalog(tmp_path / "small.jsonl.zst", lines)
    import_catalog(store, source)
    out = tmp_path / "out.jsonl.zst"
    export_catalog(store, out)
    with open(out, "rb") as stream:
        back = [json.loads(text) for _, text in read_lines(out, stream)]
    assert back == lines
    for line in back:
        manifest = line["row"].get("manifest")
        if line["table"] == "benchmark_runs":
            assert digest(manifest["run"]) == line["row"]["runDigest"]
    # and the export imports into a store as the same thing
    assert verify_store(store).ok


def test_unknown_tables_and_columns_are_kept_and_counted(store, tmp_path):
    lines = catalog_lines()
    lines[0]["row"]["newColumn"] = {"nested": [1, 2]}
    lines.append({"table": "training_runs", "row": {"id": "x", "score": 0.5}})
    lines.append({"table": "future_table", "row": {"anything": True}})
    report = import_catalog(store, write_catalog(tmp_path / "extra.jsonl.zst", lines))
    assert report.unknown_columns == {"sources.newColumn": 1}
    assert report.foreign_tables == {"training_runs": 1, "future_table": 1}
    assert exported(store) == lines
    assert sum(import_catalog(store, tmp_path / "extra.jsonl.zst").added.values()) == 0


def test_run_bundle_waits_for_its_workload_and_implementation(store, tmp_path):
    op = operation()
    wl, impl = workload(op), implementation(op, "v1")
    run_file = tmp_path / "run.json"
    run_file.write_text(json.dumps(bundle(wl, impl, median_ns=5000, name="toy-run-0")))
    report = import_bundles(store, [run_file])
    assert report.added["runs"] == 1 and report.added["measurements"] == 2
    with store.begin() as conn:
        run = conn.execute(select(t.runs)).mappings().one()
    assert run["workload_id"] is None and run["implementation_id"] is None and run["comparison_key"] is None
    assert run["workload_digest"] == digest(wl) and run["source_slug"] == "toy-source"

    # the catalog carries the same run (under its own id), its workload, implementation and source
    catalog = import_catalog(store, write_catalog(tmp_path / "small.jsonl.zst"))
    assert catalog.present["runs"] == 1 and catalog.added["runs"] == 1
    assert catalog.linked == {"workload_id": 1, "implementation_id": 1, "source_id": 1}
    # the catalog's measurements of the run we already had are recognised, not doubled
    assert catalog.present["measurements"] == 2
    with store.begin() as conn:
        linked = conn.execute(select(t.runs).where(t.runs.c.id == run["id"])).mappings().one()
        stated = conn.scalar(select(t.runs.c.comparison_key).where(t.runs.c.id != run["id"]))
    assert linked["workload_id"] and linked["implementation_id"] and linked["source_id"]
    assert linked["comparison_key"] is not None and linked["manifest"] == run["manifest"]
    assert stated is not None
    assert verify_store(store).ok


def test_verify_finds_a_record_edited_behind_the_stores_back(store, tmp_path):
    import_catalog(store, write_catalog(tmp_path / "small.jsonl.zst"))
    report = verify_store(store)
    assert report.ok and report.checked == count_records(store)  # every digest, column and leaf
    with store.begin() as conn:
        manifest = conn.scalar(select(t.workloads.c.manifest))
        manifest["spec"]["axes"]["n"] = 2048
        conn.execute(t.workloads.update().values(manifest=manifest))
    report = verify_store(store)
    assert not report.ok
    fields = {(m.table, m.field) for m in report.mismatches}
    assert ("workloads", "workload_digest") in fields


def test_one_transaction_per_import(store, tmp_path):
    """A problem late in the file leaves nothing of the rows before it."""
    lines = catalog_lines()
    lines[-1]["row"]["contentDigest"] = None  # artifacts come last
    from kernelindex.ingest.problems import ImportFailed

    try:
        import_catalog(store, write_catalog(tmp_path / "late.jsonl.zst", lines))
    except ImportFailed as exc:
        assert [(p.line, p.field) for p in exc.problems] == [(len(lines), "contentDigest")]
    else:
        raise AssertionError("the import should have been refused")
    assert exported(store) == []


def test_a_dangling_reference_is_named(store, tmp_path):
    lines = catalog_lines()
    measurement = next(i for i, line in enumerate(lines) if line["table"] == "measurements")
    lines[measurement]["row"]["runId"] = "01900000-0000-7000-8000-999999999999"
    from kernelindex.ingest.problems import ImportFailed

    try:
        import_catalog(store, write_catalog(tmp_path / "dangling.jsonl.zst", lines))
    except ImportFailed as exc:
        assert [(p.line, p.field) for p in exc.problems] == [(measurement + 1, "runId")]
        assert "01900000-0000-7000-8000-999999999999" in exc.problems[0].reason
    else:
        raise AssertionError("the import should have been refused")


def test_each_row_names_its_first_dangling_reference(store, tmp_path):
    """A row with references of several columns that name nothing is refused once, naming the
    first of them in the table's order (an implementation: projectId, then operationId); rows
    whose references are all found are not refused."""
    nowhere = "01900000-0000-7000-8000-99999999999{}"
    lines = catalog_lines()
    first, second = (i for i, line in enumerate(lines) if line["table"] == "implementations")
    lines[first]["row"]["operationId"] = nowhere.format(1)
    lines[second]["row"]["operationId"] = nowhere.format(2)
    lines[second]["row"]["projectId"] = nowhere.format(3)
    with pytest.raises(ImportFailed) as refused:
        import_catalog(store, write_catalog(tmp_path / "dangling.jsonl.zst", lines))
    assert [(p.line, p.field) for p in refused.value.problems] == [
        (first + 1, "operationId"),
        (second + 1, "projectId"),
    ]
    assert nowhere.format(1) in refused.value.problems[0].reason
    assert nowhere.format(3) in refused.value.problems[1].reason
    assert exported(store) == []


def test_a_row_repeated_after_other_tables_is_present_once(store, tmp_path):
    """A measurement of a run this import adds, repeated after lines of other tables (so in a later
    batch), is counted as present, not inserted twice; the same for a re-import of the file."""
    lines = catalog_lines()
    measurements = [i for i, line in enumerate(lines) if line["table"] == "measurements"]
    repeated = copy.deepcopy(lines[random.choice(measurements)])
    lines.append(repeated)  # after the record_events line: a later batch
    path = write_catalog(tmp_path / "twice.jsonl.zst", lines)
    first = import_catalog(store, path)
    assert first.added["measurements"] == len(measurements)
    assert first.present["measurements"] == 1
    again = import_catalog(store, path)
    assert sum(again.added.values()) == 0
    assert again.present["measurements"] == len(measurements) + 1
