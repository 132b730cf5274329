"""Parent side of a child process: start it (sandboxed when possible), talk to it, freeze it,
and end it with everything it started.

A child gets a private request pipe and reply pipe, its arena's file descriptor, a log file,
an address-space limit on CPU runs, a resident-memory watch summed over all of its processes,
and a deadline. Whatever happens inside ends as a `ChildEnded` with a kind the runner turns
into a verdict; how the child ended is observed here, never taken from what it says.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from kernelindex.harness import forkserver, sandbox
from kernelindex.harness.arena import Arena

BOOT = f"import sys; sys.path.insert(0, {sandbox.SRC_ROOT!r}); from kernelindex.harness.child import main; main()"
POLL_S = 0.05
# bytes one control reply may take (a batch's samples or a failure's log is far less): a process that
# sends more without a line end is refused before the parent holds it (a hostile solution shares the
# child's pipe)
MAX_REPLY = 16 << 20
# Without a sandbox, children are forked from a warm, clean server process (see forkserver.py);
# set KERNELINDEX_HARNESS_SPAWN=1 to start each one as a fresh interpreter instead.
SPAWN_VARIABLE = "KERNELINDEX_HARNESS_SPAWN"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


class ChildEnded(Exception):
    """kind: timeout | died | memory | desync (a reply out of turn or more replies than requests)."""

    def __init__(self, role: str, kind: str, detail: str):
        super().__init__(detail)
        self.role, self.kind, self.detail = role, kind, detail


def child_environment(device: str) -> dict:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TRITON_CACHE_DIR": "/tmp/.triton",
        "TORCHINDUCTOR_CACHE_DIR": "/tmp/.inductor",
        "OMP_NUM_THREADS": "1",
    }
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_HOME", "LD_LIBRARY_PATH"):
        if name in os.environ and device != "cpu":
            env[name] = os.environ[name]
    return env


class Child:
    def __init__(
        self,
        role: str,
        folder: Path,
        log_path: Path,
        memory_limit_bytes: int | None,
        device: str,
        arena: Arena,
        sandboxed: bool,
        writable: bool,
        cpus: list[int] | None = None,
    ):
        self.role, self.log_path, self.sandboxed = role, log_path, sandboxed
        self.memory_limit = memory_limit_bytes
        request_r, self._request_w = os.pipe()
        self._reply_r, reply_w = os.pipe()
        limit = memory_limit_bytes if device == "cpu" else None  # CUDA maps far more address space than it uses
        self._log = open(log_path, "ab")
        self._buffer, self._seq = b"", 0
        env = child_environment(device)
        arena_fd = arena.fd if arena.fd >= 0 else None
        fds = [request_r, reply_w] + ([arena_fd] if arena_fd is not None else [])

        def fence():
            if limit:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        inner = [sys.executable, "-I", "-B", "-c", BOOT, "child", role, str(request_r), str(reply_w)]
        server = None if sandboxed or os.environ.get(SPAWN_VARIABLE) == "1" else forkserver.server(BOOT)
        if sandboxed:
            info_r, info_w = os.pipe()
            cmd = sandbox.command(
                inner,
                bind_rw=str(folder) if writable else None,
                bind_ro=None if writable else str(folder),
                cuda=device.startswith("cuda"),
                info_fd=info_w,
            )
            self.proc = subprocess.Popen(
                cmd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                pass_fds=(*fds, info_w),
                start_new_session=True,
                preexec_fn=fence,
            )
            os.close(info_w)
            try:
                info = sandbox.read_info(info_r)
            finally:
                os.close(info_r)
            self.members = sandbox.Members(namespace=sandbox.namespace_of(info["child-pid"]), group=None)
        elif server is not None:
            self.proc = server.spawn(role, str(folder), env, limit, request_r, reply_w, self._log.fileno(), arena_fd)
            self.members = sandbox.Members(namespace=None, group=self.proc.pid)
        else:
            self.proc = subprocess.Popen(
                inner,
                cwd=folder,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                pass_fds=fds,
                start_new_session=True,
                preexec_fn=fence,
            )
            self.members = sandbox.Members(namespace=None, group=self.proc.pid)
        os.close(request_r)
        os.close(reply_w)

    def send(self, message: dict) -> int:
        self._seq += 1
        try:
            os.write(self._request_w, (json.dumps({**message, "seq": self._seq}) + "\n").encode())
        except BrokenPipeError:
            pass  # the reply loop reports how the process ended
        return self._seq

    def receive(self, deadline: float, what: str) -> dict:
        """The reply to the last request sent; it must be the next line and echo that request's number."""
        while b"\n" not in self._buffer:
            now = time.monotonic()
            if now >= deadline:
                self.kill()
                raise ChildEnded(self.role, "timeout", f"{self.role} process passed its time limit during {what}")
            ready, _, _ = select.select([self._reply_r], [], [], min(POLL_S, deadline - now))
            if self.memory_limit and self.members.rss_bytes() > self.memory_limit:
                self.kill()
                raise ChildEnded(
                    self.role,
                    "memory",
                    f"{self.role} process exceeded the memory limit of {self.memory_limit >> 20} MiB",
                )
            if ready:
                chunk = os.read(self._reply_r, 1 << 20)
                if not chunk:
                    code = self.proc.wait()
                    if self.sandboxed and code > 128:  # bwrap exits 128 + N when its child died of signal N
                        code = 128 - code
                    how = f"signal {_signal_name(-code)}" if code < 0 else f"exit code {code}"
                    raise ChildEnded(self.role, "died", f"{self.role} process ended ({how}) during {what}")
                self._buffer += chunk
                if len(self._buffer) > MAX_REPLY and b"\n" not in chunk:  # (the rest was searched before)
                    self.kill()
                    raise ChildEnded(
                        self.role,
                        "desync",
                        f"the {self.role} process sent more than {MAX_REPLY} bytes on its control pipe as one reply"
                        f" during {what}",
                    )
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past Python's stack
            reply = None
        if not isinstance(reply, dict) or reply.get("seq") != self._seq:
            raise ChildEnded(
                self.role, "desync", f"a reply on the {self.role} process's control pipe was out of turn during {what}"
            )
        return reply

    def request(self, message: dict, deadline: float) -> dict:
        self.send(message)
        return self.receive(deadline, repr(message["op"]))

    def pending(self) -> bool:
        """Is there anything on the reply pipe nobody asked for? (Call with the process frozen.)"""
        if self._buffer.strip():
            return True
        ready, _, _ = select.select([self._reply_r], [], [], 0)
        if ready:
            self._buffer += os.read(self._reply_r, 1 << 20)
        return bool(self._buffer.strip())

    def freeze(self) -> bool:
        return self.members.freeze()

    def thaw(self) -> None:
        self.members.thaw()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.members.kill()
        self.proc.wait()

    def close(self) -> None:
        """End the process and every process it started, now."""
        for fd in (self._request_w, self._reply_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.thaw()
        self.kill()
        self._log.close()

    def log_tail(self, limit: int = 8000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log_path) - limit))
                data = f.read()
        except OSError:
            return ""
        return data.decode("utf-8", "replace")
