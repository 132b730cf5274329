"""Fixtures for evidence tests: a fresh SQLite store holding the two seed runs."""

from __future__ import annotations

import random

import pytest
from evidence_fixtures import seed_bundle

from kernelindex.records.canonical import digest
from kernelindex.store.database import open_store
from kernelindex.store.writer import Writer
from store_fixtures import BACKENDS, database_url


@pytest.fixture()
def rng() -> random.Random:
    seed = random.randrange(2**32)
    print(f"seed={seed}")
    return random.Random(seed)


def _filled(url: str):
    opened = open_store(url)
    with opened.begin() as conn:
        writer = Writer(conn)
        for name in ("sol-042-ac4k-submission-19969.json", "sol-009-sf-tensor-submission-4273.json"):
            writer.add_run_bundle(seed_bundle(name))
        writer.flush()
    return opened


@pytest.fixture()
def store(tmp_path):
    """SQLite: for the web, CLI and browser tests."""
    opened = _filled(database_url("sqlite", tmp_path, migrated=True))
    yield opened
    opened.close()


@pytest.fixture(params=BACKENDS)
def any_store(request, tmp_path):
    """SQLite and PostgreSQL: for the store-level tests (the rules must hold on both)."""
    opened = _filled(database_url(request.param, tmp_path, migrated=True))
    yield opened
    opened.close()


@pytest.fixture()
def seed_digest() -> str:
    return digest(seed_bundle()["run"])
