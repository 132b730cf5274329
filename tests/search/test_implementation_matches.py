"""Implementations found by a word of their title, slug or project, from a catalogue each process keeps per
store generation: a write (committed, or still open in the same transaction) is seen by the next search."""

from __future__ import annotations

import secrets

import pytest

from catalog_kit import catalog_lines, write_catalog
from kernelindex.ingest.catalog import import_catalog
from kernelindex.store.database import open_store
from kernelindex.views.search import search_view
from store_fixtures import BACKENDS, database_url


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    opened = open_store(database_url(request.param, tmp_path, migrated=True))
    import_catalog(opened, write_catalog(tmp_path / "toy.jsonl", catalog_lines()))
    yield opened
    opened.close()


def _found(conn, word: str) -> list[str]:
    return [m.title for m in search_view(conn, word).matches if m.kind == "implementation"]


def test_a_new_title_is_found_after_the_write_and_inside_it(store):
    word = "zq" + secrets.token_hex(4)  # a word no stored text holds
    with store.engine.connect() as conn:
        assert _found(conn, word) == []  # the catalogue is now kept for this generation
        assert _found(conn, "impl") == ["toy-impl-v1", "toy-impl-v2"]  # every word matched, busiest first
    with store.begin() as conn:
        conn.exec_driver_sql(
            f"UPDATE implementations SET title = 'Fast {word.upper()} kernel' WHERE title = 'toy-impl-v2'"
        )
        assert _found(conn, word) == [f"Fast {word.upper()} kernel"]  # the open write is read, not the kept catalogue
    with store.engine.connect() as conn:
        assert _found(conn, word) == [f"Fast {word.upper()} kernel"]
        assert _found(conn, f"{word} kernel") == [f"Fast {word.upper()} kernel"]  # both words, any case
        assert _found(conn, f"{word} slow") == []
