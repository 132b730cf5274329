"""Signed statements about records: an in-toto Statement v1 in a DSSE envelope, signed with Ed25519.

Why this format: anyone can check a signature offline with stock tools (DSSE and in-toto are the
formats supply-chain verifiers already read), and the statement names the record only by its
digest, so a signature can never be moved onto a record whose facts differ.
A signer is known by its key id: ``sha256:`` + hex(sha256(raw 32-byte Ed25519 public key)).
No I/O here: keys come in and go out as bytes. ``cryptography`` is imported where a key is used,
not with this module: web workers import it for every page but most pages check no signature
(~6 MiB per worker saved on stores without signatures).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernelindex.records.canonical import DIGEST_PREFIX, canonical_json
from kernelindex.records.refusal import Refusal, RefusalKind

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
PREDICATE_TYPE = "https://kernelindex.dev/signed-record/v1"
MAX_ENVELOPE_BYTES = 64 * 1024


class SignatureError(Refusal, ValueError):
    """A signature or envelope that does not hold; the message says which check failed."""

    kind = RefusalKind.INVALID

    @property
    def code(self) -> str:
        return "bad_signature"


@dataclass(frozen=True)
class SignedStatement:
    """What a verified envelope vouches for."""

    key_id: str
    record_digest: str
    record_kind: str
    signed_at: str


def key_id(public_key: Ed25519PublicKey) -> str:
    return DIGEST_PREFIX + hashlib.sha256(_raw_public_bytes(public_key)).hexdigest()


def _raw_public_bytes(public_key: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def new_private_key() -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate()


def private_key_to_pem(private_key: Ed25519PrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def private_key_from_pem(data: bytes) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise SignatureError(f"not an unencrypted PEM private key: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SignatureError(f"private key is {type(key).__name__}, expected Ed25519")
    return key


def public_key_to_text(public_key: Ed25519PublicKey) -> str:
    """The public key as base64 of its raw 32 bytes: short enough for a table cell or a CLI flag."""
    return base64.b64encode(_raw_public_bytes(public_key)).decode("ascii")


def public_key_from_text(text: str) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SignatureError(f"public key is not base64: {exc}") from exc
    if len(raw) != 32:
        raise SignatureError(f"public key has {len(raw)} bytes, an Ed25519 key has 32")
    return Ed25519PublicKey.from_public_bytes(raw)


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE pre-authentication encoding: what is actually signed, so the type cannot be swapped."""
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(type_bytes), type_bytes, len(payload), payload)


def statement(record_digest: str, record_kind: str, signed_at: str) -> dict[str, Any]:
    """An in-toto Statement whose only subject is the record, named by its content digest."""
    hex_digest = _hex_of(record_digest)
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": record_digest, "digest": {"sha256": hex_digest}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {"recordKind": record_kind, "signedAt": signed_at},
    }


def sign_record_digest(
    private_key: Ed25519PrivateKey, record_digest: str, record_kind: str, signed_at: str
) -> dict[str, Any]:
    """A DSSE envelope over a Statement about ``record_digest``."""
    payload = canonical_json(statement(record_digest, record_kind, signed_at))
    signature = private_key.sign(pae(PAYLOAD_TYPE, payload))
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [{"keyid": key_id(private_key.public_key()), "sig": base64.b64encode(signature).decode("ascii")}],
    }


def envelope_key_ids(envelope: Any) -> list[str]:
    """The key ids an envelope claims, so a caller can look up the public keys it needs."""
    _check_envelope_shape(envelope)
    return [entry["keyid"] for entry in envelope["signatures"]]


