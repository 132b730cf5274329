"""``verify`` finds every kind of tampering with records or the log, on SQLite and PostgreSQL:
an edited denormalised column (issue #32: a run's primary_value), an edited record, a removed
record, reordered records, a record slipped in behind the store's back, an edited, removed or
reordered leaf, an edited subtree hash."""

from __future__ import annotations

import hashlib
import random

import pytest
from sqlalchemy import select, text

from catalog_kit import write_catalog
from kernelindex.ingest.bundles import import_bundles
from kernelindex.ingest.catalog import import_catalog
from kernelindex.store import tables as t
from kernelindex.store.transparency import reads
from kernelindex.store.transparency.leaves import BY_ID, LOGGED
from kernelindex.store.transparency.tables import KEPT_LEVEL, log_blocks, node_key
from kernelindex.store.verify import verify_store
from log_tamper_kit import forge_leaf, keep_leaves, retable_leaf, swap_leaves
from store_fixtures import BACKENDS  # noqa: F401

SAMPLE = sorted((__import__("pathlib").Path(__file__).resolve().parents[2] / "src/kernelindex/sample").glob("*.json"))


@pytest.fixture
def filled(store, tmp_path):
    import_catalog(store, write_catalog(tmp_path / "small.jsonl.zst"))
    import_bundles(store, SAMPLE)
    report = verify_store(store)
    assert report.ok, report.mismatches[:5]
    return store


def _raw(store, sql: str, **params) -> None:
    """A change made straight in the database, as an operator or an attacker would: no store code."""
    with store.engine.connect() as conn, conn.begin():
        conn.execute(text(sql), params)


def _found(store) -> set[tuple[str, str]]:
    report = verify_store(store)
    assert not report.ok
    return {(m.table, m.field) for m in report.mismatches}


def test_every_record_is_a_leaf_once(filled):
    with filled.read() as conn:
        size = reads.tree_size(conn)
        rows = sum(conn.scalar(select(text("count(*)")).select_from(logged.table)) for logged in LOGGED)
        tables = {BY_ID[number].name for number in conn.execute(select(log_blocks.c.table_id)).scalars()}
    assert size == rows
    assert {"runs", "measurements", "operations", "workloads", "protocols", "record_events", "sources"} <= tables


def test_an_edited_primary_value_is_found(filled):
    _raw(filled, "UPDATE runs SET primary_value = 1.0 WHERE seq = (SELECT MIN(seq) FROM runs)")
    assert ("runs", "primary_value") in _found(filled)


@pytest.mark.parametrize(
    "column",
    ["status", "hardware_model", "primary_unit", "observed_at", "published_at", "sample_count", "has_raw_evidence"],
)
def test_every_run_column_is_checked_against_its_manifest(filled, column):
    values = {"sample_count": 999999, "has_raw_evidence": True}
    with filled.read() as conn:
        seq, current = conn.execute(select(t.runs.c.seq, t.runs.c[column]).order_by(t.runs.c.seq)).first()
    new = values.get(column, "tampered")
    if column == "has_raw_evidence":
        new = not current
    with filled.engine.connect() as conn, conn.begin():
        conn.execute(t.runs.update().where(t.runs.c.seq == seq).values({column: new}))
    assert ("runs", column) in _found(filled)


def test_other_denormalised_columns_are_checked(filled):
    _raw(filled, "UPDATE measurements SET value = value * 2")
    _raw(filled, "UPDATE workloads SET name = 'other'")
    _raw(filled, "UPDATE environments SET hardware_model = 'H999'")
    found = _found(filled)
    assert {("measurements", "value"), ("workloads", "name"), ("environments", "hardware_model")} <= found


def test_a_record_rewritten_with_its_digest_is_found_by_its_leaf(filled):
    """The record and its digest column edited together pass the digest checks; the leaf remembers."""
    with filled.read() as conn:
        seq, reason = conn.execute(select(t.record_events.c.seq, t.record_events.c.export_row)).first()
    reason = dict(reason, reason="rewritten")
    with filled.engine.connect() as conn, conn.begin():
        conn.execute(t.record_events.update().where(t.record_events.c.seq == seq).values(export_row=reason))
    found = _found(filled)
    assert any(table == "log_blocks" and field.endswith("digest") for table, field in found)


