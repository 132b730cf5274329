"""An independent RFC 9162 verifier for the tests: the RFC's recursive definitions (section 2.1)
written over plain lists and proofs, sharing no code with ``kernelindex.records.merkle``."""

from __future__ import annotations

import hashlib


def _h(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def rfc_leaf(data: bytes) -> bytes:
    return _h(b"\x00" + data)


def rfc_mth(d: list[bytes]) -> bytes:
    n = len(d)
    if n == 0:
        return _h(b"")
    if n == 1:
        return rfc_leaf(d[0])
    k = _k(n)
    return _h(b"\x01" + rfc_mth(d[:k]) + rfc_mth(d[k:]))


def rfc_path(m: int, d: list[bytes]) -> list[bytes]:
    n = len(d)
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return rfc_path(m, d[:k]) + [rfc_mth(d[k:])]
    return rfc_path(m - k, d[k:]) + [rfc_mth(d[:k])]


def rfc_subproof(m: int, d: list[bytes], b: bool) -> list[bytes]:
    n = len(d)
    if m == n:
        return [] if b else [rfc_mth(d)]
    k = _k(n)
    if m <= k:
        return rfc_subproof(m, d[:k], b) + [rfc_mth(d[k:])]
    return rfc_subproof(m - k, d[k:], False) + [rfc_mth(d[:k])]


def root_from_path(m: int, n: int, leaf_hash: bytes, path: list[bytes]) -> bytes:
    """The root PATH(m, D[n]) gives for a leaf hash, walking the RFC's recursion; the path is
    consumed from its end (the top of the tree) down."""
    rest = list(path)

    def up(m: int, n: int) -> bytes:
        if n == 1:
            return leaf_hash
        k = _k(n)
        sibling = rest.pop()
        if m < k:
            return _h(b"\x01" + up(m, k) + sibling)
        return _h(b"\x01" + sibling + up(m - k, n - k))

    root = up(m, n)
    if rest:
        raise ValueError("the path is longer than the tree is deep")
    return root


def roots_from_consistency(m: int, n: int, old_root: bytes, proof: list[bytes]) -> tuple[bytes, bytes]:
    """(old root, new root) that PROOF(m, D[n]) gives, walking SUBPROOF's recursion (0 < m < n)."""
    rest = list(proof)

    def take() -> bytes:
        if not rest:
            raise ValueError("the proof is shorter than the trees need")
        return rest.pop(0)

    def sub(m: int, n: int, whole: bool) -> tuple[bytes, bytes]:
        if m == n:
            if whole:
                return old_root, old_root
            x = take()
            return x, x
        k = _k(n)
        if m <= k:
            old, new_left = sub(m, k, whole)
            return old, _h(b"\x01" + new_left + take())
        old_right, new_right = sub(m - k, n - k, False)
        left = take()
        return _h(b"\x01" + left + old_right), _h(b"\x01" + left + new_right)

    roots = sub(m, n, True)
    if rest:
        raise ValueError("the proof is longer than the trees need")
    return roots
