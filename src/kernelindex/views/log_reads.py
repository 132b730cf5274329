"""The log's three reads from the local store or any server, for the CLI's ``log`` commands and
the MCP tools (the same answers as ``GET /api/v1/log/...``), and the checks made on them.

Kept beside :mod:`kernelindex.views.reads` rather than in it: those reads are the catalog's.
Every answer is checked here with :mod:`kernelindex.records.checkpoint`, trusting only a pinned
verifier key, so a remote server's word is never taken for its own log.
"""

from __future__ import annotations

from typing import Any, Protocol

from kernelindex.records.checkpoint import Checkpoint, extension_answer, open_checkpoint, prove_answer


class LogReads(Protocol):
    def checkpoint(self) -> dict[str, Any]: ...
    def inclusion(self, digest: str, size: int | None) -> dict[str, Any]: ...
    def consistency(self, old: int, new: int | None) -> dict[str, Any]: ...


class LocalLogReads:
    def __init__(self, store) -> None:
        from kernelindex.services.log_checkpoints import CheckpointSigner

        self.store = store
        self.signer = CheckpointSigner()

    def checkpoint(self) -> dict[str, Any]:
        from kernelindex.views.transparency_log import checkpoint_view

        return checkpoint_view(self.signer.sign_current(self.store)).model_dump(mode="json")

    def inclusion(self, digest: str, size: int | None) -> dict[str, Any]:
        from kernelindex.views.transparency_log import inclusion_proof

        with self.store.read() as conn:
            return inclusion_proof(conn, digest, size).model_dump(mode="json")

    def consistency(self, old: int, new: int | None) -> dict[str, Any]:
        from kernelindex.views.transparency_log import consistency_proof

        with self.store.read() as conn:
            return consistency_proof(conn, old, new).model_dump(mode="json")


class RemoteLogReads:
    def __init__(self, client) -> None:
        self.client = client

    def checkpoint(self) -> dict[str, Any]:
        return self.client.log_checkpoint()

    def inclusion(self, digest: str, size: int | None) -> dict[str, Any]:
        return self.client.log_inclusion(digest, size)

    def consistency(self, old: int, new: int | None) -> dict[str, Any]:
        return self.client.log_consistency(old, new)


def prove(reads: LogReads, digest: str, verifier: str | None = None) -> dict[str, Any]:
    """Prove that the record with ``digest`` is in the log's current checkpoint (raises
    :class:`~kernelindex.records.checkpoint.CheckpointError` when the proof fails)."""
    answer = reads.checkpoint()
    size = open_checkpoint(str(answer.get("note", "")), verifier or str(answer.get("verifierKey", ""))).size
    proof = reads.inclusion(digest, size)
    checkpoint = prove_answer(answer, proof, digest, verifier)
    return {
        "digest": digest,
        "leafIndex": proof["leafIndex"],
        "table": proof.get("table"),
        "treeSize": checkpoint.size,
        "rootHash": checkpoint.root.hex(),
        "origin": checkpoint.origin,
        "verifierKey": verifier or answer.get("verifierKey"),
        "verified": True,
    }


def check_extends(reads: LogReads, saved_note: str, verifier: str) -> tuple[Checkpoint, Checkpoint, dict[str, Any]]:
    """Prove that the log's current checkpoint extends ``saved_note`` (raises CheckpointError on a
    fork or a rewrite). Returns (saved, current, the current checkpoint's answer)."""
    old = open_checkpoint(saved_note, verifier)
    answer = reads.checkpoint()
    new_size = open_checkpoint(str(answer.get("note", "")), verifier).size
    proof = reads.consistency(old.size, new_size) if 0 < old.size < new_size else None
    saved, current = extension_answer(saved_note, answer, proof, verifier)
    return saved, current, answer
