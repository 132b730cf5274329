"""The transparency log's resources: its signed checkpoint, an inclusion proof, a consistency proof.

Hashes are lowercase hex; the checkpoint's ``note`` is the C2SP signed note itself (its root in
base64, as that format writes it). A proof names the tree size it is for; a reader checks it with
RFC 9162's algorithms against a checkpoint of that size it already trusts, never against the
server's word (docs/evidence.md: "Checking a record without trusting the server").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from kernelindex.records import merkle
from kernelindex.records.refusal import RefusalKind, ViewRefusal
from kernelindex.services.log_checkpoints import CheckpointSigner, SignedCheckpoint
from kernelindex.store.transparency import reads
from kernelindex.views.common import ViewModel

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from kernelindex.store.database import Store

MAX_SIZE = 2**62  # a bound on every size a request names (beyond any tree, within every backend's integers)


class LogCheckpoint(ViewModel):
    origin: str
    size: int = Field(description="leaves in the tree")
    rootHash: str = Field(description="RFC 9162 root hash, hex")
    note: str = Field(description="the checkpoint as a C2SP signed note (tlog-checkpoint), Ed25519")
    verifierKey: str = Field(description="the log key as a signed-note verifier key: name+hash+key")


class InclusionProof(ViewModel):
    digest: str = Field(description="the record's content digest: the leaf's data")
    table: str = Field(description="the store table the record is in")
    leafIndex: int
    treeSize: int
    leafHash: str = Field(description="SHA-256(0x00 || the digest's 32 bytes), hex")
    rootHash: str = Field(description="the root of the tree of treeSize leaves, hex")
    proof: list[str] = Field(description="RFC 9162 inclusion path, leaf end first, hex")


class ConsistencyProof(ViewModel):
    fromSize: int = Field(alias="from")
    toSize: int = Field(alias="to")
    fromRoot: str
    toRoot: str
    proof: list[str] = Field(description="RFC 9162 consistency proof, hex")


class LogEntry(ViewModel):
    """Where a record sits in the log (the run page shows it). No tree size: a leaf's place never
    changes, so a permalink's page stays the same as the log grows; the proof is against the
    current tree."""

    leafIndex: int
    proof: str = Field(description="URL of its inclusion proof in the current tree")


def checkpoint_view(signed: SignedCheckpoint) -> LogCheckpoint:
    cp = signed.checkpoint
    return LogCheckpoint(
        origin=cp.origin, size=cp.size, rootHash=cp.root.hex(), note=signed.note, verifierKey=signed.verifier_key
    )


def current_checkpoint(signer: CheckpointSigner, store: Store) -> LogCheckpoint:
    """The checkpoint of the tree as it is: the one the signer's watcher signed, or signed now."""
    with store.read() as conn:
        size = reads.tree_size(conn)
    newest = signer.current(store)
    if newest.checkpoint.size != size:
        newest = signer.sign_current(store)
    return checkpoint_view(newest)


def _size(conn: Connection, size: int | None, what: str) -> int:
    current = reads.tree_size(conn)
    if size is None:
        return current
    if not 0 <= size <= current:
        raise ViewRefusal(
            RefusalKind.BAD_REQUEST, "bad-size", f"{what}={size}: the log holds {current} leaves", size=current
        )
    return size


def inclusion_proof(conn: Connection, digest: str, size: int | None = None) -> InclusionProof:
    """The proof that the record with ``digest`` is in the tree of ``size`` leaves (default: all)."""
    leaf = reads.leaf_of(conn, digest.strip().lower())
    if leaf is None:
        raise ViewRefusal(RefusalKind.NOT_FOUND, "not-in-log", f"no record with digest {digest[:80]!r} is in the log")
    tree = _size(conn, size, "size")
    if leaf.index >= tree:
        raise ViewRefusal(
            RefusalKind.NOT_FOUND,
            "not-in-log",
            f"{digest} is leaf {leaf.index}, not in the tree of {tree} leaves",
            leafIndex=leaf.index,
        )
    proof = reads.inclusion_proof(conn, leaf.index, tree)
    return InclusionProof(
        digest=leaf.digest,
        table=leaf.table_name,
        leafIndex=leaf.index,
        treeSize=tree,
        leafHash=leaf.hash.hex(),
        rootHash=reads.root_at(conn, tree).hex(),
        proof=[p.hex() for p in proof],
    )


def consistency_proof(conn: Connection, old: int, new: int | None = None) -> ConsistencyProof:
    """The proof that the tree of ``new`` leaves (default: all) extends the tree of ``old``."""
    new = _size(conn, new, "to")
    if not 0 <= old <= new:
        raise ViewRefusal(RefusalKind.BAD_REQUEST, "bad-size", f"from={old} must be between 0 and to={new}")
    try:
        proof = reads.consistency_proof(conn, old, new)
    except merkle.ProofError as exc:
        raise ViewRefusal(RefusalKind.BAD_REQUEST, "bad-size", str(exc)) from exc
    return ConsistencyProof(
        fromSize=old,
        toSize=new,
        fromRoot=reads.root_at(conn, old).hex(),
        toRoot=reads.root_at(conn, new).hex(),
        proof=[p.hex() for p in proof],
    )


def log_entry(conn: Connection, digest: str, base: str = "") -> LogEntry | None:
    leaf = reads.leaf_of(conn, digest)
    if leaf is None:
        return None
    return LogEntry(leafIndex=leaf.index, proof=f"{base}/api/v1/log/proof/inclusion?digest={digest}")
