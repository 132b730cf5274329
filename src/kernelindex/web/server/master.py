"""The master process of `kernelindex serve --workers N`: gunicorn's arbiter, which builds the app
before it forks its workers (``--preload``), with two ways of failing made one.

An app that cannot be built in the master (the store cannot be opened, a module does not load)
would end gunicorn with an uncaught exception (status 1): here it is logged and the master exits
with gunicorn's status 3, what a worker that fails to boot gives. When several workers fail to boot,
the first one reaped stops the server with status 3; but gunicorn reaps the others while it stops,
and each raises the same halt again, out of the stop, so the master would end with an uncaught
exception (status 1) and leave workers unreaped. Here a halt already under way reaps them and
goes on stopping.

`kernelindex serve` runs it in its own process (:func:`serve`), after opening and migrating the store;
``python -m kernelindex.web.server.master ARGS`` runs it alone over $KERNELINDEX_DATABASE_URL's store.
"""

# ruff: noqa: E402  (the collector is off before the imports below)
from __future__ import annotations

import gc

# Off while the app is imported and built (~0.1 CPU s less on the way to the first page: the
# collector would walk the growing heap again and again); web.app.forking_app turns it back on.
gc.disable()

import sys

from gunicorn.app import base
from gunicorn.app.wsgiapp import run
from gunicorn.arbiter import Arbiter
from gunicorn.errors import HaltServer


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


def serve(args: list[str]) -> None:
    """Run the master with gunicorn's command-line arguments ``args`` (workers.gunicorn_args), in this process."""
    base.Arbiter = Master  # the one arbiter gunicorn's application starts, in this process only
    sys.argv = ["gunicorn", *args]
    run(prog="gunicorn")


if __name__ == "__main__":
    serve(sys.argv[1:])
