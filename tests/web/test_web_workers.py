"""The `serve --workers` master (gunicorn with uvicorn workers, as `serve` runs it): a worker that dies is started again and the site keeps
answering; SIGHUP replaces every worker; SIGTERM stops them all; workers that cannot start
stop the server with gunicorn's status 3."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

from kernelindex.store.database import URL_ENV, open_store
from kernelindex.web.server.workers import FAILED_TO_BOOT, gunicorn_argv
from process_kit import living_children


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(url: str, workers: int) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        gunicorn_argv("127.0.0.1", port, workers),
        env={**os.environ, URL_ENV: url},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, port


def wait_for(condition, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/v1/sources", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def test_workers_are_replaced_and_stopped(tmp_path):
    db = tmp_path / "workers.db"
    open_store(str(db)).close()  # migrated, as `kernelindex serve` leaves it
    count = random.choice([2, 3])
    proc, port = start(f"sqlite:///{db}", count)
    try:
        wait_for(lambda: answers(port) and len(living_children(proc.pid)) == count, "the workers did not start")
        first = living_children(proc.pid)
        victim = random.choice(sorted(first))
        os.kill(victim, signal.SIGKILL)
        wait_for(
            lambda: len(living_children(proc.pid) - first) == 1 and victim not in living_children(proc.pid),
            "no new worker",
        )
        wait_for(lambda: answers(port), "the site stopped answering")

        before = living_children(proc.pid)
        proc.send_signal(signal.SIGHUP)
        wait_for(
            lambda: len(living_children(proc.pid)) == count and not living_children(proc.pid) & before,
            "SIGHUP kept workers",
        )
        wait_for(lambda: answers(port), "no answer after SIGHUP")

        last = living_children(proc.pid)
        proc.terminate()
        assert proc.wait(timeout=30) == 0
        assert not [pid for pid in last if Path(f"/proc/{pid}").exists()]  # each reaped before it exited
        assert not answers(port)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_workers_that_cannot_start_stop_the_server_with_status_3_every_time():
    # Both workers fail at about the same moment; gunicorn's own master, reaping the second while it
    # stops for the first, ended with an uncaught exception (status 1) in about 1 start in 5 here.
    for attempt in range(6):
        proc, _ = start(f"nosuchdialect{random.randrange(10**6)}://nowhere", 2)
        try:
            assert proc.wait(timeout=120) == FAILED_TO_BOOT, f"start {attempt}"
            output = proc.stdout.read()
            assert (
                "NoSuchModuleError" in output
                and 'Traceback (most recent call last):\n  File "<frozen runpy>"' not in output
            )
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
