"""The worker class of `kernelindex serve --workers N`: uvicorn's, taking one connection per wake-up.

gunicorn's workers share the master's listening socket, and asyncio accepts up to ``backlog``
connections each time that socket wakes a worker's loop: the first worker to wake took all 16
connections a client opened at once (5 bursts of 6 here), so the other one sat idle, throughput at
concurrency 16 swung from one sample to the next and the busy worker's CPU per page rose with the
requests it juggled. Accepting one connection per wake-up lets each idle worker take its turn.
"""

from __future__ import annotations

import os
import socket
import sys

from gunicorn.arbiter import Arbiter
from uvicorn.server import Server
from uvicorn_worker import UvicornWorker


class _Listening(socket.socket):
    """A listening socket as this worker's loop sees it (the shared one, and the worker's own). asyncio
    hands the number of connections to accept per wake-up to ``listen`` as well, so ``listen`` leaves
    the queue as it was set (gunicorn's backlog): at a queue of 1, connections opened at once
    overflowed it, and each one dropped waited a second for its SYN to be sent again."""

    def listen(self, backlog: int = 0) -> None:
        """Listening already (the master did)."""


def own_socket(shared: socket.socket, backlog: int) -> socket.socket:
    """A listening socket of this worker's own on the shared one's address (``SO_REUSEPORT``: the
    kernel spreads new connections evenly over the sockets of that address, whichever worker wakes first).

    Its protocol is named (TCP): asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on
    sockets whose protocol reads as TCP, and a socket made with protocol 0 passes that 0 on to every
    connection it accepts. Those connections then held each reply's last segment until the client's
    delayed acknowledgement came, 40 ms a request: 20 requests a second on a keep-alive connection
    that landed on a worker's own socket, ~150 on one that landed on the shared socket."""
    own = _Listening(shared.family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    own.bind(shared.getsockname())
    socket.socket.listen(own, backlog)  # the one listen that sets its queue (`_Listening`)
    return own


class Worker(UvicornWorker):
    """uvicorn's worker, accepting one connection each time the listening socket wakes it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.config.backlog = 1  # connections accepted per wake-up (see _Listening)

    async def _serve(self) -> None:
        self.config.app = self.wsgi
        server = Server(config=self.config)
        self._install_sigquit_handler()
        shared = [_Listening(fileno=os.dup(s.fileno())) for s in self.sockets]
        await server.serve(sockets=shared + [own_socket(s, self.cfg.backlog) for s in shared])
        if not server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
