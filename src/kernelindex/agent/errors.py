"""Refusals as MCP tool errors: an unknown run, an ambiguous prefix, a server that is down or a bad
argument is a tool error naming the reason, never a crash."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver.exceptions import ToolError

from kernelindex.client import ApiError
from kernelindex.records.refusal import Refusal as DomainRefusal
from kernelindex.views.errors import Refusal


@contextmanager
def refusals() -> Iterator[None]:
    """Turn every refusal from the store, a view or the server into a tool error naming the reason."""
    try:
        yield
    except Refusal as exc:
        raise ToolError(exc.detail) from None
    except ApiError as exc:
        raise ToolError(exc.detail) from None
    except DomainRefusal as exc:
        raise ToolError(exc.message) from None
