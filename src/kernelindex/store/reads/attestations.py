"""Attestations, by their own digest."""

from __future__ import annotations

from sqlalchemy import Connection, select

from kernelindex.store.evidence.tables import attestations


def attested_run_digest(conn: Connection, attestation_digest: str) -> str | None:
    """The digest of the run an attestation concerns (None: no such attestation)."""
    return conn.scalar(select(attestations.c.run_digest).where(attestations.c.attestation_digest == attestation_digest))
