"""The master process of `kernelindex serve --workers N`: gunicorn's arbiter, which builds the app
before it forks its workers (``--preload``), with two ways of failing made one.

An app that cannot be built in the master (the store cannot be opened, a module does not load)
would end gunicorn with an uncaught exception (status 1): here it is logged and the master exits
with gunicorn's status 3, what a worker that fails to boot gives. When several workers fail to boot,
the first one reaped stops the server with status 3; but gunicorn reaps the others while it stops,
and each raises the same halt again, out of the stop, so the master would end with an uncaught
exception (status 1) and leave workers unreaped. Here a halt already under way reaps them and
goes on stopping.

Started by `kernelindex serve`, the master first opens the store, migrating it once before any
worker exists (one clear line and status 1 when there is none or it cannot be opened), and says
where it serves: the CLI hands over without loading SQLAlchemy, which the master loads anyway.
"""

# ruff: noqa: E402  (the collector is off before the imports below)
from __future__ import annotations

import gc

# Off while the app is imported and built (~0.1 CPU s less on the way to the first page: the
# collector would walk the growing heap again and again); web.app.forking_app turns it back on.
gc.disable()

import os
import sys

from gunicorn.app import base
from gunicorn.app.wsgiapp import run
from gunicorn.arbiter import Arbiter
from gunicorn.errors import HaltServer

from kernelindex.services.opening import StoreUnavailable, open_named_store
from kernelindex.store.database import URL_ENV, resolve_url
from kernelindex.web.server.workers import OPENS


class Master(Arbiter):
    """gunicorn's arbiter, whose failure to build the app is status 3 and whose reaping during a halt
    does not halt it a second time."""

    halting = False

    def setup(self, app):
        try:
            super().setup(app)  # with --preload, this builds the app
        except Exception:
            self.log.exception("the app could not be built")
            sys.exit(self.WORKER_BOOT_ERROR)

    def halt(self, reason=None, exit_status=0):
        self.halting = True
        super().halt(reason, exit_status)

    def reap_workers(self):
        while True:  # each HaltServer leaves one worker reaped; reap on until none is left
            try:
                super().reap_workers()
                return
            except HaltServer:
                if not self.halting:
                    raise


def open_served_store(db: str | None) -> None:
    """Open (so migrate) the store at ``db`` for the app the master builds next, or exit with one line."""
    try:
        open_named_store(db).close()
    except StoreUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    os.environ[URL_ENV] = resolve_url(db)  # where the app (and every worker forked from it) opens it


if __name__ == "__main__":
    if sys.argv[1:2] == [OPENS]:  # started by `kernelindex serve` (workers.gunicorn_argv)
        store, announce = sys.argv[2] or None, sys.argv[3]
        del sys.argv[1:4]
        open_served_store(store)
        print(announce, flush=True)
    base.Arbiter = Master  # the one arbiter gunicorn's application starts, in this process only
    run(prog="gunicorn")
