"""A retraction is one fact, a ``retracted`` event: stated by a catalog row, made by a correction,
or carried over by migration 0300_one_retraction from the columns older stores had."""

from __future__ import annotations

import io
import json

import zstandard
from alembic import command
from sqlalchemy import inspect, select, text

from catalog_kit import catalog_lines, write_catalog
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.export import export_catalog
from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.ranking.reads import ranked_groups
from kernelindex.store.database import alembic_config
from kernelindex.store.reads.run_facts import is_retracted, run_facts
from kernelindex.store.tables import record_events, runs


def _retracted_catalog(tmp_path):
    lines = catalog_lines()
    run_rows = [line["row"] for line in lines if line["table"] == "benchmark_runs"]
    run_rows[0].update(retractedAt="2026-02-01T00:00:00.000Z", retractionReason="timer bug")
    return write_catalog(tmp_path / "retracted.jsonl.zst", lines), run_rows[0]["id"], run_rows[0]["comparisonKey"]


def _lines(path) -> list[str]:
    """The file's lines as canonical JSON, sorted (the writer's own spacing aside)."""
    with open(path, "rb") as raw:
        text_ = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8").read()
    return sorted(json.dumps(json.loads(line), sort_keys=True) for line in text_.splitlines())


def test_a_catalog_rows_retraction_is_stored_as_one_event(store, tmp_path):
    path, run_id, key = _retracted_catalog(tmp_path)
    import_catalog(store, path)
    with store.engine.connect() as conn:
        events = conn.execute(select(record_events).where(record_events.c.cause == "retracted")).all()
        assert [(e.run_id, e.reason, e.at) for e in events] == [(run_id, "timer bug", "2026-02-01T00:00:00.000Z")]
        assert is_retracted(conn, run_id)
        assert [f.retracted for f in run_facts(conn, [run_id]).values()] == [True]
        group = ranked_groups(conn, [key])[key]
        assert run_id in {x.run.run_id for x in group.excluded} and group.entry(run_id) is None
        digest = conn.scalar(select(runs.c.run_digest).where(runs.c.id == run_id))
        assert evidence_for_runs(conn, [digest])[digest].level == "reported"
    again = import_catalog(store, path)
    assert again.added.get("record_events", 0) == 0
    out = tmp_path / "out.jsonl.zst"
    export_catalog(store, out)
    assert _lines(out) == _lines(path)  # the run row states it; no extra event line


def test_migration_turns_the_old_columns_into_events_and_back(tmp_path):
    from kernelindex.store.database import open_store

    path, run_id, _ = _retracted_catalog(tmp_path)
    store = open_store(str(tmp_path / "m.db"))
    try:
        import_catalog(store, path)
        # migrations run on a plain engine, as `open_store` runs them: the store's engine counts
        # writes in store_generation, a table older revisions do not have
        from sqlalchemy import create_engine

        plain = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
        with plain.begin() as conn:
            command.downgrade(alembic_config(conn), "0400_serving_tables")
        with store.engine.connect() as conn:
            assert {"retracted_at", "retraction_reason"} <= {c["name"] for c in inspect(conn).get_columns("runs")}
            assert conn.execute(
                text("select retracted_at, retraction_reason from runs where id = :i"), {"i": run_id}
            ).one() == ("2026-02-01T00:00:00.000Z", "timer bug")
            assert conn.scalar(text("select count(*) from record_events where cause = 'retracted'")) == 0
        with plain.begin() as conn:
            command.upgrade(alembic_config(conn), "head")
        plain.dispose()
        with store.engine.connect() as conn:
            assert "retracted_at" not in {c["name"] for c in inspect(conn).get_columns("runs")}
            event = conn.execute(select(record_events).where(record_events.c.cause == "retracted")).one()
            assert (event.run_id, event.reason, event.at) == (run_id, "timer bug", "2026-02-01T00:00:00.000Z")
            assert json.loads(json.dumps(event.export_row))["derivedFrom"] == "benchmark_runs.retractedAt"
            assert is_retracted(conn, run_id)
    finally:
        store.close()
