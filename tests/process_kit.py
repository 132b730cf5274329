"""The process table as /proc shows it, for tests and benchmarks that watch a server's workers, a free
loopback port to start a server on, and whether a server there answers yet."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path


def free_port() -> int:
    """A loopback port nothing listens on now (the OS picks it; a server started next takes it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(port: int) -> bool:
    """Whether a kernelindex server on this loopback port answers an API listing with 200 (not yet, or no
    longer: False)."""
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/v1/sources", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def parents() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every process that is still there when read."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:  # gone since the listing
                continue
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            found[int(entry)] = (int(ppid), state)
    return found


def living_children(pid: int) -> set[int]:
    """The direct children of ``pid`` that have not exited (zombies left out)."""
    return {child for child, (ppid, state) in parents().items() if ppid == pid and state != "Z"}


def process_tree(root: int) -> list[int]:
    """``root`` and all its descendants."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in parents().items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def wait_for(condition, what: str, seconds: float = 60) -> None:
    """Until ``condition()`` holds, looking every 0.1 s; fails naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