def test_a_removed_record_is_found(filled):
    _raw(filled, "DELETE FROM measurements WHERE seq = (SELECT MAX(seq) FROM measurements)")
    found = _found(filled)
    assert any(table == "log_blocks" and field.startswith("measurements seq") for table, field in found)


def test_reordered_records_are_found(filled):
    with filled.read() as conn:
        a, b = conn.execute(select(t.runs.c.seq).order_by(t.runs.c.seq).limit(2)).scalars()
    _raw(filled, "UPDATE runs SET seq = -1 WHERE seq = :a", a=a)
    _raw(filled, "UPDATE runs SET seq = :a WHERE seq = :b", a=a, b=b)
    _raw(filled, "UPDATE runs SET seq = :b WHERE seq = -1", b=b)
    assert any(table == "log_blocks" and field.endswith("digest") for table, field in _found(filled))


def test_a_record_added_behind_the_stores_back_is_found(filled):
    row = {"id": "0190f0f0-0000-7000-8000-000000000001", "slug": "sneaky", "kind": "dataset", "name": "s"}
    export = __import__("json").dumps(row)
    _raw(
        filled,
        "INSERT INTO sources (id, slug, kind, name, export_row) VALUES (:id, :slug, :kind, :name, :row)",
        **row,
        row=export,
    )
    assert ("log_blocks", "leaf") in _found(filled)


@pytest.mark.parametrize(
    "change", ["edit", "swap", "drop_last", "node", "table", "no_table", "seq", "last_seq", "short", "gap"]
)
def test_a_tampered_log_is_found(filled, change):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    with filled.read() as conn:
        size = reads.tree_size(conn)
    i, j = rng.sample(range(size - 1), 2)
    block = "(SELECT max(first_idx) FROM log_blocks WHERE first_idx <= :i)"
    with filled.engine.connect() as conn, conn.begin():
        if change == "edit":
            forge_leaf(conn, i, hashlib.sha256(b"forged").digest())
        elif change == "swap":
            swap_leaves(conn, i, j)
        elif change == "table":  # the leaf said to be of another logged table's row
            retable_leaf(conn, i)
        elif change == "no_table":
            retable_leaf(conn, i, 0)
        elif change == "drop_last":
            keep_leaves(conn, size - 1)
    if change == "node":
        _raw(filled, "UPDATE log_nodes SET hash = :h WHERE node = :n", h=bytes(32), n=node_key(KEPT_LEVEL, 0))
    elif change == "seq":  # the leaf said to be of the row after its own
        with filled.engine.connect() as conn, conn.begin():
            first, seqs = conn.execute(
                text(f"SELECT first_idx, seqs FROM log_blocks WHERE first_idx = {block}"), {"i": i}
            ).one()
            seqs = bytearray(seqs)
            at = 8 * (i - first)
            seqs[at : at + 8] = (int.from_bytes(seqs[at : at + 8], "little") + 1).to_bytes(8, "little")
            conn.execute(text("UPDATE log_blocks SET seqs = :s WHERE first_idx = :f"), {"s": bytes(seqs), "f": first})
    elif change == "last_seq":  # a denormalised column: what finds a row's leaf
        _raw(filled, f"UPDATE log_blocks SET last_seq = last_seq + 1 WHERE first_idx = {block}", i=i)
    elif change == "short":  # a block whose digests are not whole leaves
        _raw(
            filled,
            f"UPDATE log_blocks SET digests = substr(digests, 1, length(digests) - 5) WHERE first_idx = {block}",
            i=i,
        )
    elif change == "gap":  # a block renumbered: the leaves are not 0..n-1
        _raw(filled, f"UPDATE log_blocks SET first_idx = first_idx + {size} WHERE first_idx = {block}", i=i)
    assert not verify_store(filled).ok, seed


def test_nothing_is_logged_for_a_rolled_back_write(filled):
    with filled.read() as conn:
        before = reads.tree_size(conn), reads.root_at(conn, reads.tree_size(conn))
    from kernelindex.store.writer import Writer

    with pytest.raises(RuntimeError), filled.begin() as conn:
        run_id = conn.execute(select(t.runs.c.id)).scalars().first()
        Writer(conn).retract_run(run_id, "never")
        raise RuntimeError("rolled back")
    with filled.read() as conn:
        assert (reads.tree_size(conn), reads.root_at(conn, reads.tree_size(conn))) == before
    with filled.begin() as conn:
        Writer(conn).retract_run(run_id, "kept")
    with filled.read() as conn:
        assert reads.tree_size(conn) == before[0] + 1
        assert reads.leaf_at(conn, before[0]).table_name == "record_events"
    assert verify_store(filled).ok


