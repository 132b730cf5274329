"""Signing stored records with a key (a runner's or the site's)."""

from __future__ import annotations

from typing import Any

from kernelindex.records.signing import key_id
from kernelindex.store.database import Store
from kernelindex.store.evidence.records import sign_stored_record
from kernelindex.store.reads.runs import run_digests_by_runner


def sign_records(
    store: Store, digests: list[str], private_key: Any, label: str | None = None, *, harness_runs: bool = False
) -> list[str]:
    """Sign each record (and, with ``harness_runs``, every run this key's runner made) in one
    transaction; returns the digests signed. Raises ``EvidenceError`` (nothing signed) on an unknown digest."""
    with store.begin() as conn:
        wanted = list(digests)
        if harness_runs:
            wanted += run_digests_by_runner(conn, key_id(private_key.public_key()))
        for digest in wanted:
            sign_stored_record(conn, digest, private_key, label)
        return wanted
