"""Tables for what the evidence layer adds: attestations, signatures, signing keys, API keys and
correction requests. They sit on the store's shared ``metadata`` (revision 0100_evidence).

Attestations and signatures are append-only like every record row. API keys and correction
requests are operational rows: a key is revoked by stamping ``revoked_at`` (never deleted, so
what it wrote stays attributable), and a correction request is closed by naming the record a
maintainer wrote in answer.
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, ForeignKey, Index, Integer, String, Table, Text, UniqueConstraint

from kernelindex.store.tables import DIGEST, ID, TIME, metadata

signing_keys = Table(
    "signing_keys",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("key_id", DIGEST, nullable=False, unique=True),  # sha256 of the raw Ed25519 public key
    Column("public_key", String(64), nullable=False),  # base64 of the raw 32 bytes
    Column("label", String(200)),
    Column("created_at", TIME, nullable=False),
)

signatures = Table(
    "signatures",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("record_digest", DIGEST, nullable=False, index=True),
    Column("record_kind", String(60), nullable=False),
    Column("key_id", DIGEST, ForeignKey("signing_keys.key_id"), nullable=False),
    Column("envelope", JSON, nullable=False),  # the DSSE envelope exactly as signed
    Column("signed_at", TIME, nullable=False),
    Column("created_at", TIME, nullable=False),
    UniqueConstraint("record_digest", "key_id"),
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("key_id", String(16), nullable=False, unique=True),  # the public part of the token
    Column("token_hash", String(64), nullable=False),  # sha256 hex of the whole token
    Column("label", String(200), nullable=False),
    Column("scopes", JSON, nullable=False),  # sorted list, subset of api_tokens.SCOPES
    Column("daily_limit", Integer, nullable=False),  # writes per rolling 24 h
    Column("created_at", TIME, nullable=False),
    Column("revoked_at", TIME),
)

attestations = Table(
    "attestations",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", ID, nullable=False, unique=True),
    Column("attestation_digest", DIGEST, nullable=False, unique=True),  # replay = same digest
    Column("run_digest", DIGEST, ForeignKey("runs.run_digest"), nullable=False, index=True),
    Column("claim", String(40), nullable=False),
    Column("attester_name", String(200), nullable=False),
    Column("signer_key_id", DIGEST, ForeignKey("signing_keys.key_id")),
    Column("reproduction_run_digest", DIGEST, ForeignKey("runs.run_digest")),
    Column("api_key_id", String(16), ForeignKey("api_keys.key_id")),  # NULL: written locally (CLI, harness)
    Column("observed_at", TIME, nullable=False),
    Column("created_at", TIME, nullable=False),  # when this store received it: rate limits count these
    Column("record", JSON, nullable=False),
)

correction_requests = Table(
    "correction_requests",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", ID, nullable=False, unique=True),
    Column("run_digest", DIGEST, ForeignKey("runs.run_digest"), nullable=False, index=True),
    Column("problem", String(40), nullable=False),  # wrong_value, wrong_identity, ...
    Column("details", Text, nullable=False),
    Column("requested_action", String(20), nullable=False),  # supersede or retract
    Column("api_key_id", String(16), ForeignKey("api_keys.key_id"), nullable=False),
    Column("created_at", TIME, nullable=False),
    Column("status", String(20), nullable=False),  # open, accepted, rejected
    Column("resolution", Text),
    Column("resolution_run_digest", DIGEST),  # the superseding run, when one was written
    Column("resolved_at", TIME),
)

Index("ix_attestations_key_created", attestations.c.api_key_id, attestations.c.created_at)
Index("ix_correction_requests_key_created", correction_requests.c.api_key_id, correction_requests.c.created_at)
