"""API key tokens: only a hash is kept, and a token checks only against its own hash."""

from __future__ import annotations

import pytest

from kernelindex.store.evidence.api_tokens import (
    TokenError,
    hash_token,
    new_token,
    parse_scopes,
    token_key_id,
    token_matches,
)


def test_token_checks_against_its_hash_only() -> None:
    first, second = new_token(), new_token()
    assert first.token not in first.token_hash and len(first.token_hash) == 64
    assert token_key_id(first.token) == first.key_id
    assert token_matches(first.token, first.token_hash)
    assert not token_matches(second.token, first.token_hash)
    assert not token_matches(first.token[:-1] + ("A" if first.token[-1] != "A" else "B"), first.token_hash)
    assert hash_token(first.token) == first.token_hash


@pytest.mark.parametrize("token", ["", "ki_123_abc", "Bearer x", "ki_" + "g" * 16 + "_" + "a" * 43])
def test_malformed_tokens_are_refused(token: str) -> None:
    with pytest.raises(TokenError, match="malformed"):
        token_key_id(token)


def test_scopes_are_a_known_subset() -> None:
    assert parse_scopes("attest, report") == {"attest", "report"}
    with pytest.raises(ValueError, match="admin"):
        parse_scopes("attest,admin")
    with pytest.raises(ValueError, match="non-empty"):
        parse_scopes(" , ")
