"""The master process of `kernelindex serve --workers N`: gunicorn's arbiter, with one race closed.

When several workers fail to boot (the store cannot be opened, the app does not load), the first
one reaped stops the server with gunicorn's status 3; but gunicorn reaps the others while it stops,
and each raises the same halt again, out of the stop, so the master would end with an uncaught
exception (status 1) and leave workers unreaped. Here a halt already under way reaps them and
goes on stopping. This module imports gunicorn only: the master loads neither the app nor the store.
"""

from __future__ import annotations

from gunicorn.app import base
from gunicorn.app.wsgiapp import run
from gunicorn.arbiter import Arbiter
from gunicorn.errors import HaltServer


class Master(Arbiter):
    """gunicorn's arbiter, whose reaping during a halt does not halt it a second time."""

    halting = False

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


if __name__ == "__main__":
    base.Arbiter = Master  # the one arbiter gunicorn's application starts, in this process only
    run(prog="gunicorn")
