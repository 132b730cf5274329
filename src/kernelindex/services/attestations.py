"""Attestations about stored runs: by the store's owner (signed locally) or through the API (with a key)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelindex.records.attestation import new_attestation
from kernelindex.records.models import dump_record, record_digest
from kernelindex.records.signing import key_id, sign_record_digest
from kernelindex.store.database import Store
from kernelindex.store.evidence.records import (
    add_attestation,
    authenticate,
    record_harness_reproduction,
    sign_stored_record,
    utc_now,
)
from kernelindex.store.reads.lookup import resolve_run


def attest(
    store: Store,
    run: str,
    private_key: Any,
    name: str,
    claim: str = "reproduced",
    *,
    reproduction: str | None = None,
    note: str | None = None,
    value: float | None = None,
    unit: str | None = None,
) -> str:
    """A signed attestation about ``run`` (id, digest or unique prefix); returns its digest."""
    with store.begin() as conn:
        run_digest = resolve_run(conn, run).run_digest
        if reproduction and claim == "reproduced" and note is None and value is None:
            return record_harness_reproduction(conn, run_digest, reproduction, private_key, name)
        spec: dict[str, Any] = {
            "claim": claim,
            "runDigest": run_digest,
            "observedAt": utc_now(),
            "attester": {"name": name, "keyId": key_id(private_key.public_key())},
        }
        optional = {
            "note": note,
            "reproductionRunDigest": reproduction,
            "measured": {"value": value, "unit": unit or ""} if value is not None else None,
        }
        spec.update({k: v for k, v in optional.items() if v is not None})
        record = new_attestation(spec)
        envelope = sign_record_digest(private_key, record_digest(record), "Attestation", utc_now())
        return add_attestation(conn, dump_record(record), envelope=envelope, public_key=private_key.public_key())


def attest_with_api_key(
    store: Store,
    token: str | None,
    run: str,
    build: Callable[[Any], dict[str, Any]],
    *,
    envelope: Any = None,
    public_key: Any = None,
    countersign_key: Any = None,
    countersign_label: str | None = None,
) -> tuple[Any, str]:
    """Authenticate, build the record for the run, store it and (if the site signs) countersign it:
    ``(run row, attestation digest)``."""
    with store.begin() as conn:
        api_key = authenticate(conn, token, "attest")
        row = resolve_run(conn, run)
        digest = add_attestation(
            conn, build(row), api_key_id=api_key, envelope=envelope, public_key=public_key, where="attestation"
        )
        if countersign_key is not None:
            sign_stored_record(conn, digest, countersign_key, countersign_label)
        return row, digest
