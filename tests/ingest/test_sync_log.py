"""``sync`` proves that a mirror's transparency log only grew since the checkpoint it kept, and
refuses (storing nothing) a mirror whose history was rewritten, shrank or changed its log key."""

from __future__ import annotations

import pytest
from ingest_kit import snapshot
from sqlalchemy import text

from catalog_kit import catalog_lines, write_catalog
from kernelindex.ingest.catalog import import_catalog
from kernelindex.ingest.sync import SyncFailed, sync
from kernelindex.records.canonical import digest
from kernelindex.records.signing import new_private_key
from kernelindex.services.log_checkpoints import CheckpointSigner
from kernelindex.store import open_store
from kernelindex.store.transparency.witness import last_seen
from kernelindex.web.app import create_app
from live_kit import serving
from log_tamper_kit import forge_leaf, keep_leaves, leaves


@pytest.fixture
def origin(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELINDEX_EXPORT_CACHE", str(tmp_path / "exports"))
    store = open_store(f"sqlite:///{tmp_path / 'origin.db'}")
    import_catalog(store, write_catalog(tmp_path / "small.jsonl.zst"))
    app = create_app(store=store)
    app.state.log_signer = CheckpointSigner(new_private_key(), "origin.test/log")
    with serving(app) as url:
        yield store, url, app
    app.state.log_signer.stop()
    store.close()


def _new_run(source_store, tmp_path, n: int) -> None:
    lines = catalog_lines()
    run = next(line for line in lines if line["table"] == "benchmark_runs")
    bundle = run["row"]["manifest"]
    bundle["run"]["spec"]["observedAt"] = f"2026-02-0{n}T00:00:00.000Z"
    run["row"].update(
        id=f"01900000-0000-7000-8000-00000000099{n}",
        runDigest=digest(bundle["run"]),
        observedAt=f"2026-02-0{n}T00:00:00.000Z",
    )
    import_catalog(source_store, write_catalog(tmp_path / f"more{n}.jsonl", [*lines[:6], run]))


def test_a_growing_mirror_is_proved_consistent_each_sync(origin, store, tmp_path):
    source, url, _ = origin
    sync(store, url)
    with store.read() as conn:
        first = last_seen(conn, url)
    assert first is not None and first.size > 0
    _new_run(source, tmp_path, 2)
    assert not sync(store, url).up_to_date
    with store.read() as conn:
        grown = last_seen(conn, url)
    assert grown.size > first.size and grown.verifier_key == first.verifier_key


@pytest.mark.parametrize("rewrite", ["edited_leaf", "shrunk", "new_key"])
def test_a_rewritten_mirror_is_refused_and_nothing_stored(origin, store, tmp_path, rewrite):
    source, url, app = origin
    sync(store, url)
    _new_run(source, tmp_path, 3)
    with source.engine.connect() as conn, conn.begin():
        if rewrite == "edited_leaf":  # history rewritten: an early leaf and every node above it recomputed
            forge_leaf(conn, 0, bytes.fromhex(digest({"kind": "X", "spec": {}})[7:]))
            conn.execute(text("DELETE FROM log_nodes"))
            from kernelindex.records import merkle
            from kernelindex.store.transparency.leaves import leaf_hash
            from kernelindex.store.transparency.tables import KEPT_LEVEL, node_key

            for (level, at), h in merkle.append([], [leaf_hash(d) for d in leaves(conn)], 0, KEPT_LEVEL):
                conn.execute(text("INSERT INTO log_nodes VALUES (:k, :h)"), {"k": node_key(level, at), "h": h})
        elif rewrite == "shrunk":
            keep_leaves(conn, 2)
    if rewrite == "new_key":
        app.state.log_signer = CheckpointSigner(new_private_key(), "origin.test/log")
    before = snapshot(store)
    with pytest.raises(SyncFailed, match="rewritten or forked"):
        sync(store, url)
    assert snapshot(store) == before
