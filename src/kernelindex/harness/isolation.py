"""Parent side of a child process: start it (sandboxed when possible), talk to it, freeze it,
and end it with everything it started.

A child gets a private request pipe and reply pipe, its arena's file descriptor, a log, an
address-space limit on CPU runs and a deadline. Sandboxed, it lives in its own cgroup
(sandbox.Sandbox): the kernel freezes it, counts and limits its memory (an OOM kill in the group is
reported as `memory`), caps its processes and pins it to `cpus`; its output reaches the log through
a pipe the parent drains, keeping at most LOG_LIMIT bytes. Without a sandbox (reproducible runs) its
process group is watched from /proc as before. Whatever happens inside ends as a `ChildEnded` with a
kind the runner turns into a verdict; how the child ended is observed here, never taken from what
it says.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from kernelindex.harness import cgroups, forkserver, sandbox, zygote
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
# bytes of a sandboxed child's stdout and stderr kept in its log; the rest is read and dropped
LOG_LIMIT = 8 << 20
_Process = TypeVar("_Process")  # what a start function returns: a Popen or a warm child


class _LogPump(threading.Thread):
    """Copies a sandbox's output pipe to its log, keeping at most `limit` bytes; reads to the end so
    the writers never block, and ends when the last process holding the pipe has ended."""

    def __init__(self, fd: int, log, limit: int = LOG_LIMIT):
        super().__init__(name="kernelindex-log-pump", daemon=True)
        self.fd, self.log, self.limit, self.kept = fd, log, limit, 0
        self.start()

    def run(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                if self.kept >= self.limit:
                    continue
                part = chunk[: self.limit - self.kept]
                self.log.write(part)
                self.kept += len(part)
                if self.kept >= self.limit:
                    self.log.write(f"\n[output cut: more than {self.limit} bytes]\n".encode())
                self.log.flush()
        except (OSError, ValueError):
            pass
        finally:
            os.close(self.fd)


def _start_logged(start: Callable[[int], _Process], undo: Callable[[], object], log) -> tuple[_Process, _LogPump]:
    """Start a sandboxed process whose output goes to a pipe drained into ``log``: ``start(write_end)``
    starts it; where that fails, ``undo()`` removes what was made for it. The parent keeps no write end."""
    log_r, log_w = os.pipe()
    try:
        proc = start(log_w)
    except BaseException:
        os.close(log_r)
        undo()
        raise
    finally:
        os.close(log_w)
    return proc, _LogPump(log_r, log)


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
        self.box: sandbox.Sandbox | None = None
        self.group: cgroups.Group | None = None  # the sandbox's cgroup (a cold sandbox's is its box's)
        self.proc: subprocess.Popen | forkserver.Forked | zygote.WarmChild
        self.members: sandbox.Members | sandbox.ProcessGroup
        self._pump: _LogPump | None = None
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

        def fence_and_pin():
            fence()
            if cpus:
                os.sched_setaffinity(0, cpus)

        inner = [sys.executable, "-I", "-B", "-c", BOOT, "child", role, str(request_r), str(reply_w)]
        server = None if sandboxed or os.environ.get(SPAWN_VARIABLE) == "1" else forkserver.server(BOOT, env)
        warm = zygote.server(BOOT, env, device.startswith("cuda")) if sandboxed else None
        if warm is not None:
            group = self.group = cgroups.Group.create(memory_limit_bytes, sandbox.PIDS_MAX, cpus)
            self.proc, self._pump = _start_logged(
                lambda log_w: warm.spawn(
                    role, folder, writable, env, group, limit, [request_r, reply_w, log_w, *fds[2:]]
                ),
                group.remove,
                self._log,
            )
            self.members = sandbox.Members(group)
        elif sandboxed:
            self.box = box = sandbox.Sandbox(
                inner,
                folder=folder,
                writable=writable,
                cuda=device.startswith("cuda"),
                memory_limit_bytes=memory_limit_bytes,
                cpus=cpus,
            )
            self.proc, self._pump = _start_logged(
                lambda log_w: box.popen(env=env, stdout=log_w, pass_fds=fds, preexec=fence), box.close, self._log
            )
            self.group, self.members = box.group, box.members
        elif server is not None:
            self.proc = server.spawn(role, str(folder), env, limit, request_r, reply_w, self._log.fileno(), arena_fd)
            if cpus:
                os.sched_setaffinity(self.proc.pid, cpus)  # before its first request; its children inherit it
            self.members = sandbox.ProcessGroup(self.proc.pid)
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
                preexec_fn=fence_and_pin,
            )
            self.members = sandbox.ProcessGroup(self.proc.pid)
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
            self._watch_memory()
            if ready:
                chunk = os.read(self._reply_r, 1 << 20)
                if not chunk:
                    code = self.proc.wait()
                    self._watch_memory()  # a process the kernel's OOM killer ended reads as memory, not died
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

    def _watch_memory(self) -> None:
        """Sandboxed, the kernel enforces the limit on the cgroup and this reports its OOM kills;
        without a sandbox, the process group's resident memory is compared with the limit."""
        if self.sandboxed:
            over = self.members.oom_killed()
        else:
            cap = self.memory_limit or 0
            over = cap > 0 and self.members.memory_bytes() > cap
        if over:
            self.kill()
            limit = f" of {self.memory_limit >> 20} MiB" if self.memory_limit else ""
            raise ChildEnded(self.role, "memory", f"{self.role} process exceeded the memory limit{limit}")

    def memory_bytes(self) -> int:
        """Memory the child uses now: its cgroup's charge (tmpfs included) when sandboxed."""
        return self.members.memory_bytes()

    def peak_memory_bytes(self) -> int:
        return self.members.peak_memory_bytes()

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

    def gone(self) -> bool:
        """After `close`: no process of the child is left, as the kernel says (its cgroup is empty or
        removed). Never so without a sandbox, whose process group a process can leave."""
        return self.group is not None and not self.group.populated()

    def thaw(self) -> None:
        self.members.thaw()

    def kill(self) -> None:
        if not self.sandboxed:
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
        if self._pump is not None:
            self._pump.join(timeout=5)
        if self.box is not None:
            self.box.close()
        elif self.group is not None:
            self.group.remove()
        self._log.close()

    def log_tail(self, limit: int = 8000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log_path) - limit))
                data = f.read()
        except OSError:
            return ""
        return data.decode("utf-8", "replace")