def verify_envelope(envelope: Any, public_key: Ed25519PublicKey, expected_digest: str | None = None) -> SignedStatement:
    """Check an envelope against one public key and, when given, the record digest it must cover.

    Raises SignatureError naming the failed check; returns what the signer vouched for.
    """
    from cryptography.exceptions import InvalidSignature

    _check_envelope_shape(envelope)
    wanted = key_id(public_key)
    entries = [entry for entry in envelope["signatures"] if entry["keyid"] == wanted]
    if not entries:
        raise SignatureError(f"envelope has no signature by key {wanted}")
    payload = _b64(envelope["payload"], "payload")
    signed = pae(envelope["payloadType"], payload)
    for entry in entries:
        try:
            public_key.verify(_b64(entry["sig"], "signature"), signed)
            break
        except InvalidSignature:
            continue
    else:
        raise SignatureError(f"signature by key {wanted} does not match the payload (forged or altered)")
    parsed = _parse_statement(payload)
    subject_digest = DIGEST_PREFIX + parsed["subject"][0]["digest"]["sha256"]
    if expected_digest is not None and subject_digest != expected_digest:
        raise SignatureError(f"signature covers record {subject_digest}, not {expected_digest}")
    return SignedStatement(
        key_id=wanted,
        record_digest=subject_digest,
        record_kind=parsed["predicate"]["recordKind"],
        signed_at=parsed["predicate"]["signedAt"],
    )


def _check_envelope_shape(envelope: Any) -> None:
    if not isinstance(envelope, dict):
        raise SignatureError("envelope: expected a JSON object")
    extra = set(envelope) - {"payloadType", "payload", "signatures"}
    if extra:
        raise SignatureError(f"envelope: unknown field(s) {sorted(extra)}")
    if envelope.get("payloadType") != PAYLOAD_TYPE:
        raise SignatureError(f"envelope.payloadType: expected {PAYLOAD_TYPE!r}, got {envelope.get('payloadType')!r}")
    if not isinstance(envelope.get("payload"), str) or len(envelope["payload"]) > MAX_ENVELOPE_BYTES:
        raise SignatureError(f"envelope.payload: expected a base64 string under {MAX_ENVELOPE_BYTES} bytes")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or not 1 <= len(signatures) <= 8:
        raise SignatureError("envelope.signatures: expected a list of 1 to 8 signatures")
    for index, entry in enumerate(signatures):
        if (
            not isinstance(entry, dict)
            or set(entry) != {"keyid", "sig"}
            or not all(isinstance(entry[name], str) for name in ("keyid", "sig"))
        ):
            raise SignatureError(f"envelope.signatures[{index}]: expected {{keyid, sig}} strings")


def _parse_statement(payload: bytes) -> dict[str, Any]:
    try:
        parsed = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SignatureError(f"statement: payload is not JSON: {exc}") from exc
    if not isinstance(parsed, dict) or parsed.get("_type") != STATEMENT_TYPE:
        raise SignatureError(f"statement._type: expected {STATEMENT_TYPE!r}")
    if parsed.get("predicateType") != PREDICATE_TYPE:
        raise SignatureError(f"statement.predicateType: expected {PREDICATE_TYPE!r}")
    subjects = parsed.get("subject")
    if (
        not isinstance(subjects, list)
        or len(subjects) != 1
        or not isinstance(subjects[0], dict)
        or not isinstance(subjects[0].get("digest"), dict)
        or not _is_hex64(subjects[0]["digest"].get("sha256"))
    ):
        raise SignatureError("statement.subject: expected exactly one subject with a sha256 digest")
    predicate = parsed.get("predicate")
    if not isinstance(predicate, dict) or not all(
        isinstance(predicate.get(name), str) for name in ("recordKind", "signedAt")
    ):
        raise SignatureError("statement.predicate: expected recordKind and signedAt strings")
    return parsed


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SignatureError(f"envelope {what} is not valid base64") from exc


def _is_hex64(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _hex_of(record_digest: str) -> str:
    if not record_digest.startswith(DIGEST_PREFIX) or not _is_hex64(record_digest[len(DIGEST_PREFIX) :]):
        raise SignatureError(f"record digest {record_digest!r} is not sha256:<64 hex>")
    return record_digest[len(DIGEST_PREFIX) :]
