"""The MCP server over stdio, one JSON-RPC message a line, where a malformed line gets its JSON-RPC
error response: -32700 (id null) for a line that is not UTF-8 JSON, -32600 for JSON that is not a
message (with the line's id when it has a usable one). The SDK's stdio transport drops such a line
without a word, so the client waits for an answer that never comes.

Batches are refused with one -32600: MCP dropped JSON-RPC batching in its 2025-06-18 revision, and
the SDK serves no batch at any revision. A valid notification (no id) still gets no reply.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from pydantic import TypeAdapter, ValidationError

WITH_ID: TypeAdapter[JSONRPCRequest | JSONRPCResponse | JSONRPCError] = TypeAdapter(
    JSONRPCRequest | JSONRPCResponse | JSONRPCError
)
"""A message with an ``id`` member (a request, or the client's answer to ours); one without is a
notification, so a request whose id is malformed is refused, not taken for a notification."""


class BadMessage(Exception):
    """A line that is not a JSON-RPC message: ``reply`` is the error response it is owed."""

    def __init__(self, request_id: Any, code: int, message: str) -> None:
        super().__init__(message)
        usable = isinstance(request_id, str) or type(request_id) is int
        self.reply = JSONRPCError(
            jsonrpc="2.0", id=request_id if usable else None, error=ErrorData(code=code, message=message)
        )


def read_message(line: bytes) -> JSONRPCMessage:
    """The JSON-RPC message on ``line``; :class:`BadMessage` when there is none."""
    try:
        decoded = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise BadMessage(None, PARSE_ERROR, "Parse error: a message is one line of UTF-8 JSON") from None
    if isinstance(decoded, list):
        why = "an empty batch" if not decoded else "JSON-RPC batches are not supported (MCP dropped them in 2025-06-18)"
        raise BadMessage(None, INVALID_REQUEST, f"Invalid Request: {why}")
    if not isinstance(decoded, dict):
        raise BadMessage(None, INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    request_id = decoded.get("id")
    if decoded.get("jsonrpc") != "2.0":
        raise BadMessage(request_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    try:
        if "id" in decoded:
            return WITH_ID.validate_python(decoded, by_name=False)
        return JSONRPCNotification.model_validate(decoded, by_name=False)
    except ValidationError:
        raise BadMessage(request_id, INVALID_REQUEST, f"Invalid Request: {_fault(decoded)}") from None


def _fault(decoded: dict[str, Any]) -> str:
    """What a JSON-RPC 2.0 object lacks to be a request, notification or response."""
    if "method" in decoded:
        if not isinstance(decoded["method"], str):
            return '"method" must be a string'
        if "params" in decoded and not isinstance(decoded["params"], dict):
            return '"params" must be an object'
        return '"id" must be a string or an integer'
    if "result" in decoded or "error" in decoded:
        return "not a valid response"
    return 'no "method"'


async def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` over stdin and stdout until stdin closes."""
    # the SDK's own in-process client reaches the low-level server the same way (its attribute is not public yet)
    lowlevel = server._lowlevel_server
    inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception]()
    outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage]()
    with _wire() as (stdin, stdout):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read, anyio.wrap_file(stdin), inbound_send, outbound.clone())
            tasks.start_soon(_write, anyio.wrap_file(stdout), outbound_receive)
            await lowlevel.run(inbound, outbound, lowlevel.create_initialization_options())


@contextmanager
def _wire() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """stdin, and stdout on a descriptor of its own while fd 1 points at stderr, so that stray output
    (a library's print) lands on stderr, not inside a message (as the SDK's transport does)."""
    sys.stdout.flush()
    wire = os.dup(1)
    os.dup2(2, 1)
    try:
        with os.fdopen(wire, "wb", closefd=False) as stdout:
            yield sys.stdin.buffer, stdout
    finally:
        os.dup2(wire, 1)
        os.close(wire)


async def _read(
    stdin: anyio.AsyncFile[bytes],
    inbound: ObjectSendStream[SessionMessage | Exception],
    replies: ObjectSendStream[SessionMessage],
) -> None:
    """Each line to the server as its message, or its error response straight back to the client."""
    async with inbound, replies:
        async for line in stdin:
            if not line.strip():
                continue
            try:
                message = read_message(line)
            except BadMessage as bad:
                await replies.send(SessionMessage(bad.reply))
                continue
            await inbound.send(SessionMessage(message))


async def _write(stdout: anyio.AsyncFile[bytes], outbound: ObjectReceiveStream[SessionMessage]) -> None:
    async with outbound:
        async for item in outbound:
            await stdout.write(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
            await stdout.flush()
