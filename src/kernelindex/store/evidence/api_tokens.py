"""API key tokens: made once, shown once, kept only as a hash.

A token is ``ki_<id>_<secret>``: the id finds the stored row without scanning, the secret carries
256 bits of randomness. Because the secret is random and long, a plain SHA-256 of the whole token
is a safe at-rest hash (a slow KDF only matters for guessable secrets such as passwords), and it
keeps the check on every write request cheap. Comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from kernelindex.records.refusal import Refusal, RefusalKind

SCOPES = frozenset({"attest", "report", "submit"})
_TOKEN = re.compile(r"^ki_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")


class TokenError(Refusal, ValueError):
    """A token that is malformed; deliberately says nothing about which stored key it resembles."""

    kind = RefusalKind.UNAUTHORIZED


@dataclass(frozen=True)
class NewToken:
    key_id: str
    token: str
    token_hash: str


def new_token() -> NewToken:
    key_id = secrets.token_hex(8)
    token = f"ki_{key_id}_{secrets.token_urlsafe(32)}"
    return NewToken(key_id=key_id, token=token, token_hash=hash_token(token))


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def token_key_id(token: str) -> str:
    """The public id inside a token; raises TokenError when the token is not shaped like ours."""
    match = _TOKEN.match(token or "")
    if match is None:
        raise TokenError("API key is malformed (expected ki_<16 hex>_<43 url-safe characters>)")
    return match.group(1)


def token_matches(token: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), stored_hash)


def parse_scopes(text: str) -> frozenset[str]:
    scopes = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = scopes - SCOPES
    if unknown or not scopes:
        raise ValueError(f"scopes must be a non-empty subset of {sorted(SCOPES)}, got {sorted(scopes)}")
    return scopes
