"""`kernelindex mcp` over stdio, driven line by line as a client's transport drives it: a line that is
not a JSON-RPC message gets its JSON-RPC error (the SDK's transport dropped it, and the client waited
for an answer that never came), a valid notification still gets nothing, and the server goes on."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import textwrap
import threading

import pytest

from store_fixtures import database_url

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}


class Wire:
    """A server process on pipes: lines in, each stdout line back as JSON."""

    def __init__(self, args: list[str], stderr) -> None:
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=lambda: [self.lines.put(line) for line in self.process.stdout])
        self.reader.start()

    def send(self, line: bytes | dict) -> None:
        self.process.stdin.write((json.dumps(line).encode() if isinstance(line, dict) else line) + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict:
        """The next line the server writes: it must be one JSON object."""
        return json.loads(self.lines.get(timeout=60))

    def close(self) -> int:
        """Close stdin (the client leaves); the server's exit status, once all it wrote is read."""
        self.process.stdin.close()
        code = self.process.wait(timeout=60)
        self.reader.join(timeout=60)
        return code

    def start_session(self) -> None:
        self.send(INITIALIZE)
        assert self.reply()["id"] == 1
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


@pytest.fixture
def wire(tmp_path):
    args = [sys.executable, "-m", "kernelindex.cli", "mcp", "--db", database_url("sqlite", tmp_path, migrated=True)]
    with (tmp_path / "stderr").open("wb") as stderr:
        server = Wire(args, stderr)
    yield server
    if server.process.poll() is None:
        server.process.kill()
        server.process.wait()


# (the line, the id its error answers, the error code)
MALFORMED = [
    (b"{not json", None, -32700),
    (b"\xff\xfe", None, -32700),
    (b'{"jsonrpc":"2.0","id":12,"method":"ping","params":{"x":"\xff"}}', None, -32700),  # JSON, but not UTF-8
    (b'"str"', None, -32600),
    (b"[]", None, -32600),
    (b'[{"jsonrpc":"2.0","id":9,"method":"ping"}]', None, -32600),  # a batch: MCP has none since 2025-06-18
    (b'{"jsonrpc":"2.0","id":5}', 5, -32600),
    (b'{"jsonrpc":"1.0","id":6,"method":"ping"}', 6, -32600),
    (b'{"id":7,"method":"ping"}', 7, -32600),
    (b'{"jsonrpc":"2.0","id":"s","method":7}', "s", -32600),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None, -32600),  # an id, but not one a reply can carry
    (b'{"jsonrpc":"2.0","method":"notifications/x","params":[1]}', None, -32600),  # a notification, malformed
]


def test_each_malformed_line_gets_its_json_rpc_error_and_the_server_goes_on(wire):
    wire.start_session()
    for line, request_id, code in MALFORMED:
        wire.send(line)
        reply = wire.reply()
        assert set(reply) == {"jsonrpc", "id", "error"} and reply["jsonrpc"] == "2.0", (line, reply)
        assert (reply["id"], reply["error"]["code"]) == (request_id, code), (line, reply)
        assert reply["error"]["message"].startswith("Parse error" if code == -32700 else "Invalid Request"), reply
    # a valid notification gets no reply: the next line back answers the ping after it
    wire.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    wire.send({"jsonrpc": "2.0", "id": 99, "method": "ping"})
    assert wire.reply() == {"jsonrpc": "2.0", "id": 99, "result": {}}
    assert wire.close() == 0


def test_tool_argument_errors_reach_a_stdio_client_as_plain_tool_errors(wire):
    wire.start_session()
    wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    runs = next(tool for tool in wire.reply()["result"]["tools"] if tool["name"] == "runs")
    assert runs["inputSchema"]["additionalProperties"] is False
    calls = [("runs", {"bogusarg": 1}), ("search", {"query": "x" * 201}), ("runs", {"limit": 3})]
    for request_id, (name, arguments) in enumerate(calls, 3):
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )
    results = {}
    for _ in calls:
        reply = wire.reply()
        results[reply["id"]] = reply["result"]
    unknown, too_long, listed = results[3], results[4], results[5]
    assert unknown["isError"] and unknown["content"][0]["text"] == (
        "unknown argument(s): bogusarg; allowed: hardware, limit, operation, source, status"
    )
    assert too_long["isError"] and too_long["content"][0]["text"] == "query: at most 200 characters"
    assert not listed.get("isError") and listed["structuredContent"] == {"runs": []}  # an empty store
    assert wire.close() == 0


NOISY = textwrap.dedent(
    """
    import os, anyio
    from mcp.server.mcpserver import MCPServer
    from kernelindex.agent.stdio import serve_stdio

    server = MCPServer("noisy")

    @server.tool()
    def noisy() -> str:
        print("stray print", flush=True)
        os.write(1, b"stray write\\n")
        return "answer"

    anyio.run(serve_stdio, server)
    """
)


def test_stray_output_on_stdout_goes_to_stderr_not_into_the_messages(tmp_path):
    """The transport writes messages on a descriptor of its own; fd 1 points at stderr while it serves."""
    with (tmp_path / "stderr").open("wb") as stderr:
        wire = Wire([sys.executable, "-c", NOISY], stderr)
    try:
        wire.start_session()
        wire.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "noisy", "arguments": {}}})
        assert wire.reply()["result"]["content"][0]["text"] == "answer"  # the next stdout line is the reply
        assert wire.close() == 0
    finally:
        if wire.process.poll() is None:
            wire.process.kill()
    assert wire.lines.empty()
    stderr = (tmp_path / "stderr").read_text()
    assert "stray print" in stderr and "stray write" in stderr, stderr
