"""The transparency log's MCP tools: ``log_checkpoint``, ``prove_record``, ``check_log_extends``.

Each answer is checked here with RFC 9162 and the signed note's Ed25519 signature before it is
returned (``views.log_reads``), so an agent can cite a record as *in the log at tree size N with
root R* on this server's own proof, not on its word. Kept apart from ``server.py`` (the catalog's
tools) so the two grow without touching each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from kernelindex.agent.errors import refusals
from kernelindex.records.checkpoint import CheckpointError
from kernelindex.views.log_reads import LocalLogReads, LogReads, RemoteLogReads, check_extends, prove

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
Digest = Annotated[str, Field(min_length=1, max_length=80, description="a record's content digest (sha256:…)")]
Key = Annotated[
    str | None, Field(max_length=400, description="the log's verifier key to trust (default: the one the log names)")
]


def log_reads_for(reads: Any) -> LogReads:
    """The log reads from the same source as the catalog reads (a store or a server's client)."""
    return LocalLogReads(reads.store) if hasattr(reads, "store") else RemoteLogReads(reads.client)


@contextmanager
def _refusals() -> Iterator[None]:
    """The tools' one mapping of refusals (``errors.refusals``), with a failed check said to be one."""
    with refusals():
        try:
            yield
        except CheckpointError as exc:
            raise ToolError(f"proof failed: {exc}") from None


def add_log_tools(server: MCPServer, reads: LogReads) -> None:
    @server.tool(annotations=READ_ONLY)
    def log_checkpoint() -> dict[str, Any]:
        """The log's current signed checkpoint: origin, size, root hash, the C2SP note and its verifier key."""
        with _refusals():
            return reads.checkpoint()

    @server.tool(annotations=READ_ONLY)
    def prove_record(digest: Digest, verifier_key: Key = None) -> dict[str, Any]:
        """Prove (and check here) that the record with this content digest is in the log's current checkpoint."""
        with _refusals():
            return prove(reads, digest.strip(), verifier_key)

    @server.tool(annotations=READ_ONLY)
    def check_log_extends(
        note: Annotated[str, Field(min_length=1, max_length=4096, description="a checkpoint note saved earlier")],
        verifier_key: Annotated[str, Field(min_length=1, max_length=400, description="the log's verifier key")],
    ) -> dict[str, Any]:
        """Prove that the log's current tree extends a checkpoint saved earlier (fails on a fork or rewrite)."""
        with _refusals():
            old, new, _ = check_extends(reads, note, verifier_key)
        return {"from": old.size, "to": new.size, "origin": new.origin, "rootHash": new.root.hex(), "consistent": True}
