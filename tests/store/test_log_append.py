"""Appending to the transparency log: each row's leaf, and the tree's root, whatever batching the
append uses (on SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest
from sqlalchemy import select

from catalog_kit import write_catalog
from kernelindex.ingest.bundles import import_bundles
from kernelindex.ingest.catalog import import_catalog
from kernelindex.records.canonical import canonical_json
from kernelindex.store import open_store
from kernelindex.store import tables as t
from kernelindex.store.transparency import append, blocks, reads
from kernelindex.store.transparency.leaves import stated_leaves
from kernelindex.store.transparency.tables import log_blocks
from kernelindex.store.verify import verify_store
from rfc9162_kit import rfc_mth
from store_fixtures import BACKENDS, database_url

SAMPLE = sorted((Path(__file__).resolve().parents[2] / "src/kernelindex/sample").glob("*.json"))


def _digest(rng: random.Random) -> str:
    return "sha256:" + hashlib.sha256(rng.randbytes(16)).hexdigest()


# ways a stated digest is not a sha256 digest's text: each such row is logged by its text's content
_NOT_SHA256 = (
    lambda d: d.upper(),
    lambda d: d[:-1],
    lambda d: d + "0",
    lambda d: d[:30] + " " + d[31:],
    lambda d: d[:30] + "g" + d[31:],
    lambda d: "sha256:sha256:" + d[14:],
    lambda d: "md5:" + d[7:],
    lambda d: d[7:] + "sha256:",
)


def test_a_page_of_stated_digests_gives_each_row_its_own_leaf():
    """A page checked and decoded whole gives what each row alone gives: the raw bytes of a
    ``sha256:`` digest, the content leaf of any other text, wherever it sits in the page."""
    rng = random.Random()
    seed = rng.randrange(2**32)
    rng.seed(seed)
    values, expected = [], []
    for _ in range(rng.randint(1, 300)):
        value = _digest(rng)
        if rng.random() < 0.05:
            value = rng.choice(_NOT_SHA256)(value)
            expected.append(hashlib.sha256(canonical_json(value)).digest())
        else:
            expected.append(bytes.fromhex(value[7:]))
        values.append(value)
    assert stated_leaves(values) == expected, seed
    assert [stated_leaves([value])[0] for value in values] == expected, seed


@pytest.mark.parametrize("kind", BACKENDS)
def test_leaves_sent_a_few_per_statement_give_the_rfc_root(kind, tmp_path, monkeypatch):
    """However many leaves go in per block and blocks per statement, the log holds every record's leaf
    in order (``verify`` recomputes them from the records) and its root is RFC 9162's over them."""
    rng = random.Random()
    seed = rng.randrange(2**32)
    per = random.Random(seed).randint(2, 7)
    monkeypatch.setattr(append, "ROWS_PER_STATEMENT", per)
    monkeypatch.setattr(blocks, "BLOCK", random.Random(seed + 1).randint(1, 9))
    store = open_store(database_url(kind, tmp_path, migrated=True))
    try:
        import_catalog(store, write_catalog(tmp_path / "small.jsonl.zst"))  # into an empty log
        import_bundles(store, SAMPLE)  # then onto its right edge
        assert verify_store(store).ok, (seed, per)
        with store.read() as conn:
            size = reads.tree_size(conn)
            held = conn.execute(select(*blocks.SELECTED).order_by(log_blocks.c.first_idx))
            leaves = [leaf for row in held for leaf in blocks.Block.of_row(row).leaves()]
            root = reads.root_at(conn, size)
    finally:
        store.close()
    assert len(leaves) == size > 2 * per, (seed, per)
    assert root == rfc_mth(leaves), (seed, per)


@pytest.mark.parametrize("kind", BACKENDS)
def test_a_leaf_is_found_by_its_digest_whatever_its_kind(kind, tmp_path):
    """A record's own digest is found through its table, any other leaf (a measurement, an event, a record
    edited since it was logged) by searching the blocks; a digest the log lacks, or one that only shows
    across two leaves' bytes, is not found."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    store = open_store(database_url(kind, tmp_path, migrated=True))
    try:
        import_catalog(store, write_catalog(tmp_path / "small.jsonl.zst"))
        import_bundles(store, SAMPLE)
        with store.read() as conn:
            every = [reads.leaf_at(conn, i) for i in range(reads.tree_size(conn))]
            first = {}
            for leaf in every:
                first.setdefault(leaf.digest, leaf)
            kinds = {leaf.table_name for leaf in every}
            picked = [rng.choice([leaf for leaf in every if leaf.table_name == name]) for name in sorted(kinds)]
            for leaf in picked:
                assert reads.leaf_of(conn, leaf.digest) == first[leaf.digest], (seed, leaf)
            assert reads.leaf_of(conn, _digest(rng)) is None
            k = rng.randrange(len(every) - 1)
            straddling = (
                "sha256:"
                + (bytes.fromhex(every[k].digest[7:])[16:] + bytes.fromhex(every[k + 1].digest[7:])[:16]).hex()
            )
            assert reads.leaf_of(conn, straddling) is None, seed
            run = next(leaf for leaf in every if leaf.table_name == "runs")
        with store.engine.connect() as conn, conn.begin():  # edited behind the store's back: the log still has it
            conn.execute(t.runs.update().where(t.runs.c.seq == run.row_seq).values(run_digest=_digest(rng)))
        with store.read() as conn:
            assert reads.leaf_of(conn, run.digest) == run, seed
    finally:
        store.close()
