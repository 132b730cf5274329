"""Appending to the transparency log: each row's leaf, and the tree's root, whatever batching the
append uses (on SQLite and PostgreSQL)."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from catalog_kit import write_catalog
from kernelindex.ingest.bundles import import_bundles
from kernelindex.ingest.catalog import import_catalog
from kernelindex.records.canonical import canonical_json
from kernelindex.store import open_store
from kernelindex.store.transparency import append, reads
from kernelindex.store.transparency.leaves import stated_leaves
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
    """However many leaves go in per statement, the log holds every record's leaf in order
    (``verify`` recomputes them from the records) and its root is RFC 9162's over them."""
    rng = random.Random()
    seed = rng.randrange(2**32)
    per = random.Random(seed).randint(2, 7)
    monkeypatch.setattr(append, "ROWS_PER_STATEMENT", per)
    store = open_store(database_url(kind, tmp_path, migrated=True))
    try:
        import_catalog(store, write_catalog(tmp_path / "small.jsonl.zst"))  # into an empty log
        import_bundles(store, SAMPLE)  # then onto its right edge
        assert verify_store(store).ok, (seed, per)
        with store.read() as conn:
            size = reads.tree_size(conn)
            leaves = [bytes(d) for d in conn.exec_driver_sql("SELECT digest FROM log_leaves ORDER BY idx").scalars()]
            root = reads.root_at(conn, size)
    finally:
        store.close()
    assert len(leaves) == size > 2 * per, (seed, per)
    assert root == rfc_mth(leaves), (seed, per)
