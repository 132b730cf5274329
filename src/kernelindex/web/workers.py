"""The process that starts and watches `kernelindex serve`'s worker processes.

`kernelindex serve` migrates the store, then replaces itself with this module (``exec``), so the
supervisor that stays resident holds only uvicorn, not the CLI, Alembic and the store code.

    python -m kernelindex.web.workers HOST PORT WORKERS   (the store: $KERNELINDEX_DATABASE_URL)
"""

from __future__ import annotations

import socket
import sys

APP = "kernelindex.web.app:serving_app"


def supervise(host: str, port: int, workers: int) -> None:
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(APP, factory=True, host=host, port=port, workers=workers, log_level="warning")
    sock = config.bind_socket()
    # uvicorn binds this socket without naming the TCP protocol, so the workers' event loops leave
    # Nagle's algorithm on for the connections they accept, and every reply written in two parts
    # (headers, body) waits for the client's delayed ACK: ~40 ms each. Accepted connections
    # inherit TCP_NODELAY from the listening socket.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    Multiprocess(config, sockets=[sock]).run()


if __name__ == "__main__":
    supervise(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
