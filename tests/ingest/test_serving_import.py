"""Serving tables of a catalog export: typed rows, every digest and cohort key recomputed, the
export byte-identical, refusals naming line and field, and older stores' foreign rows adopted."""

from __future__ import annotations

import copy
import random

import pytest
from sqlalchemy import func, insert, select

from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.export import export_catalog
from kernelindex.ingest.problems import ImportFailed
from kernelindex.records.canonical import canonical_json, sha256_digest
from kernelindex.store import rows as rows_of
from kernelindex.store import tables as t
from kernelindex.store.serving import tables as st
from kernelindex.store.verify import verify_store
from kernelindex.store.writer import Writer
from serving_kit import read_lines, serving_lines, write_lines
from store_fixtures import empty_db_url  # noqa: F401  (fixture)


def _counts(store) -> dict[str, int]:
    with store.begin() as conn:
        return {
            table.name: conn.scalar(select(func.count()).select_from(table))
            for table in (st.model_revisions, st.serving_runs, st.serving_measurements, t.foreign_rows)
        }


def test_serving_rows_import_typed_and_export_byte_for_byte(store, tmp_path):
    seed = random.randrange(2**32)
    lines = serving_lines(seed)
    source = write_lines(tmp_path / "serving.jsonl.zst", lines)
    report = import_catalog(store, source)
    runs = sum(1 for line in lines if line["table"] == "serving_runs")
    assert report.added["serving_runs"] == runs, seed
    assert report.foreign_tables == {}
    assert _counts(store)["serving_measurements"] == runs
    export_catalog(store, tmp_path / "out.jsonl.zst")
    assert read_lines(tmp_path / "out.jsonl.zst") == read_lines(source)
    assert sum(import_catalog(store, source).added.values()) == 0
    verified = verify_store(store)
    assert verified.ok and verified.checked >= runs


def _refused(store, tmp_path, lines, field: str, words: str) -> None:
    before = _counts(store)
    with pytest.raises(ImportFailed) as refused:
        import_catalog(store, write_lines(tmp_path / "bad.jsonl.zst", lines))
    problem = refused.value.problems[0]
    assert problem.field == field and words in problem.reason, problem
    assert problem.line is not None
    assert _counts(store) == before


def test_a_wrong_cohort_key_is_refused_with_nothing_stored(store, tmp_path):
    lines = serving_lines(random.randrange(2**32))
    first_run = next(i for i, line in enumerate(lines) if line["table"] == "serving_runs")
    lines[first_run]["row"]["cohortKey"] = sha256_digest(b"not the key")
    _refused(store, tmp_path, lines, "cohortKey", "key mismatch")


def test_a_summary_column_contradicting_its_record_is_refused(store, tmp_path):
    lines = serving_lines(random.randrange(2**32))
    first_run = next(i for i, line in enumerate(lines) if line["table"] == "serving_runs")
    lines[first_run]["row"]["totalAccelerators"] += 1
    _refused(store, tmp_path, lines, "totalAccelerators", "its record says")


def test_a_run_naming_a_model_nobody_stored_is_refused(store, tmp_path):
    lines = [line for line in serving_lines(random.randrange(2**32)) if line["table"] != "model_revisions"]
    _refused(store, tmp_path, lines, "manifest.spec.modelDigest", "neither in this import nor stored")


def test_a_model_whose_digest_does_not_hash_is_refused(store, tmp_path):
    lines = serving_lines(random.randrange(2**32))
    model = next(line for line in lines if line["table"] == "model_revisions")
    model["row"]["manifest"] = copy.deepcopy(model["row"]["manifest"])
    model["row"]["manifest"]["spec"]["model"] += " (edited)"
    _refused(store, tmp_path, lines, "modelDigest", "digest mismatch")


def test_foreign_serving_rows_of_an_older_store_become_typed_rows(empty_db_url, tmp_path):  # noqa: F811
    """A store at revision 0200 kept serving rows as foreign rows; 0400 adopts them, losing nothing."""
    from alembic import command
    from sqlalchemy import create_engine

    from kernelindex.store.database import alembic_config, open_store

    lines = serving_lines(random.randrange(2**32), runs_per_cell=1)
    source = write_lines(tmp_path / "serving.jsonl.zst", lines)
    engine = create_engine(empty_db_url)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0200_rank_indexes")
        # the source and project rows were modelled at 0200 already; the serving ones were not
        writer = Writer(conn)
        writer.add("sources", 1, rows_of.source_columns(lines[0]["row"]))
        writer.add("projects", 2, rows_of.project_columns(lines[1]["row"]))
        writer.flush()
        rows = [
            {"table_name": line["table"], "row": line["row"], "row_digest": sha256_digest(canonical_json(line["row"]))}
            for line in lines
            if line["table"] not in ("sources", "projects")
        ]
        conn.execute(insert(t.foreign_rows), rows)
    engine.dispose()
    store = open_store(empty_db_url)  # migrates to head
    counts = _counts(store)
    assert counts["foreign_rows"] == 0
    assert counts["serving_runs"] == sum(line["table"] == "serving_runs" for line in lines)
    import_catalog(store, source)  # the adopted rows are the same records: nothing is added twice
    assert _counts(store) == counts
    assert verify_store(store).ok
    store.engine.dispose()


def test_the_public_serving_slice_round_trips_with_every_key_recomputed(shared_dir, tmp_path):
    from kernelindex.store import open_store

    slice_path = shared_dir / "data" / "kernelindex-serving-slice-2026-08-16.jsonl.zst"
    if not slice_path.is_file():
        pytest.skip(f"{slice_path} is absent (the public serving slice lives in ../shared/data)")
    store = open_store(f"sqlite:///{tmp_path / 'slice.db'}")
    report = import_catalog(store, slice_path)
    assert report.added["serving_runs"] == 722 and report.foreign_tables == {}
    verified = verify_store(store)
    assert verified.ok, verified.mismatches[:3]
    export_catalog(store, tmp_path / "out.jsonl.zst")
    assert (tmp_path / "out.jsonl.zst").exists()
    assert read_lines(tmp_path / "out.jsonl.zst") == read_lines(slice_path)
