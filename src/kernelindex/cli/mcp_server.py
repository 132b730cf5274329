"""`kernelindex mcp`: the MCP server for agents, over stdio (default) or streamable HTTP."""

from __future__ import annotations

from typing import Annotated

import typer

from kernelindex.cli.common import Db, fail, open_store_or_fail
from kernelindex.cli.reads import Server

API_KEY_ENV = "KERNELINDEX_API_KEY"


def mcp_command(
    db: Db = None,
    server: Server = None,
    transport: Annotated[str, typer.Option(help="stdio (a local agent) or http (streamable HTTP at /mcp)")] = "stdio",
    host: Annotated[str, typer.Option(help="address for --transport http")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="port for --transport http")] = 8765,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar=API_KEY_ENV,
            show_envvar=False,
            help="API key with the submit scope (default: $KERNELINDEX_API_KEY); adds the submit_kernel tool; "
            "needs --server",
        ),
    ] = None,
) -> None:
    """Serve KernelIndex's answers as MCP tools (read-only unless an API key is configured)."""
    import anyio

    from kernelindex.agent.server import build_server
    from kernelindex.agent.stdio import serve_stdio
    from kernelindex.client import Client
    from kernelindex.views.reads import LocalReads, RemoteReads

    if transport not in ("stdio", "http"):
        fail(f"--transport must be stdio or http, not {transport!r}", code=2)
    if server and db:
        fail("give --db or --server, not both", code=2)
    if api_key and not server:
        fail("--api-key submits through a server's API: give --server too", code=2)
    try:
        reads = RemoteReads(Client(server, api_key="")) if server else LocalReads(open_store_or_fail(db))
        submitter = Client(server, api_key=api_key) if server and api_key else None
    except ValueError as exc:
        fail(f"--server: {exc}", code=2)
    mcp = build_server(reads, submitter=submitter)
    if transport == "stdio":
        anyio.run(serve_stdio, mcp)
    else:
        typer.echo(f"kernelindex mcp: streamable HTTP at http://{host}:{port}/mcp", err=True)
        mcp.run("streamable-http", host=host, port=port)
