"""`kernelindex serve`: the web site and JSON API over the store, in one or more worker processes."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from kernelindex.cli.common import Db, check_store_url, fail, open_store_or_fail

Workers = Annotated[
    int, typer.Option(min=0, max=256, help="worker processes (0: one per CPU core); each has its own cache")
]
Port = Annotated[int, typer.Option(min=1, max=65535, help="port to listen on")]
PORT_TAKEN = 2  # the exit status when the address is already taken (nothing was started)


def check_port_free(host: str, port: int) -> None:
    """Refuse, before anything is imported, rerun or started, an address another process listens on.

    It binds as the server will (``SO_REUSEADDR``, as uvicorn and gunicorn do), so a port held only by
    closing connections still counts as free; a listening socket does not.
    """
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        fail(f"--host {host}: cannot resolve it ({exc.strerror})", code=PORT_TAKEN)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            fail(
                f"cannot serve on {host}:{port}: {exc.strerror.lower() if exc.strerror else exc} "
                "(is another `kernelindex serve` or `scripts/dev.sh demo` running?). Open that one, stop it "
                "(Ctrl-C in its terminal), or pick another port with --port",
                code=PORT_TAKEN,
            )


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def serve(
    db: Db = None,
    host: str = typer.Option("127.0.0.1", help="address to listen on"),
    port: Port = 8000,
    workers: Workers = 0,
) -> None:
    """Serve the read-only site and the JSON API (/api/v1/) over the store."""
    import uvicorn

    from kernelindex.store.database import URL_ENV, resolve_url
    from kernelindex.web.server.workers import APP, FAILED_TO_BOOT, gunicorn_argv

    check_store_url(db)
    check_port_free(host, port)
    url = resolve_url(db)
    open_store_or_fail(url).close()  # migrate once here, so no two workers race to do it
    os.environ[URL_ENV] = url  # the workers (forked processes) open the store from it
    count = workers or default_workers()
    typer.echo(
        f"kernelindex: serving http://{host}:{port}/ (API: /api/v1/, OpenAPI: /api/v1/openapi.json) "
        f"with {count} worker(s)"
    )
    if count == 1:
        server = uvicorn.Server(uvicorn.Config(APP, factory=True, host=host, port=port, log_level="warning"))
        server.run()
        if not server.started:
            raise typer.Exit(FAILED_TO_BOOT)  # as uvicorn.run: it could not start (port taken, app failed)
        return
    from kernelindex.web.http.cache import BUDGET_ENV, DEFAULT_BUDGET
    from kernelindex.web.templating import warm

    warm()  # compiled here, the workers load bytecode: ~5 MiB less each (web/templating.py)
    os.environ.setdefault(BUDGET_ENV, str(DEFAULT_BUDGET // count))  # one budget for the server
    sys.stdout.flush()
    # The resident master need not hold the CLI and the store code: become gunicorn (web/server/workers.py).
    argv = gunicorn_argv(host, port, count)
    os.execv(argv[0], argv)
