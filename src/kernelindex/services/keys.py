"""API keys for HTTP writes: made (the token shown once) and revoked."""

from __future__ import annotations

from kernelindex.store.database import Store
from kernelindex.store.evidence.api_tokens import NewToken
from kernelindex.store.evidence.records import create_api_key as store_api_key
from kernelindex.store.evidence.records import revoke_api_key as store_revocation


def create_api_key(store: Store, label: str, scopes: frozenset[str], daily_limit: int) -> NewToken:
    with store.begin() as conn:
        return store_api_key(conn, label, scopes, daily_limit)


def revoke_api_key(store: Store, key_id: str) -> None:
    with store.begin() as conn:
        store_revocation(conn, key_id)