def test_a_log_of_before_1100_keeps_its_root_and_proofs_without_small_nodes(filled):
    """Migration 1100 drops the subtrees below KEPT_LEVEL that 1000 kept; downgraded, it hashes
    them again from the leaves. Either way the roots, the proofs and ``verify`` agree."""
    from alembic import command

    from kernelindex.store.database import alembic_config

    def small_nodes() -> int:
        with filled.read() as conn:
            return conn.execute(text("SELECT count(*) FROM log_nodes WHERE node % 64 < :k"), {"k": KEPT_LEVEL}).scalar()

    with filled.read() as conn:
        size = reads.tree_size(conn)
        index = random.Random().randrange(size)
        before = reads.root_at(conn, size), reads.inclusion_proof(conn, index, size)
    assert small_nodes() == 0 and size >= 2**KEPT_LEVEL
    with filled.engine.begin() as conn:
        command.downgrade(alembic_config(conn), "1000_transparency_log")
    assert small_nodes() > 0
    with filled.engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")
    assert small_nodes() == 0
    with filled.read() as conn:
        assert (reads.root_at(conn, size), reads.inclusion_proof(conn, index, size)) == before
    assert verify_store(filled).ok


def test_a_leaf_written_as_text_behind_the_stores_back_is_found(filled):
    """SQLite keeps any value in any column: a block's digests written back as one ``sha256:`` text are
    wrong leaves for ``verify`` (and the proofs still read), not a crash."""
    if filled.dialect != "sqlite":
        pytest.skip("PostgreSQL refuses text in a bytea column")
    with filled.read() as conn:
        leaf = reads.leaf_at(conn, 0)
    _raw(filled, "UPDATE log_blocks SET digests = :d WHERE first_idx = 0", d=leaf.digest)
    found = _found(filled)
    assert ("log_blocks", "lengths") in found
    assert any(table == "log_nodes" for table, _ in found)


def test_a_log_of_before_1200_keeps_its_leaves_root_and_proofs(filled):
    """Migration 1200 turns each leaf's ``sha256:`` text and table name into raw bytes and a table
    number; downgraded, the text and names come back as they were, and up again nothing changes."""
    from alembic import command

    from kernelindex.store.database import alembic_config

    rng = random.Random()
    with filled.read() as conn:
        size = reads.tree_size(conn)
        picked = rng.sample(range(size), 5)
        leaves = [reads.leaf_at(conn, i) for i in picked]
        before = reads.root_at(conn, size), reads.inclusion_proof(conn, picked[0], size)
    with filled.engine.begin() as conn:
        command.downgrade(alembic_config(conn), "1100_log_small_nodes")
    with filled.read() as conn:
        old = text("SELECT digest, table_name, row_seq FROM log_leaves WHERE idx = :i")
        for i, leaf in zip(picked, leaves):
            assert tuple(conn.execute(old, {"i": i}).one()) == (leaf.digest, leaf.table_name, leaf.row_seq)
    with filled.engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")
    with filled.read() as conn:
        assert [reads.leaf_at(conn, i) for i in picked] == leaves
        assert reads.leaf_of(conn, leaves[1].digest).index <= picked[1]
        assert (reads.root_at(conn, size), reads.inclusion_proof(conn, picked[0], size)) == before
    assert verify_store(filled).ok


def test_a_store_from_before_the_log_gets_a_leaf_for_every_record(filled):
    """Upgrading a store that had no log back-fills one (in 1200_log_raw_leaves): every record a leaf."""
    from alembic import command

    from kernelindex.store.database import alembic_config

    with filled.read() as conn:
        records = sum(conn.scalar(select(text("count(*)")).select_from(logged.table)) for logged in LOGGED)
    with filled.engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0900_migration_checks")
    with filled.engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")
    with filled.read() as conn:
        assert reads.tree_size(conn) == records
    assert verify_store(filled).ok
