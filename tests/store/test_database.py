"""Choosing the database and making ids."""

from __future__ import annotations

import re
import time
import uuid

from kernelindex.store.database import resolve_url
from kernelindex.store.ids import uuid7


def test_resolve_url(monkeypatch, tmp_path):
    monkeypatch.delenv("KERNELINDEX_DATABASE_URL", raising=False)
    assert resolve_url() == "sqlite:///kernelindex.db"
    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", "postgresql://u@h/db")
    assert resolve_url() == "postgresql+psycopg://u@h/db"
    assert resolve_url(str(tmp_path / "x.db")) == f"sqlite:///{tmp_path / 'x.db'}"
    assert resolve_url("sqlite:///other.db") == "sqlite:///other.db"


def test_uuid7_layout_and_time():
    before = time.time_ns() // 1_000_000
    values = [uuid7() for _ in range(1000)]
    after = time.time_ns() // 1_000_000
    assert len(set(values)) == 1000
    for value in values:
        parsed = uuid.UUID(value)
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
        assert before <= parsed.int >> 80 <= after
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", value)
