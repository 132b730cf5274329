"""`kernelindex serve`: the web site and JSON API over the store, in one or more worker processes."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from kernelindex.cli.common import Db, fail, open_store_or_fail

Workers = Annotated[
    int, typer.Option(min=0, max=256, help="worker processes (0: one per CPU core); each has its own cache")
]
Port = Annotated[int, typer.Option(min=1, max=65535, help="port to listen on")]
PublicUrl = Annotated[
    str | None,
    typer.Option(
        "--public-url",
        help="the site's public address, which absolute links (sitemap, feeds, llms.txt, citations) carry "
        "instead of the request's Host header; default $KERNELINDEX_PUBLIC_URL",
    ),
]
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
    public_url: PublicUrl = None,
) -> None:
    """Serve the read-only site and the JSON API (/api/v1/) over the store."""
    from kernelindex.services.public_url import PUBLIC_URL_ENV
    from kernelindex.web.server import workers as server
    from kernelindex.web.settings import checked_public_url

    try:  # the flag, else the variable, checked where the app checks it; the workers read it back
        public = checked_public_url(public_url, "--public-url")
    except ValueError as exc:
        fail(str(exc))
    if public is not None:
        os.environ[PUBLIC_URL_ENV] = public
    check_port_free(host, port)
    count = workers or default_workers()
    server.limit_arenas()  # before any thread: this process becomes the server
    if count > 1:
        # gunicorn's master (web/server/master.py), which builds the app and forks the workers from it;
        # importing it turns the collector off until the app is built
        from kernelindex.web.server import master
    open_for_serving(db)
    typer.echo(
        f"kernelindex: serving http://{host}:{port}/ (API: /api/v1/, OpenAPI: /api/v1/openapi.json) "
        f"with {count} worker(s)" + (f"; links name {public}" if public else "")
    )
    sys.stdout.flush()  # before any fork, or each worker would write it again as it exits
    if count == 1:
        server.serve_one(host, port)
        return
    from kernelindex.ranking import memo_budget
    from kernelindex.web.settings import BUDGET_ENV, DEFAULT_BUDGET

    os.environ.setdefault(BUDGET_ENV, str(DEFAULT_BUDGET // count))  # one budget for the server
    os.environ.setdefault(memo_budget.BUDGET_ENV, str(memo_budget.DEFAULT_BUDGET // count))  # and ranked groups'
    master.serve(server.gunicorn_args(host, port, count))


def open_for_serving(db: str | None) -> None:
    """Open (so migrate) the store once, before any worker exists, and name it to the app every worker runs."""
    from kernelindex.store.database import URL_ENV, resolve_url

    open_store_or_fail(db).close()
    os.environ[URL_ENV] = resolve_url(db)
