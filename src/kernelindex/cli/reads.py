"""The ``--server`` option and opening the right :mod:`kernelindex.views.reads` source for a command."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from kernelindex.cli.common import fail, fail_refusal, open_store_or_fail
from kernelindex.views.reads import LocalReads, Reads, RemoteReads

Server = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="KERNELINDEX_SERVER",
        show_envvar=False,
        help="read from this KernelIndex server's API (e.g. http://127.0.0.1:8000; "
        "default: $KERNELINDEX_SERVER) instead of the local store",
    ),
]


@contextmanager
def reads(db: str | None, server: str | None) -> Iterator[Reads]:
    """The store at ``db`` or the API at ``server``; a refusal from either ends the command with one line."""
    from kernelindex.client import ApiError, Client
    from kernelindex.records.refusal import Refusal

    if server:
        if db:
            fail("give --db or --server, not both", code=2)
        try:
            client = Client(server)
        except ValueError as exc:
            fail(f"--server: {exc}", code=2)
        source: Reads = RemoteReads(client)
    else:
        client = None
        source = LocalReads(open_store_or_fail(db, read_only=True))
    try:
        yield source
    except ApiError as exc:
        fail(exc.detail if exc.status else f"{server}: {exc.detail}")
    except Refusal as exc:  # a lookup that names nothing, a view's bad parameter
        fail_refusal(exc)
    finally:
        if client is not None:
            client.close()
