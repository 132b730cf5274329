"""A clean process with torch imported that forks worker processes on request.

Starting Python and importing torch costs about two seconds; a case should not pay that. The
fork server is started once per children's environment (isolated mode, own session, no solution code ever runs in it, no
tensor op ever runs in it, so no thread pool or device context exists to be copied) and forks
one child per worker. Each child starts its own session, takes its limits, working folder,
environment and pipes, and from then on is exactly the worker a fresh interpreter would be,
with its own address space. File descriptors travel over a SOCK_SEQPACKET socket.

No process outlives its parent: the server asks the kernel for SIGKILL when the harness process
ends (PR_SET_PDEATHSIG, checked against the parent it was started by, so a parent that died before
the request is noticed too), and each worker does the same towards the server; a harness killed by
the OOM killer leaves neither a server holding torch nor stopped workers behind. The signal follows
the thread that started the process, so servers are started from one thread that lives as long as
the harness process.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_servers: dict[str, ForkServer] = {}  # by the environment its children get
_starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelindex-forkserver-starter")
PARENT_VARIABLE = "KERNELINDEX_FORKSERVER_PARENT"  # the pid the server must die with
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when its parent ends; end now if it already has."""
    if _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:  # the parent ended before the request: nobody would send the signal
        os._exit(1)


class ForkServer:
    def __init__(self, boot: str, env: dict):
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-B", "-c", boot, "forkserver", str(child.fileno())],
            pass_fds=(child.fileno(),),
            # torch is imported under the children's environment, as in the warm sandbox: OpenMP reads
            # OMP_NUM_THREADS then, and a worker forked later keeps the thread count it read
            env={**env, PARENT_VARIABLE: str(os.getpid())},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        child.close()
        self.sock = parent
        self.lock = threading.Lock()
        self._call({"op": "ping"}, [])  # fails here, not at the first case, if the server cannot start

    def _call(self, message: dict, fds: list[int]) -> dict:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(message).encode()], fds)
            data = self.sock.recv(1 << 16)
        if not data:
            raise OSError("the fork server ended")
        return json.loads(data)

    def spawn(
        self,
        role: str,
        cwd: str,
        env: dict,
        memory_limit: int | None,
        request_r: int,
        reply_w: int,
        log_fd: int,
        arena_fd: int | None = None,
    ) -> Forked:
        fds = [request_r, reply_w, log_fd] + ([arena_fd] if arena_fd is not None else [])
        reply = self._call({"op": "spawn", "role": role, "cwd": cwd, "env": env, "limit": memory_limit}, fds)
        return Forked(self, reply["pid"])

    def status(self, pid: int) -> int | None:
        return self._call({"op": "status", "pid": pid}, [])["code"]


class Forked:
    """The parts of a Popen object the worker handle uses, for a forked child."""

    def __init__(self, server: ForkServer, pid: int):
        self.server, self.pid = server, pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.server.status(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        return code


def starter() -> ThreadPoolExecutor:
    """The one thread that starts long-lived helper processes (it lives as long as the harness, and a
    parent-death signal follows the thread that started the process)."""
    return _starter


def server(boot: str, env: dict) -> ForkServer | None:
    """The fork server for children with environment ``env``, started on first use; None where one
    cannot run (then workers spawn)."""
    key = json.dumps(env, sort_keys=True)
    with _lock:
        running = _servers.get(key)
        if running is None or running.proc.poll() is not None:
            try:
                running = _servers[key] = _starter.submit(ForkServer, boot, env).result()  # its thread never ends
            except OSError:
                _servers.pop(key, None)
                return None
        return running


def serve_requests(fd: int, max_fds: int, child: Callable[[dict, list[int]], None]) -> None:
    """The loop of a process that forks on request (this fork server and the zygote): reap ended
    children keeping each exit status until it is asked for, answer ping and status, and fork on
    spawn. ``child(request, fds)`` runs in the forked process with the socket closed and never
    returns; the parent closes the request's descriptors and answers with the pid."""
    sock = socket.socket(fileno=fd)
    codes: dict[int, int] = {}
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 16, max_fds)
        except ConnectionResetError:
            return
        if not data:
            return
        request = json.loads(data)
        while True:  # reap every child that has ended, keeping its exit status
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            codes[pid] = os.waitstatus_to_exitcode(status)
        if request["op"] == "ping":
            sock.send(b'{"ok": true}')
        elif request["op"] == "status":
            sock.send(json.dumps({"code": codes.pop(request["pid"], None)}).encode())
        elif request["op"] == "spawn":
            pid = os.fork()
            if pid == 0:
                sock.close()
                child(request, fds)
            for extra in fds:
                os.close(extra)
            sock.send(json.dumps({"pid": pid}).encode())


def _worker(request: dict, fds: list[int], server_pid: int, run_worker) -> None:
    """A forked worker: its own session, limits, folder, log and environment, then the worker loop
    (never returns)."""
    code = 1
    try:
        request_r, reply_w, log_fd, *arena = fds
        die_with_parent(server_pid)  # a stopped worker does not outlive the server either
        os.setsid()
        if request["limit"]:
            resource.setrlimit(resource.RLIMIT_AS, (request["limit"], request["limit"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.chdir(request["cwd"])
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        os.environ.clear()
        os.environ.update(request["env"])
        run_worker(request["role"], request_r, reply_w, arena[0] if arena else None)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve(fd: int, run_worker) -> None:
    """The server's loop (runs in the fork server process)."""
    parent = os.environ.pop(PARENT_VARIABLE, None)
    if parent is not None:
        die_with_parent(int(parent))
    server_pid = os.getpid()
    serve_requests(fd, 4, lambda request, fds: _worker(request, fds, server_pid, run_worker))
