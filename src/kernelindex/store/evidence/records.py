"""Storing and reading evidence: signing keys, signatures, API keys, attestations, corrections.

Every function takes a connection inside the caller's transaction and raises
:class:`EvidenceError` before writing anything it would have to undo, so a refused request
leaves the store as it was. Signatures are re-checked on every read: a stored envelope is a
claim, not a fact, until its bytes verify against the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, RowMapping, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from kernelindex.records.attestation import new_attestation, plain_text_problem
from kernelindex.records.errors import RecordError
from kernelindex.records.models import dump_record, parse_record, record_digest
from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.records.signing import (
    SignatureError,
    envelope_key_ids,
    key_id,
    public_key_from_text,
    public_key_to_text,
    sign_record_digest,
    verify_envelope,
)
from kernelindex.records.vocabulary import RunStatus, is_harness_source
from kernelindex.store.evidence.api_tokens import NewToken, TokenError, new_token, token_key_id, token_matches
from kernelindex.store.evidence.tables import (
    api_keys,
    attestations,
    correction_requests,
    signatures,
    signing_keys,
)
from kernelindex.store.ids import uuid7
from kernelindex.store.tables import runs, sources

if TYPE_CHECKING:  # cryptography itself is imported where a key is used (records/signing.py)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

DEFAULT_DAILY_LIMIT = 20
PROBLEMS = ("wrong_value", "wrong_identity", "wrong_status", "duplicate", "withdrawn_by_author", "other")
ACTIONS = ("supersede", "retract")


class EvidenceError(Refusal, ValueError):
    """A refused write. ``code`` is machine-readable; its kind is what the front ends map."""

    def __init__(self, code: str, message: str) -> None:
        self._code = code
        self.kind = _EVIDENCE_KINDS.get(code, RefusalKind.BAD_REQUEST)
        super().__init__(message)

    @property
    def code(self) -> str:
        return self._code


_EVIDENCE_KINDS = {
    "invalid_record": RefusalKind.INVALID,
    "bad_signature": RefusalKind.INVALID,
    "bad_reproduction": RefusalKind.INVALID,
    "unknown_key": RefusalKind.INVALID,
    "unknown_run": RefusalKind.NOT_FOUND,
    "unknown_record": RefusalKind.NOT_FOUND,
    "replay": RefusalKind.CONFLICT,
    "unauthorized": RefusalKind.UNAUTHORIZED,
    "forbidden": RefusalKind.FORBIDDEN,
    "rate_limited": RefusalKind.RATE_LIMITED,
}


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- signing keys and signatures -----------------------------------------------------------


def register_signing_key(conn: Connection, public_key: Ed25519PublicKey, label: str | None = None) -> str:
    """Remember a public key so signatures by it can be checked; idempotent, returns its key id."""
    kid = key_id(public_key)
    if conn.execute(select(signing_keys.c.key_id).where(signing_keys.c.key_id == kid)).first() is None:
        conn.execute(
            insert(signing_keys).values(
                key_id=kid, public_key=public_key_to_text(public_key), label=label, created_at=utc_now()
            )
        )
    return kid


def signing_key(conn: Connection, kid: str) -> Ed25519PublicKey | None:
    row = conn.execute(select(signing_keys.c.public_key).where(signing_keys.c.key_id == kid)).first()
    return public_key_from_text(row.public_key) if row else None


def record_kind(conn: Connection, digest: str) -> str | None:
    """Which kind of record this store holds under ``digest`` (runs and attestations are signable)."""
    if conn.execute(select(runs.c.id).where(runs.c.run_digest == digest)).first():
        return "BenchmarkRun"
    if conn.execute(select(attestations.c.id).where(attestations.c.attestation_digest == digest)).first():
        return "Attestation"
    return None


def add_signature(conn: Connection, envelope: Any, digest: str, *, kind: str | None = None) -> str:
    """Store a DSSE envelope for a stored record after checking it; returns the signer's key id.

    The signer's public key must already be registered. Storing the same signature twice is a no-op.
    """
    kind = kind or record_kind(conn, digest)
    if kind is None:
        raise EvidenceError("unknown_record", f"no stored record has digest {digest}")
    try:
        kids = envelope_key_ids(envelope)
    except SignatureError as exc:
        raise EvidenceError("bad_signature", str(exc)) from exc
    public_key = next((k for k in (signing_key(conn, kid) for kid in kids) if k is not None), None)
    if public_key is None:
        raise EvidenceError("unknown_key", f"signature is by key(s) {kids}, none of them registered here")
    try:
        checked = verify_envelope(envelope, public_key, digest)
    except SignatureError as exc:
        raise EvidenceError("bad_signature", str(exc)) from exc
    if checked.record_kind != kind:
        raise EvidenceError("bad_signature", f"signature says the record's kind is {checked.record_kind}, it is {kind}")
    exists = select(signatures.c.seq).where(signatures.c.record_digest == digest, signatures.c.key_id == checked.key_id)
    if conn.execute(exists).first() is None:
        conn.execute(
            insert(signatures).values(
                record_digest=digest,
                record_kind=kind,
                key_id=checked.key_id,
                envelope=envelope,
                signed_at=checked.signed_at,
                created_at=utc_now(),
            )
        )
    return checked.key_id


def sign_stored_record(
    conn: Connection, digest: str, private_key: Ed25519PrivateKey, label: str | None = None
) -> dict[str, Any]:
    """Sign a record this store holds with ``private_key`` and keep the envelope beside it."""
    kind = record_kind(conn, digest)
    if kind is None:
        raise EvidenceError("unknown_record", f"no stored record has digest {digest}")
    register_signing_key(conn, private_key.public_key(), label)
    envelope = sign_record_digest(private_key, digest, kind, utc_now())
    add_signature(conn, envelope, digest, kind=kind)
    return envelope


@dataclass(frozen=True)
class SignatureCheck:
    record_digest: str
    key_id: str
    label: str | None
    signed_at: str
    valid: bool
    problem: str | None
    envelope: dict[str, Any]
    public_key: str  # base64 of the raw key: with the envelope, enough to check it anywhere


# Reads every run page makes, built once (values bound per call): building costs more than running.
_SIGNATURES_OVER = (
    select(signatures, signing_keys.c.public_key, signing_keys.c.label)
    .join(signing_keys, signing_keys.c.key_id == signatures.c.key_id)
    .where(signatures.c.record_digest.in_(bindparam("digests")))
    .order_by(signatures.c.seq)
)
_ATTESTATIONS_FOR = (
    select(attestations).where(attestations.c.run_digest == bindparam("run_digest")).order_by(attestations.c.seq)
)
_CORRECTIONS = select(correction_requests).order_by(correction_requests.c.seq)
_CORRECTIONS_FOR = _CORRECTIONS.where(correction_requests.c.run_digest == bindparam("run_digest"))


def signature_checks(conn: Connection, digests: list[str]) -> dict[str, list[SignatureCheck]]:
    """Every stored signature over these records, each verified again now."""
    if not digests:
        return {}
    out: dict[str, list[SignatureCheck]] = {}
    for row in conn.execute(_SIGNATURES_OVER, {"digests": sorted(set(digests))}):
        problem = None
        try:
            verify_envelope(row.envelope, public_key_from_text(row.public_key), row.record_digest)
        except SignatureError as exc:
            problem = str(exc)
        out.setdefault(row.record_digest, []).append(
            SignatureCheck(
                row.record_digest,
                row.key_id,
                row.label,
                row.signed_at,
                problem is None,
                problem,
                row.envelope,
                row.public_key,
            )
        )
    return out


def all_signature_checks(conn: Connection) -> list[SignatureCheck]:
    digests = [row[0] for row in conn.execute(select(signatures.c.record_digest).distinct())]
    return [check for checks in signature_checks(conn, digests).values() for check in checks]


# --- API keys ------------------------------------------------------------------------------


def create_api_key(
    conn: Connection, label: str, scopes: frozenset[str], daily_limit: int = DEFAULT_DAILY_LIMIT
) -> NewToken:
    """A new key; the token is returned once and only its hash is stored."""
    if not 1 <= daily_limit <= 10_000:
        raise EvidenceError("bad_request", f"daily limit must be 1..10000, got {daily_limit}")
    token = new_token()
    conn.execute(
        insert(api_keys).values(
            key_id=token.key_id,
            token_hash=token.token_hash,
            label=label[:200],
            scopes=sorted(scopes),
            daily_limit=daily_limit,
            created_at=utc_now(),
        )
    )
    return token


def revoke_api_key(conn: Connection, kid: str) -> None:
    result = conn.execute(
        update(api_keys).where(api_keys.c.key_id == kid, api_keys.c.revoked_at.is_(None)).values(revoked_at=utc_now())
    )
    if result.rowcount != 1:
        raise EvidenceError("unknown_key", f"no active API key with id {kid}")


def list_api_keys(conn: Connection) -> list[RowMapping]:
    """Every API key, revoked ones included; the token hash stays in the table."""
    shown = [api_keys.c[name] for name in ("key_id", "label", "scopes", "daily_limit", "created_at", "revoked_at")]
    return [row._mapping for row in conn.execute(select(*shown).order_by(api_keys.c.seq))]


def authenticate(conn: Connection, token: str | None, scope: str) -> str:
    """The key id of a valid, unrevoked token holding ``scope``; EvidenceError otherwise."""
    if not token:
        raise EvidenceError("unauthorized", "an API key is required for writes (kernelindex keys api-key)")
    try:
        kid = token_key_id(token)
    except TokenError as exc:
        raise EvidenceError("unauthorized", str(exc)) from exc
    row = conn.execute(select(api_keys).where(api_keys.c.key_id == kid)).first()
    if row is None or not token_matches(token, row.token_hash):
        raise EvidenceError("unauthorized", "API key is not valid")
    if row.revoked_at is not None:
        raise EvidenceError("unauthorized", f"API key {kid} was revoked at {row.revoked_at}")
    if scope not in row.scopes:
        raise EvidenceError("forbidden", f"API key {kid} lacks the {scope!r} scope")
    return kid


def _check_rate(conn: Connection, table, kid: str, what: str) -> None:
    # Locking the key's row (PostgreSQL; SQLite serialises writers anyway) makes concurrent writes
    # with one key count one after another, so the limit cannot be overrun by racing requests.
    limit = conn.execute(select(api_keys.c.daily_limit).where(api_keys.c.key_id == kid).with_for_update()).scalar_one()
    since = (datetime.now(UTC) - timedelta(days=1)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    used = conn.execute(
        select(func.count()).select_from(table).where(table.c.api_key_id == kid, table.c.created_at >= since)
    ).scalar_one()
    if used >= limit:
        raise EvidenceError("rate_limited", f"API key {kid} reached its limit of {limit} {what} per 24 hours")


# --- attestations --------------------------------------------------------------------------


def _run_row(conn: Connection, digest: str):
    return conn.execute(select(runs).where(runs.c.run_digest == digest)).first()


def add_attestation(
    conn: Connection,
    record: Any,
    *,
    api_key_id: str | None = None,
    envelope: Any = None,
    public_key: Ed25519PublicKey | None = None,
    where: str = "attestation",
) -> str:
    """Check and store an attestation (and its signature, if one came); returns its digest.

    Refused, with nothing stored: an invalid record, an unknown run, a replay (same digest
    again), a reproduction run that is not this index's harness run of the same implementation
    and workload, a signature that does not hold for this record, a key over its daily limit.
    """
    try:
        model = parse_record(record, where=where)
    except RecordError as exc:
        raise EvidenceError("invalid_record", str(exc)) from exc
    if model.kind != "Attestation":
        raise EvidenceError("invalid_record", f"{where}: kind: expected Attestation, got {model.kind}")
    spec = model.spec
    digest = record_digest(model)
    run = _run_row(conn, spec.runDigest)
    if run is None:
        raise EvidenceError(
            "unknown_run", f"{where}: spec.runDigest: no run with digest {spec.runDigest} is stored here"
        )
    if conn.execute(select(attestations.c.id).where(attestations.c.attestation_digest == digest)).first():
        raise EvidenceError("replay", f"{where}: attestation {digest} is already recorded (replayed submission)")
    if spec.reproductionRunDigest is not None:
        _check_reproduction(conn, run, spec.reproductionRunDigest, where)
    signer = None
    if envelope is not None:
        if public_key is None:
            kids = _safe_key_ids(envelope)
            public_key = next((k for k in (signing_key(conn, kid) for kid in kids) if k is not None), None)
            if public_key is None:
                raise EvidenceError("unknown_key", f"{where}: signature key(s) {kids} are not registered here")
        try:
            checked = verify_envelope(envelope, public_key, digest)
        except SignatureError as exc:
            raise EvidenceError("bad_signature", f"{where}: signature: {exc}") from exc
        if checked.record_kind != "Attestation":
            raise EvidenceError("bad_signature", f"{where}: signature says {checked.record_kind}, not Attestation")
        if spec.attester.keyId is not None and spec.attester.keyId != checked.key_id:
            raise EvidenceError(
                "bad_signature",
                f"{where}: spec.attester.keyId {spec.attester.keyId} did not sign (signer {checked.key_id})",
            )
        signer = checked.key_id
    elif spec.attester.keyId is not None:
        raise EvidenceError("bad_signature", f"{where}: spec.attester.keyId is set but no signature came with it")
    if api_key_id is not None:
        _check_rate(conn, attestations, api_key_id, "attestations")
    if signer is not None:
        assert public_key is not None  # the signature was checked with it just above
        register_signing_key(conn, public_key)
    insert_row = insert(attestations).values(
        id=uuid7(),
        attestation_digest=digest,
        run_digest=spec.runDigest,
        claim=spec.claim,
        attester_name=spec.attester.name,
        signer_key_id=signer,
        reproduction_run_digest=spec.reproductionRunDigest,
        api_key_id=api_key_id,
        observed_at=spec.observedAt,
        created_at=utc_now(),
        record=dump_record(model),
    )
    try:
        conn.execute(insert_row)
    except IntegrityError as exc:  # the same attestation stored by a concurrent request
        raise EvidenceError(
            "replay", f"{where}: attestation {digest} is already recorded (replayed submission)"
        ) from exc
    if envelope is not None:
        add_signature(conn, envelope, digest, kind="Attestation")
    return digest


def _safe_key_ids(envelope: Any) -> list[str]:
    try:
        return envelope_key_ids(envelope)
    except SignatureError as exc:
        raise EvidenceError("bad_signature", f"signature: {exc}") from exc


def _check_reproduction(conn: Connection, run, reproduction_digest: str, where: str) -> None:
    field = f"{where}: spec.reproductionRunDigest"
    repro = _run_row(conn, reproduction_digest)
    if repro is None:
        raise EvidenceError("unknown_run", f"{field}: no run with digest {reproduction_digest} is stored here")
    source_kind = conn.execute(select(sources.c.kind).where(sources.c.id == repro.source_id)).scalar()
    if not is_harness_source(repro.source_slug, source_kind):
        raise EvidenceError(
            "bad_reproduction", f"{field}: run {reproduction_digest} was not made by this index's harness"
        )
    if (repro.implementation_digest, repro.workload_digest) != (run.implementation_digest, run.workload_digest):
        raise EvidenceError(
            "bad_reproduction", f"{field}: run {reproduction_digest} ran a different implementation or workload"
        )
    if repro.run_digest == run.run_digest:
        raise EvidenceError("bad_reproduction", f"{field}: a run cannot reproduce itself")


def attestations_for(conn: Connection, run_digest: str) -> list[RowMapping]:
    return [row._mapping for row in conn.execute(_ATTESTATIONS_FOR, {"run_digest": run_digest})]


def record_harness_reproduction(
    conn: Connection, run_digest: str, reproduction_digest: str, private_key: Ed25519PrivateKey, runner_name: str
) -> str:
    """The harness says "I repeated run X as run Y": a `reproduced` (or `could_not_reproduce`)
    attestation signed with the runner's key, so the repeat counts toward X's evidence level."""
    repro = _run_row(conn, reproduction_digest)
    if repro is None:
        raise EvidenceError("unknown_run", f"no run with digest {reproduction_digest} is stored here")
    attestation = new_attestation(
        {
            "claim": "reproduced" if repro.status == RunStatus.PASSED else "could_not_reproduce",
            "runDigest": run_digest,
            "attester": {"name": runner_name, "keyId": key_id(private_key.public_key())},
            "observedAt": repro.observed_at or utc_now(),
            "environmentDigest": repro.environment_key,
            "reproductionRunDigest": reproduction_digest,
        }
    )
    envelope = sign_record_digest(private_key, record_digest(attestation), "Attestation", utc_now())
    return add_attestation(conn, dump_record(attestation), envelope=envelope, public_key=private_key.public_key())


# --- correction requests -------------------------------------------------------------------


def add_correction_request(
    conn: Connection, run_digest: str, problem: str, details: str, requested_action: str, api_key_id: str
) -> str:
    if _run_row(conn, run_digest) is None:
        raise EvidenceError("unknown_run", f"run_digest: no run with digest {run_digest} is stored here")
    if problem not in PROBLEMS:
        raise EvidenceError("invalid_record", f"problem: expected one of {', '.join(PROBLEMS)}, got {problem!r}")
    if requested_action not in ACTIONS:
        raise EvidenceError(
            "invalid_record", f"requested_action: expected supersede or retract, got {requested_action!r}"
        )
    if not 1 <= len(details) <= 4000:
        raise EvidenceError("invalid_record", f"details: must be 1 to 4000 characters, got {len(details)}")
    text_problem = plain_text_problem(details)
    if text_problem:
        raise EvidenceError("invalid_record", f"details: {text_problem}")
    _check_rate(conn, correction_requests, api_key_id, "correction requests")
    request_id = uuid7()
    conn.execute(
        insert(correction_requests).values(
            id=request_id,
            run_digest=run_digest,
            problem=problem,
            details=details,
            requested_action=requested_action,
            api_key_id=api_key_id,
            created_at=utc_now(),
            status="open",
        )
    )
    return request_id


def correction_requests_for(conn: Connection, run_digest: str | None = None, status: str | None = None):
    query = _CORRECTIONS if run_digest is None else _CORRECTIONS_FOR
    if status is not None:
        query = query.where(correction_requests.c.status == status)
    return [row._mapping for row in conn.execute(query, {"run_digest": run_digest})]


def close_correction_request(
    conn: Connection, request_id: str, status: str, resolution: str, resolution_run_digest: str | None = None
) -> None:
    """Close a request: ``accepted`` names the superseding run or follows a retraction; ``rejected`` says why."""
    if status not in ("accepted", "rejected"):
        raise EvidenceError("bad_request", f"status must be accepted or rejected, got {status!r}")
    if resolution_run_digest is not None and _run_row(conn, resolution_run_digest) is None:
        raise EvidenceError("unknown_run", f"no run with digest {resolution_run_digest} is stored here")
    result = conn.execute(
        update(correction_requests)
        .where(correction_requests.c.id == request_id, correction_requests.c.status == "open")
        .values(
            status=status, resolution=resolution, resolution_run_digest=resolution_run_digest, resolved_at=utc_now()
        )
    )
    if result.rowcount != 1:
        raise EvidenceError("unknown_request", f"no open correction request {request_id}")
