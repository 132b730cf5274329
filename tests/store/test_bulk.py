"""Bulk inserts on each backend (PostgreSQL: COPY): what goes in, and the store generation it moves."""

from __future__ import annotations

import json
import random

import pytest

from catalog_kit import catalog_lines, write_catalog
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.export import export_lines
from kernelindex.ingest.problems import ImportFailed
from kernelindex.records.canonical import digest
from kernelindex.store.generation import GenerationReader


def _new_run(lines: list[dict], seed: int) -> dict:
    """A run of the small catalog observed at another (random) time: a new record."""
    run = next(line for line in lines if line["table"] == "benchmark_runs")
    bundle = run["row"]["manifest"]
    stamp = f"2026-0{random.Random(seed).randint(2, 9)}-0{random.Random(seed).randint(1, 9)}T00:00:00.000Z"
    bundle["run"]["spec"]["observedAt"] = stamp
    run["row"].update(id="01900000-0000-7000-8000-000000000999", runDigest=digest(bundle["run"]), observedAt=stamp)
    return run


def test_an_import_that_only_adds_runs_moves_the_generation_once(store, tmp_path):
    """On PostgreSQL new rows go in by COPY, which no statement listener sees: the generation (what
    every page cache is keyed by) must move all the same, once, and not for a refused import."""
    seed = random.randrange(2**32)
    import_catalog(store, write_catalog(tmp_path / "first.jsonl", catalog_lines()))
    read = GenerationReader(store.engine)
    before = read()
    lines = catalog_lines()
    report = import_catalog(store, write_catalog(tmp_path / "more.jsonl", [*lines[:6], _new_run(lines, seed)]))
    assert report.added == {"runs": 1}, seed
    assert read() == before + 1, seed
    broken = catalog_lines()
    run = _new_run(broken, seed + 1)
    run["row"]["id"] = "01900000-0000-7000-8000-000000000998"
    run["row"]["runDigest"] = "sha256:" + "0" * 64
    with pytest.raises(ImportFailed):
        import_catalog(store, write_catalog(tmp_path / "broken.jsonl", [*broken[:6], run]))
    assert read() == before + 1, seed


def test_rows_copied_in_come_back_as_written(store, tmp_path):
    """Every value of the small catalog (JSON, floats, booleans, nulls, text with quotes, tabs and
    line breaks) round-trips through the bulk path of the backend: the export equals the file."""
    lines = catalog_lines()
    rng = random.Random()
    for line in lines:
        if line["table"] == "projects":
            line["row"]["name"] = 'a\ttab, a \\ backslash,\na line break and "quotes" ' + str(rng.random())
    path = write_catalog(tmp_path / "odd.jsonl", lines)
    import_catalog(store, path)
    with store.read() as conn:
        exported = list(export_lines(conn))
    written = [(line["table"], line["row"]) for line in map(json.loads, path.read_text().splitlines())]
    assert exported == written
    assert [list(row) for _, row in exported] == [list(row) for _, row in written]  # key order kept too


def test_a_bulk_insert_alone_moves_the_generation_and_a_rolled_back_one_does_not(store):
    from kernelindex.store import tables as t
    from kernelindex.store.bulk import insert_rows

    read = GenerationReader(store.engine)
    before = read()
    n = random.randint(2, 40)
    rows = [
        {"id": f"01900000-0000-7000-8000-{i:012d}", "slug": f"s{i}", "kind": "leaderboard", "name": f"S {i}"}
        | {"export_row": {"slug": f"s{i}"}}
        for i in range(n)
    ]
    with store.begin() as conn:
        assert insert_rows(conn, t.sources, rows) == n
    assert read() == before + 1
    with pytest.raises(RuntimeError), store.begin() as conn:
        insert_rows(conn, t.sources, [{**rows[0], "id": "01900000-0000-7000-8000-0000000fffff", "slug": "gone"}])
        raise RuntimeError("abandon the transaction")
    assert read() == before + 1
    with store.read() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM sources").scalar_one() == n


def test_a_clash_in_a_bulk_insert_is_the_same_error_on_every_backend(store):
    """COPY's own errors come back as SQLAlchemy's, as a statement's do: callers catch one kind."""
    from sqlalchemy.exc import IntegrityError

    from kernelindex.store import tables as t
    from kernelindex.store.bulk import insert_rows

    row = {"id": "01900000-0000-7000-8000-00000000abcd", "slug": "once", "kind": "leaderboard", "name": "Once"}
    with store.begin() as conn:
        insert_rows(conn, t.sources, [row | {"export_row": {}}])
    with pytest.raises(IntegrityError), store.begin() as conn:
        insert_rows(conn, t.sources, [row | {"slug": "twice", "export_row": {}}])
    with store.read() as conn:
        assert conn.exec_driver_sql("SELECT slug FROM sources").scalars().all() == ["once"]


def test_rows_sent_many_per_statement_all_go_in_in_their_order(store):
    """``rows_per_statement`` (SQLite: several rows per INSERT; PostgreSQL: COPY as ever): every
    row in, in order, whatever the count left for the last statement."""
    from kernelindex.store.bulk import insert_values
    from kernelindex.store.transparency.tables import log_nodes

    rng = random.Random()
    seed = rng.randrange(2**32)
    rng.seed(seed)
    per = rng.randint(2, 60)
    rows = [(key, bytearray(rng.randbytes(32))) for key in rng.sample(range(10**9), rng.randint(1, 5 * per))]
    with store.begin() as conn:
        assert insert_values(conn, log_nodes, ("node", "hash"), rows, rows_per_statement=per) == len(rows), seed
    with store.read() as conn:
        stored = conn.exec_driver_sql("SELECT node, hash FROM log_nodes").all()
    assert sorted((int(k), bytes(h)) for k, h in stored) == sorted((k, bytes(h)) for k, h in rows), seed
