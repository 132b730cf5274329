"""Helpers of the sandbox tests: run a hostile Python program in a real sandbox (bwrap, cgroup, uid,
seccomp) and read what it printed, or a counter it keeps in a file the test shares with it."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time

import pytest

from kernelindex.harness import cgroups, sandbox

ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}


def need_sandbox():
    """Skip (saying why) only where bwrap or a writable cgroup hierarchy truly is not there."""
    usable, why = sandbox.available()
    if not usable:
        pytest.skip(f"no sandbox here: {why}")


class Boxed:
    """A Python program started in a sandbox; `counter_fd` (a host file the program may write
    8-byte counters to, at offsets 0, 8, ...) is passed as file descriptor COUNTER inside."""

    def __init__(self, code: str, *, counter: bool = False, folder=None, writable=True, **limits):
        self.counter_path = None
        fds = []
        prelude = ""
        if counter:
            fd, self.counter_path = tempfile.mkstemp(prefix="kernelindex-counter-")
            os.ftruncate(fd, 64)
            fds.append(fd)
            prelude = f"COUNTER = {fd}\n"
        self.box = sandbox.Sandbox(
            [sys.executable, "-I", "-B", "-c", prelude + code], folder=folder, writable=writable, **limits
        )
        try:
            self.proc = self.box.popen(env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=fds)
        except BaseException:
            self.box.close()
            raise
        finally:
            for fd in fds:
                os.close(fd)

    @property
    def group(self) -> cgroups.Group:
        return self.box.group

    def line(self, timeout_s: float = 30.0) -> str:
        """The next line the program printed (it must flush)."""
        deadline = time.monotonic() + timeout_s
        poller = select.poll()  # (select() refuses descriptors past 1024)
        poller.register(self.proc.stdout.fileno(), select.POLLIN)
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            assert left > 0, f"no line from the sandboxed program within {timeout_s} s (so far {data!r})"
            if poller.poll(left * 1000):
                byte = os.read(self.proc.stdout.fileno(), 1)
                assert byte, f"the sandboxed program ended before a full line: {data!r}"
                data += byte
        return data.decode().rstrip("\n")

    def json(self, timeout_s: float = 30.0):
        return json.loads(self.line(timeout_s))

    def output(self, timeout_s: float = 60.0) -> str:
        out, _ = self.proc.communicate(timeout=timeout_s)
        return out.decode("utf-8", "replace")

    def counters(self, n: int = 1) -> list[int]:
        with open(self.counter_path, "rb") as f:
            data = f.read(8 * n)
        return [int.from_bytes(data[8 * i : 8 * i + 8], "little") for i in range(n)]

    def wait_counting(self, n: int = 1, timeout_s: float = 30.0) -> list[int]:
        """Poll until every counter has moved; returns the values then."""
        first, deadline = self.counters(n), time.monotonic() + timeout_s
        while True:
            now = self.counters(n)
            if all(b > a for a, b in zip(first, now)):
                return now
            assert time.monotonic() < deadline, f"the counters did not move within {timeout_s} s: {now}"
            time.sleep(0.01)

    def close(self) -> None:
        self.box.close()
        if self.proc.stdout:
            self.proc.stdout.close()
        if self.counter_path:
            os.unlink(self.counter_path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def gone_within(pids, timeout_s: float = 10.0) -> list[int]:
    """Poll until none of `pids` is alive; the ones still alive at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.01)
