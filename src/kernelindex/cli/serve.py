"""`kernelindex serve`: the web site and JSON API over the store, in one or more worker processes."""

from __future__ import annotations

import os
import socket
from typing import Annotated

import typer

from kernelindex.cli.common import Db, open_store_or_fail

Workers = Annotated[int, typer.Option(min=0, help="worker processes (0: one per CPU core); each has its own cache")]


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def serve(
    db: Db = None,
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: int = typer.Option(8000, help="port to listen on"),
    workers: Workers = 0,
) -> None:
    """Serve the read-only site and the JSON API (/api/v1/) over the store."""
    import uvicorn

    from kernelindex.store.database import URL_ENV, resolve_url

    url = resolve_url(db)
    open_store_or_fail(url).close()  # migrate once here, so no two workers race to do it
    os.environ[URL_ENV] = url  # the workers (spawned processes) open the store from it
    count = workers or default_workers()
    typer.echo(f"kernelindex: serving http://{host}:{port}/ (API: /api/v1/, OpenAPI: /api/v1/openapi.json) "
               f"with {count} worker(s)")
    config = uvicorn.Config("kernelindex.web.app:serving_app", factory=True, host=host, port=port, workers=count,
                            log_level="warning")
    if count == 1:
        server = uvicorn.Server(config)
        server.run()
        if not server.started:
            raise typer.Exit(3)  # as uvicorn.run: it could not start (port taken, app failed)
        return
    from uvicorn.supervisors import Multiprocess

    sock = config.bind_socket()
    # uvicorn binds this socket without naming the TCP protocol, so the workers' event loops leave
    # Nagle's algorithm on for the connections they accept, and every reply written in two parts
    # (headers, body) waits for the client's delayed ACK: ~40 ms each. Accepted connections
    # inherit TCP_NODELAY from the listening socket.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    Multiprocess(config, sockets=[sock]).run()
