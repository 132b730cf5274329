"""RFC 9162 (Certificate Transparency 2.0) Merkle tree hashing, proofs and their verification.

Why written here rather than taken from ``pymerkle``: the tree lives in the store's own tables,
written inside the transaction that stores each record, on SQLite and PostgreSQL alike, and a
proof at a million leaves must read a few dozen stored nodes, not rebuild the tree. ``pymerkle``
keeps its own storage (memory or its own SQLite file) and would have to be given every leaf.
What is left to write is the RFC's own few lines: the two hashes (section 2.1.1), the ranges a
proof names (2.1.3.1, 2.1.4.1) and the two verification algorithms (2.1.3.2, 2.1.4.2).

Proofs are planned as *ranges* ``[lo, hi)`` of leaves whose subtree hash the proof carries;
:func:`perfect_cover` splits a range into the perfect subtrees (``(level, index)``: leaves
``index*2**level`` to ``(index+1)*2**level``) that the store keeps, so a caller fetches every node
a proof needs in one read and :func:`range_hash` combines them. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import count, repeat

LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()

Node = tuple[int, int]  # (level, index) of a perfect subtree


class ProofError(ValueError):
    """A proof that does not verify, or a request for one that cannot exist (index past size)."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (n > 1): where RFC 9162 splits a tree."""
    return 1 << ((n - 1).bit_length() - 1)


def root_of(leaf_hashes: Sequence[bytes]) -> bytes:
    """MTH(D[n]) of whole leaf hashes, by the RFC's recursion (for small trees and tests)."""
    if not leaf_hashes:
        return EMPTY_ROOT
    if len(leaf_hashes) == 1:
        return leaf_hashes[0]
    k = _split(len(leaf_hashes))
    return node_hash(root_of(leaf_hashes[:k]), root_of(leaf_hashes[k:]))


def perfect_cover(lo: int, hi: int) -> list[Node]:
    """The perfect subtrees that make up leaves ``[lo, hi)`` of an RFC 9162 tree, left to right.

    Only ranges that a tree or a proof names are asked for: ``lo`` is a multiple of the largest
    power of two not above ``hi - lo``, so each piece is aligned."""
    nodes: list[Node] = []
    while lo < hi:
        level = (hi - lo).bit_length() - 1  # the largest power of two not above the range's size
        if lo % (1 << level):
            raise ValueError(f"leaves [{lo}, {hi}) are not a subtree of an RFC 9162 tree")
        nodes.append((level, lo >> level))
        lo += 1 << level
    return nodes


def range_hash(lo: int, hi: int, nodes: Mapping[Node, bytes]) -> bytes:
    """MTH(D[lo:hi]) from its perfect subtrees (:func:`perfect_cover`): the right spine folds in
    from the right, as the RFC's recursion splits the range."""
    cover = perfect_cover(lo, hi)
    if not cover:
        return EMPTY_ROOT
    acc = nodes[cover[-1]]
    for node in reversed(cover[:-1]):
        acc = node_hash(nodes[node], acc)
    return acc


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The ranges whose hashes form PATH(index, D[size]) (RFC 9162 2.1.3.1), leaf end first."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size} leaves")
    path: list[tuple[int, int]] = []
    lo, hi = 0, size
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            path.append((lo + k, hi))
            hi = lo + k
        else:
            path.append((lo, lo + k))
            lo = lo + k
    path.reverse()
    return path


def consistency_ranges(old: int, new: int) -> list[tuple[int, int]]:
    """The ranges whose hashes form PROOF(old, D[new]) (RFC 9162 2.1.4.1), in proof order."""
    if not 0 <= old <= new:
        raise ProofError(f"no consistency proof from {old} to {new} leaves")
    if old in (0, new):
        return []
    proof: list[tuple[int, int]] = []

    def subproof(m: int, lo: int, hi: int, whole: bool) -> None:
        n = hi - lo
        if m == n:
            if not whole:
                proof.append((lo, hi))
            return
        k = _split(n)
        if m <= k:
            subproof(m, lo, lo + k, whole)
            proof.append((lo + k, hi))
        else:
            subproof(m - k, lo + k, hi, False)
            proof.append((lo, lo + k))

    subproof(old, 0, new, True)
    return proof


def nodes_for(ranges: Iterable[tuple[int, int]]) -> set[Node]:
    """Every stored node the ranges need."""
    return {node for lo, hi in ranges for node in perfect_cover(lo, hi)}


def hashes_of(ranges: Iterable[tuple[int, int]], fetch: Callable[[set[Node]], Mapping[Node, bytes]]) -> list[bytes]:
    """The hash of each range, from the nodes ``fetch`` reads (all at once)."""
    ranges = list(ranges)
    nodes = fetch(nodes_for(ranges))
    return [range_hash(lo, hi, nodes) for lo, hi in ranges]


# -- verification (RFC 9162 2.1.3.2 and 2.1.4.2): what a client runs, trusting nothing it is sent --


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """The root that ``proof`` and the leaf hash ``leaf`` give for leaf ``index`` of ``size``."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size} leaves")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("the inclusion proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the inclusion proof is shorter than the tree is deep")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    if root_from_inclusion(index, size, leaf, proof) != root:
        raise ProofError(f"leaf {index} is not in the tree of {size} leaves with that root")


def verify_consistency(old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> None:
    """Raise :class:`ProofError` unless the tree of ``new`` leaves extends the one of ``old``."""
    if not 0 <= old <= new:
        raise ProofError(f"a tree of {new} leaves cannot extend one of {old}")
    if old == new:
        if proof or old_root != new_root:
            raise ProofError("two trees of one size must have the same root and an empty proof")
        return
    if old == 0:
        if proof:
            raise ProofError("the empty tree's consistency proof is empty")
        return
    path = list(proof)
    if old & (old - 1) == 0:  # a power of two: the old root is the proof's implied first node
        path.insert(0, old_root)
    if not path:
        raise ProofError("the consistency proof is empty")
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is longer than the trees are deep")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the consistency proof is shorter than the trees are deep")
    if fr != old_root:
        raise ProofError(f"the proof does not lead to the tree of {old} leaves with that root")
    if sr != new_root:
        raise ProofError(f"the proof does not lead to the tree of {new} leaves with that root")


def append(
    right_edge: list[tuple[int, bytes]], leaves: Sequence[bytes], start: int, lowest: int = 1
) -> list[tuple[Node, bytes]]:
    """Append the leaf hashes ``leaves`` (numbered from ``start``) to a tree whose perfect
    right-edge subtrees are ``right_edge`` (``(level, hash)``, biggest first; changed in place).
    Returns the perfect nodes of level ``lowest`` or more that completing them made, for the
    store to keep.

    A level at a time: the new nodes of one level are hashed in pairs (the edge's node of that
    level first, when it is the left sibling), so N leaves cost N - 1 + log N hashes in a few
    loops rather than a Python call per leaf."""
    made: list[tuple[Node, bytes]] = []
    kept: list[tuple[int, bytes]] = []  # the new right edge below the untouched part, lowest first
    level, first, row = 0, start, list(leaves)
    while row:
        if first & 1:  # this level's first new node is a right child: its sibling is on the edge
            row = [right_edge.pop()[1], *row]
            first -= 1
        if len(row) & 1:
            kept.append((level, row[-1]))
        row = list(map(node_hash, row[0 : len(row) - 1 : 2], row[1::2]))
        level, first = level + 1, first >> 1
        if level >= lowest:
            made.extend(zip(zip(repeat(level), count(first)), row))
    right_edge.extend(reversed(kept))
    return made
