"""RFC 9162 hashing against Certificate Transparency's published test vectors, and every proof
against the RFC's recursive definitions written out again here over plain lists of leaves."""

from __future__ import annotations

import hashlib
import random

import pytest

from kernelindex.records import merkle
from rfc9162_kit import rfc_mth, rfc_path, rfc_subproof, root_from_path, roots_from_consistency

# The eight leaves of the CT reference implementation's tree tests (RFC 6962 / 9162 hashing).
CT_LEAVES = [
    bytes.fromhex(h)
    for h in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f")
]
CT_ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
# PATH(0, D[8]) from the same tests
CT_PATH_0_8 = [
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
]


# -- the module's tree from stored perfect nodes ----------------------------------------------


def stored_nodes(data: list[bytes]) -> dict[merkle.Node, bytes]:
    """What the store keeps: leaf hashes (level 0) and every perfect node :func:`merkle.append`
    makes, the leaves appended one at a time."""
    nodes: dict[merkle.Node, bytes] = {}
    edge: list[tuple[int, bytes]] = []
    for i, item in enumerate(data):
        leaf = merkle.leaf_hash(item)
        nodes[(0, i)] = leaf
        nodes.update(merkle.append(edge, [leaf], i))
    return nodes


def test_appending_in_pieces_makes_the_nodes_and_edge_of_one_at_a_time():
    rng = random.Random()
    for _ in range(40):
        data = [rng.randbytes(4) for _ in range(rng.randrange(0, 200))]
        nodes = {node: value for node, value in stored_nodes(data).items() if node[0] > 0}
        edge: list[tuple[int, bytes]] = []
        made: list[tuple[merkle.Node, bytes]] = []
        start = 0
        while start < len(data):
            piece = [merkle.leaf_hash(item) for item in data[start : start + rng.randrange(1, 70)]]
            made += merkle.append(edge, piece, start)
            start += len(piece)
        assert dict(made) == nodes and len(made) == len(nodes)
        # the edge is the tree's perfect cover, biggest first: its root folds from it
        assert [level for level, _ in edge] == [level for level, _ in merkle.perfect_cover(0, len(data))]
        root = edge[-1][1] if edge else merkle.EMPTY_ROOT
        for _, value in reversed(edge[:-1]):
            root = merkle.node_hash(value, root)
        assert root == rfc_mth(data)


def test_roots_match_the_ct_vectors():
    nodes = stored_nodes(CT_LEAVES)
    for n, expected in enumerate(CT_ROOTS, start=1):
        assert merkle.range_hash(0, n, nodes).hex() == expected
        assert merkle.root_of([merkle.leaf_hash(x) for x in CT_LEAVES[:n]]).hex() == expected
    assert merkle.range_hash(0, 0, nodes) == hashlib.sha256(b"").digest()


def test_inclusion_path_matches_the_ct_vector():
    nodes = stored_nodes(CT_LEAVES)
    proof = merkle.hashes_of(merkle.inclusion_ranges(0, 8), lambda wanted: {k: nodes[k] for k in wanted})
    assert [p.hex() for p in proof] == CT_PATH_0_8
    merkle.verify_inclusion(0, 8, merkle.leaf_hash(CT_LEAVES[0]), proof, bytes.fromhex(CT_ROOTS[7]))


def test_every_proof_is_the_rfcs_and_verifies():
    rng = random.Random(9162)
    data = [rng.randbytes(rng.randrange(0, 40)) for _ in range(70)]
    nodes = stored_nodes(data)

    def fetch(wanted):
        return {k: nodes[k] for k in wanted}

    for n in range(1, len(data) + 1):
        root = rfc_mth(data[:n])
        assert merkle.range_hash(0, n, nodes) == root
        for m in range(n):
            proof = merkle.hashes_of(merkle.inclusion_ranges(m, n), fetch)
            assert proof == rfc_path(m, data[:n])
            assert root_from_path(m, n, merkle.leaf_hash(data[m]), proof) == root
            merkle.verify_inclusion(m, n, merkle.leaf_hash(data[m]), proof, root)
        for m in range(1, n + 1):
            proof = merkle.hashes_of(merkle.consistency_ranges(m, n), fetch)
            assert proof == (rfc_subproof(m, data[:n], True) if m < n else [])
            merkle.verify_consistency(m, n, rfc_mth(data[:m]), root, proof)
            if m < n:
                assert roots_from_consistency(m, n, rfc_mth(data[:m]), proof) == (rfc_mth(data[:m]), root)


def test_tampered_proofs_are_refused():
    rng = random.Random(6962)
    data = [rng.randbytes(8) for _ in range(37)]
    nodes = stored_nodes(data)

    def fetch(wanted):
        return {k: nodes[k] for k in wanted}

    root = rfc_mth(data)
    for _ in range(200):
        m = rng.randrange(37)
        proof = merkle.hashes_of(merkle.inclusion_ranges(m, 37), fetch)
        bad = list(proof)
        i = rng.randrange(len(bad))
        bad[i] = bytes([bad[i][0] ^ 1]) + bad[i][1:]
        with pytest.raises(merkle.ProofError):
            merkle.verify_inclusion(m, 37, merkle.leaf_hash(data[m]), bad, root)
        with pytest.raises(merkle.ProofError):  # the right proof for another leaf
            merkle.verify_inclusion((m + 1) % 37, 37, merkle.leaf_hash(data[m]), proof, root)
        with pytest.raises(merkle.ProofError):  # a proof cut short
            merkle.verify_inclusion(m, 37, merkle.leaf_hash(data[m]), proof[:-1], root)
        old = rng.randrange(1, 37)
        cproof = merkle.hashes_of(merkle.consistency_ranges(old, 37), fetch)
        with pytest.raises(merkle.ProofError):  # a forked history: the old tree had another leaf
            forked = data[:old]
            forked[rng.randrange(old)] = b"rewritten"
            merkle.verify_consistency(old, 37, rfc_mth(forked), root, cproof)
        if cproof:
            bad = list(cproof)
            bad[-1] = bytes(32)
            with pytest.raises(merkle.ProofError):
                merkle.verify_consistency(old, 37, rfc_mth(data[:old]), root, bad)


def test_requests_past_the_tree_are_refused():
    with pytest.raises(merkle.ProofError):
        merkle.inclusion_ranges(5, 5)
    with pytest.raises(merkle.ProofError):
        merkle.consistency_ranges(6, 5)
