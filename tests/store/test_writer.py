"""Programmatic writes (what the harness uses): records, run bundles, artifacts, retractions."""

from __future__ import annotations

import copy
import json
from importlib import resources

import pytest
from sqlalchemy import func, select

from kernelindex.records.canonical import digest, sha256_digest
from kernelindex.store import tables as t
from kernelindex.store.reads.lookup import resolve_run
from kernelindex.store.reads.runs import run_detail
from kernelindex.store.rows import RowError
from kernelindex.store.verify import verify_store
from kernelindex.store.writer import Writer


def sample_bundles() -> list[dict]:
    folder = resources.files("kernelindex") / "sample"
    return [json.loads(p.read_text()) for p in sorted(folder.iterdir()) if p.name.endswith(".json")]


def test_seed_runs_keep_their_digests(store):
    with store.begin() as conn:
        w = Writer(conn)
        ids = [w.add_run_bundle(b) for b in sample_bundles()]
        assert all(ids)
        digests = set(conn.scalars(select(t.runs.c.run_digest)))
    assert {d[:15] for d in digests} == {"sha256:149b7c1a", "sha256:deb0ae25"}
    assert {d[-4:] for d in digests} == {"f41e", "8bc6"}
    with store.begin() as conn:
        # the seed bundle is kept exactly as received
        stored = conn.scalar(select(t.runs.c.manifest).where(t.runs.c.run_digest.like("sha256:149b7c1a%")))
        assert stored in sample_bundles()
        detail = run_detail(conn, resolve_run(conn, "149b7c1a").id)
    assert detail["primary"] == {"metric": "latency", "statistic": "mean", "unit": "ns", "value": 317881}
    assert detail["pending"] == ["workload", "implementation"]
    assert detail["measurements"] == [
        {"metric": "latency", "statistic": "mean", "unit": "ns", "value": 317881, "sample_count": None}
    ]


def test_a_controlled_run_with_runner_identity_and_raw_samples(store):
    bundle = sample_bundles()[0]
    samples = json.dumps([317000, 317881, 318200]).encode()
    with store.begin() as conn:
        w = Writer(conn)
        source_id = w.ensure_source("kernelindex-harness", "controlled", "KernelIndex controlled harness")
        assert w.ensure_source("kernelindex-harness", "controlled", "again") == source_id
        run_id = w.add_run_bundle(bundle, runner_id="sha256:" + "1f" * 32, runner_host="box-1")
        assert w.add_run_bundle(bundle) is None  # same digest: already stored
        stored_digest = w.add_artifact(
            run_id=run_id, role="rawSamples", kind="raw_samples", media_type="application/json", content=samples
        )
        w.add_artifact(
            run_id=run_id, role="rawSamples", kind="raw_samples", media_type="application/json", content=samples
        )
    assert stored_digest == sha256_digest(samples)
    with store.begin() as conn:
        run = conn.execute(select(t.runs)).mappings().one()
        assert (run["runner_id"], run["runner_host"]) == ("sha256:" + "1f" * 32, "box-1")
        assert conn.scalar(select(func.count()).select_from(t.artifacts)) == 1
        assert conn.scalar(select(func.count()).select_from(t.run_artifacts)) == 1
        assert bytes(conn.scalar(select(t.artifacts.c.content))) == samples
        detail = run_detail(conn, run_id)
    assert detail["artifacts"][0]["content_digest"] == stored_digest
    assert verify_store(store).ok


def test_retraction_is_an_event_not_an_edit(store):
    with store.begin() as conn:
        w = Writer(conn)
        run_id = w.add_run_bundle(sample_bundles()[1])
        before = conn.execute(select(t.runs).where(t.runs.c.id == run_id)).mappings().one()
        w.retract_run(run_id, "measured on a throttled GPU")
        after = conn.execute(select(t.runs).where(t.runs.c.id == run_id)).mappings().one()
        assert dict(before) == dict(after)
        assert run_detail(conn, run_id)["retracted"] is True
        events = conn.execute(select(t.record_events.c.cause, t.record_events.c.reason)).all()
    assert [tuple(e) for e in events] == [("retracted", "measured on a throttled GPU")]


def test_records_link_in_any_order(store):
    from catalog_kit import bundle, implementation, operation, project, workload

    op = operation()
    wl, impl = workload(op), implementation(op)
    with store.begin() as conn:
        w = Writer(conn)
        run_id = w.add_run_bundle(bundle(wl, impl))
        project_id = w.add_record(project())
        op_id = w.add_record(op)
        wl_id = w.add_record(wl)
        impl_id = w.add_record(impl, project_id=project_id)
        assert w.add_record(wl) == wl_id  # idempotent
        run = conn.execute(select(t.runs).where(t.runs.c.id == run_id)).mappings().one()
        stored_wl = conn.execute(select(t.workloads)).mappings().one()
    assert (run["workload_id"], run["implementation_id"]) == (wl_id, impl_id)
    assert stored_wl["operation_id"] == op_id and run["operation_digest"] == digest(op)
    assert run["comparison_key"] is not None
    assert verify_store(store).ok


