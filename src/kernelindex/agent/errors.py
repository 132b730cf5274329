"""Refusals as MCP tool errors: an unknown run, an ambiguous prefix, a server that is down or a bad
argument is a tool error naming the reason, never a crash."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver.exceptions import ToolError

from kernelindex.records.refusal import Refusal


@contextmanager
def refusals() -> Iterator[None]:
    """Turn every refusal from the store, a view or the server into a tool error naming the reason."""
    try:
        yield
    except Refusal as exc:  # a lookup, a view's bad parameter, the server's problem (ApiError)
        raise ToolError(exc.message) from None
