"""Signed HTTP requests from remote runners: a runner proves it holds its Ed25519 key on every call.

A runner has no password and no database credentials, only its key. Each request carries its
key id, a UTC timestamp and a signature over (method, path, timestamp, sha256 of the body), so
a captured request cannot be sent to another path or with another body, and is refused once it
is older than the allowed skew. No I/O here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.records.signing import key_id

if TYPE_CHECKING:  # cryptography itself is imported on use (see records/signing.py)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

KEY_HEADER = "X-Kernelindex-Key"
TIME_HEADER = "X-Kernelindex-Time"
SIGNATURE_HEADER = "X-Kernelindex-Signature"
MAX_SKEW_S = 300.0
_DOMAIN = b"kernelindex-runner-request-v1"


class RequestSignatureError(Refusal, ValueError):
    """A runner request whose signature headers are missing, stale or do not hold."""

    kind = RefusalKind.UNAUTHORIZED


def _message(method: str, path: str, timestamp: str, body: bytes) -> bytes:
    return b"\n".join(
        [_DOMAIN, method.upper().encode(), path.encode(), timestamp.encode(), hashlib.sha256(body).hexdigest().encode()]
    )


def sign_request(
    private_key: Ed25519PrivateKey, method: str, path: str, body: bytes, now: datetime | None = None
) -> dict[str, str]:
    """The headers that sign this request."""
    timestamp = (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    signature = private_key.sign(_message(method, path, timestamp, body))
    return {
        KEY_HEADER: key_id(private_key.public_key()),
        TIME_HEADER: timestamp,
        SIGNATURE_HEADER: base64.b64encode(signature).decode("ascii"),
    }


def claimed_key_id(headers) -> str:
    kid = headers.get(KEY_HEADER)
    if not kid:
        raise RequestSignatureError(f"runner requests must be signed ({KEY_HEADER}, {TIME_HEADER}, {SIGNATURE_HEADER})")
    return kid


def verify_request(
    public_key: Ed25519PublicKey, headers, method: str, path: str, body: bytes, now: datetime | None = None
) -> None:
    """Raise RequestSignatureError unless the headers sign exactly this request, recently."""
    from cryptography.exceptions import InvalidSignature

    timestamp, signature = headers.get(TIME_HEADER), headers.get(SIGNATURE_HEADER)
    if not timestamp or not signature:
        raise RequestSignatureError(f"missing {TIME_HEADER} or {SIGNATURE_HEADER}")
    try:
        sent = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
        raw = base64.b64decode(signature, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise RequestSignatureError(f"malformed request signature headers: {exc}") from exc
    if sent.tzinfo is None:
        raise RequestSignatureError(f"{TIME_HEADER} must carry a time zone")
    skew = abs(((now or datetime.now(UTC)) - sent).total_seconds())
    if skew > MAX_SKEW_S:
        raise RequestSignatureError(
            f"request signed {skew:.0f} s away from the server's clock (allowed {MAX_SKEW_S:.0f} s)"
        )
    try:
        public_key.verify(raw, _message(method, path, timestamp, body))
    except InvalidSignature as exc:
        raise RequestSignatureError("request signature does not hold for this key, path and body") from exc