def test_a_bundle_with_mismatched_protocol_digest_is_refused(store):
    bundle = sample_bundles()[0]
    bundle["protocol"]["spec"]["harness"]["version"] = "v9"
    with store.begin() as conn, pytest.raises(RowError) as caught:
        Writer(conn).add_run_bundle(bundle)
    assert caught.value.field == "manifest.run.spec.protocolDigest"
    assert "digest mismatch" in caught.value.reason


def _indexes(conn) -> dict[str, dict[str, str]]:
    """Index name -> its definition, for the runs and measurements tables."""
    if conn.dialect.name == "sqlite":
        query = "SELECT tbl_name, name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name IN ('runs', 'measurements')"
    else:
        query = "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename IN ('runs', 'measurements')"
    found: dict[str, dict[str, str]] = {"runs": {}, "measurements": {}}
    for table, name, definition in conn.exec_driver_sql(query):
        found[table][name] = definition
    return found


def _index_events(statements: list[str]) -> list[str]:
    """What the statements did to runs and measurements, in order, repeats collapsed."""
    events: list[str] = []
    for sql in statements:
        words = sql.split()
        if words[:2] == ["DROP", "INDEX"]:
            table = "runs" if words[2].strip('"').startswith("ix_runs_") else "measurements"
            event = f"drop {table}"
        elif words[:2] == ["CREATE", "INDEX"]:
            event = f"build {words[words.index('ON') + 1]}"
        elif words[:3] in (["INSERT", "INTO", "runs"], ["INSERT", "INTO", "measurements"]):
            event = f"insert {words[2]}"
        else:
            continue
        if not events or events[-1] != event:
            events.append(event)
    return [e for e in events if e.split()[1] in ("runs", "measurements")]


def test_indexes_of_tables_empty_at_first_touch_are_built_after_their_rows_and_come_back_the_same(store):
    """A sole writer on SQLite drops the non-unique indexes of a table that held no rows when it
    came to it and builds them again once it goes on to another table; rows that come back for
    the table later go in with its indexes in place. Unique indexes (which decide clashes) stay.
    PostgreSQL keeps every index throughout."""
    first, second = sample_bundles()
    statements: list[str] = []
    with store.begin() as conn:
        before = _indexes(conn)
        if store.dialect == "sqlite":
            conn.connection.dbapi_connection.set_trace_callback(statements.append)
        writer = Writer(conn, sole=True)
        with writer.building_indexes_last():
            assert writer.add_run_bundle(first)  # its run, then its measurements
            during = _indexes(conn)
            assert writer.add_run_bundle(second)  # runs again, then measurements again
        after = _indexes(conn)
        if store.dialect == "sqlite":
            conn.connection.dbapi_connection.set_trace_callback(None)
    assert after == before
    assert "ix_runs_rank_cover" in before["runs"] and "ix_measurements_run_id" in before["measurements"]
    if store.dialect == "sqlite":
        assert _index_events(statements) == [
            "drop runs",
            "insert runs",
            "build runs",
            "drop measurements",
            "insert measurements",
            "build measurements",
            "insert runs",
            "insert measurements",
        ]
        assert during["runs"] == before["runs"]  # built when the writer went on to measurements
        kept = {name for name in before["measurements"] if name.startswith("sqlite_autoindex")}
        assert set(during["measurements"]) == kept and len(kept) == 2  # the unique id and key
    else:
        assert during == before
    third = copy.deepcopy(first)  # another run of the same kernel: a new record
    third["run"]["spec"]["observedAt"] = "2026-01-02T03:04:05.678Z"
    with store.begin() as conn:  # tables that hold rows keep their indexes
        writer = Writer(conn, sole=True)
        with writer.building_indexes_last():
            assert writer.add_run_bundle(third)
            assert _indexes(conn) == before
        assert conn.scalar(select(func.count()).select_from(t.runs)) == 3


def test_indexes_come_back_when_the_block_fails_and_a_rollback_keeps_the_store_as_it_was(store):
    with store.begin() as conn:
        before = _indexes(conn)
    with pytest.raises(RuntimeError, match="stop"), store.begin() as conn:
        writer = Writer(conn, sole=True)
        with writer.building_indexes_last():
            writer.add_run_bundle(sample_bundles()[0])
            raise RuntimeError("stop")
        assert _indexes(conn) == before  # not reached: the error leaves the block
    with store.begin() as conn:
        assert _indexes(conn) == before
        assert conn.scalar(select(func.count()).select_from(t.runs)) == 0
    with store.begin() as conn:  # and when the caller goes on after the error, the indexes are there
        writer = Writer(conn, sole=True)
        with pytest.raises(RuntimeError), writer.building_indexes_last():
            writer.add_run_bundle(sample_bundles()[0])
            raise RuntimeError("stop")
        assert _indexes(conn) == before
