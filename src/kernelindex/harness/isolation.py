"""Parent side of a worker process: start it fenced off, talk to it, and end it on time.

A worker gets its own session (so a kill takes every process it started), an address-space
limit on CPU runs, a resident-memory watch on every run, a deadline, and two private pipes.
Whatever happens inside (a crash, a hang, a sticky device error) ends as an exception here
that the runner turns into that case's status; the next case gets a fresh process.
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import kernelindex
from kernelindex.harness import forkserver

SRC_ROOT = str(Path(kernelindex.__file__).resolve().parents[1])
BOOT = f"import sys; sys.path.insert(0, {SRC_ROOT!r}); from kernelindex.harness.worker import main; main()"
POLL_S = 0.05
# Workers are forked from a warm, clean server process (see forkserver.py); set
# KERNELINDEX_HARNESS_SPAWN=1 to start each one as a fresh interpreter instead.
SPAWN_VARIABLE = "KERNELINDEX_HARNESS_SPAWN"


class WorkerError(Exception):
    def __init__(self, status: str, log: str):
        super().__init__(log)
        self.status, self.log = status, log


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Worker:
    def __init__(self, role: str, cwd: Path, log_path: Path, memory_limit_bytes: int | None, device: str, env: dict | None = None):
        self.role, self.log_path, self.memory_limit = role, log_path, memory_limit_bytes
        request_r, self._request_w = os.pipe()
        self._reply_r, reply_w = os.pipe()
        environment = {k: v for k, v in (env or os.environ).items() if not k.startswith("PYTHON")}
        if device == "cpu":
            environment["TRITON_INTERPRET"] = "1"
        limit = memory_limit_bytes if device == "cpu" else None  # CUDA maps far more address space than it uses

        def fence():
            if limit:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        self._log = open(log_path, "ab")
        server = forkserver.server(BOOT) if os.environ.get(SPAWN_VARIABLE) != "1" else None
        if server is not None:
            self.proc = server.spawn(role, str(cwd), environment, limit, request_r, reply_w, self._log.fileno())
        else:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", BOOT, role, str(request_r), str(reply_w)],
                cwd=cwd, env=environment, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                pass_fds=(request_r, reply_w), start_new_session=True, preexec_fn=fence,
            )
        os.close(request_r)
        os.close(reply_w)
        self._buffer = b""
        self._token = secrets.token_hex(16)

    def request(self, message: dict, deadline: float) -> dict:
        """Send one request and wait for its reply, which must carry this worker's token."""
        try:
            os.write(self._request_w, (json.dumps({**message, "token": self._token}) + "\n").encode())
        except BrokenPipeError:
            pass  # the reply loop below reports how the process ended
        while b"\n" not in self._buffer:
            now = time.monotonic()
            if now >= deadline:
                self.kill()
                raise WorkerError("TIMEOUT", f"{self.role} process passed its time limit during {message['op']!r}")
            ready, _, _ = select.select([self._reply_r], [], [], min(POLL_S, deadline - now))
            if self.memory_limit and _rss_bytes(self.proc.pid) > self.memory_limit:
                self.kill()
                raise WorkerError("RUNTIME_ERROR", f"{self.role} process exceeded the memory limit of {self.memory_limit >> 20} MiB")
            if ready:
                chunk = os.read(self._reply_r, 1 << 16)
                if not chunk:
                    code = self.proc.wait()
                    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
                    raise WorkerError("RUNTIME_ERROR", f"{self.role} process ended ({how}) during {message['op']!r}")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            reply = None
        if not isinstance(reply, dict) or reply.pop("token", None) != self._token:
            self.kill()
            raise WorkerError("REWARD_HACK", f"a reply on the {self.role} process's control pipe was forged during {message['op']!r}")
        return reply

    def leftover(self, grace_s: float = 5.0) -> bool:
        """After the last request: does anything beyond the expected replies arrive before EOF?

        Closing the request pipe ends a worker; a solution that wrote its own reply lines ahead
        of the real ones leaves the real ones unread here.
        """
        os.close(self._request_w)
        self._request_w = -1
        data, deadline = self._buffer, time.monotonic() + grace_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self._reply_r], [], [], POLL_S)
            if ready:
                chunk = os.read(self._reply_r, 1 << 16)
                if not chunk:
                    break
                data += chunk
        return bool(data.strip())

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def close(self, grace_s: float = 5.0) -> None:
        """End the process: EOF on its request pipe, then a kill of its whole group."""
        for fd in (self._request_w, self._reply_r):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        try:
            self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        self._log.close()

    def log_tail(self, limit: int = 8000) -> str:
        try:
            data = Path(self.log_path).read_bytes()
        except OSError:
            return ""
        return data[-limit:].decode("utf-8", "replace")
