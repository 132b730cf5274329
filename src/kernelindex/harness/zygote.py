"""A warm sandbox: Python, torch and the harness imported once inside bubblewrap, one fresh child per
solution and per case, each in a cgroup of its own, under the same boundary as a cold sandbox.

Starting a sandboxed Python with torch costs seconds; a case should not pay that. The zygote is a
bubblewrap sandbox (sandbox.Sandbox, uid 65534, own user, PID, mount, network, IPC and UTS
namespaces, no /etc secrets, no /opt, no $HOME) that keeps only CAP_SYS_ADMIN and CAP_SETPCAP inside
its own user namespace, so that it can give each child fresh namespaces. It never runs solution code
and never holds a secret: it gets no nonce, key or expected output, only spawn requests (a role, the
child's environment, its limits and descriptors it passes on unread). For each request it forks an
intermediate process that waits until the parent has moved it into the child's own cgroup (the
parent finds its host pid through the kernel's NSpid), then unshares mount, PID, IPC, network and
UTS namespaces and forks the worker, PID 1 of its own PID namespace. Before any solution code the
worker mounts a fresh /proc, a fresh size-bounded /tmp (the trees the sandbox binds under /tmp bound
again on top), /dev/shm and the scratch folder (unpacked from the parent's archive, read-only for the
reference), makes every other mount read-only, joins a fresh session keyring, drops every capability
(bounding set included), sets no_new_privs and loads the same seccomp filter a cold sandbox gets. So
nothing one child leaves (files, shared memory, module state, environment, processes: the parent
kills the child's cgroup when it is done) exists for the next one, and the zygote is out of every
child's sight (another PID namespace, no descriptor of it).

`server(boot)` gives the process-wide zygote, started once (None where one cannot start: then each
sandbox is started cold); KERNELINDEX_HARNESS_WARM=0 starts every sandbox cold.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import traceback
from pathlib import Path

from kernelindex.harness import cgroups, forkserver, sandbox

WARM_VARIABLE = "KERNELINDEX_HARNESS_WARM"
SHM_BYTES = 1 << 30  # a child's /dev/shm
_libc = ctypes.CDLL(None, use_errno=True)
_CLONE = {"ns": 0x00020000, "uts": 0x04000000, "ipc": 0x08000000, "pid": 0x20000000, "net": 0x40000000}
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 0x1000, 0x4000, 0x40000
_PR_SET_PDEATHSIG, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP = 1, 24, 38, 22
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, _SECCOMP_MODE_FILTER = 47, 4, 2
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}.get(os.uname().machine)
_CAPS_KEPT = ("CAP_SYS_ADMIN", "CAP_SETPCAP")  # inside the zygote's user namespace only
_lock = threading.Lock()
_servers: dict[str, Zygote] = {}  # by the environment its children get, and whether it sees the GPUs
_failed: dict[str, str] = {}  # why a zygote could not start (then sandboxes start cold); tried once


def pack(folder: Path) -> tuple[int, int]:
    """The folder as a tar archive in a memfd, and the scratch size it needs (its pages and entries)."""
    count = sum(len(files) + len(dirs) for _, dirs, files in os.walk(folder))
    if count > sandbox.MAX_FOLDER_ENTRIES:
        raise OSError(f"the folder {folder} has {count} entries, more than {sandbox.MAX_FOLDER_ENTRIES}")
    fd = os.memfd_create("kernelindex-scratch", os.MFD_CLOEXEC)
    size = 0
    with os.fdopen(os.dup(fd), "wb") as sink, tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for current, dirs, files in os.walk(folder):
            dirs.sort()
            for name in [*sorted(dirs), *sorted(files)]:
                path = os.path.join(current, name)
                info = tar.gettarinfo(path, arcname=os.path.relpath(path, folder))
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                size += -(-info.size // 4096) * 4096 + 4096
                if info.isfile():
                    with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as data:
                        tar.addfile(info, data)
                else:
                    tar.addfile(info)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd, size


class WarmChild:
    """The parts of a Popen object the worker handle uses, for a child of the zygote."""

    def __init__(self, zygote: Zygote, pid: int, host_pid: int):
        self.zygote, self.pid, self.host_pid = zygote, pid, host_pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = self.zygote.status(self.pid)
            except OSError:
                self.returncode = -signal.SIGKILL  # the zygote ended, and its children with it
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0)
            time.sleep(0.005)  # the zygote reaps it as soon as it ends
        return code


class Zygote:
    def __init__(self, boot: str, env: dict, cuda: bool):
        parent, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock, self.lock = parent, threading.Lock()
        self.bpf = sandbox_program()
        roots = [*sandbox._python_roots(), sandbox.SRC_ROOT]
        self.tmp_roots = sorted({r for r in roots if r == "/tmp" or r.startswith("/tmp/")})
        self.box = sandbox.Sandbox(
            [sys.executable, "-I", "-B", "-c", boot, "zygote", str(inside.fileno())],
            cuda=cuda,
            keep_caps=_CAPS_KEPT,
        )
        try:  # torch is imported under the children's environment (OpenMP reads its settings then)
            self.proc = self.box.popen(env=env, stdout=subprocess.DEVNULL, pass_fds=(inside.fileno(),))
        except BaseException:
            self.box.close()
            raise
        finally:
            inside.close()

    def _call(self, message: dict, fds: list[int], timeout_s: float = 120.0) -> dict:
        with self.lock:
            self.sock.settimeout(timeout_s)
            try:
                socket.send_fds(self.sock, [json.dumps(message).encode()], fds)
                data = self.sock.recv(1 << 16)
            except (TimeoutError, OSError) as exc:
                raise OSError(f"the warm sandbox did not answer: {exc}") from None
        if not data:
            raise OSError("the warm sandbox ended")
        return json.loads(data)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def status(self, pid: int) -> int | None:
        return self._call({"op": "status", "pid": pid}, [])["code"]

    def _host_pid(self, pid: int) -> int:
        """The host pid of the zygote's child `pid` (its pid in the zygote's namespace), as the kernel says."""
        for candidate in self.box.group.pids():
            try:
                for line in Path(f"/proc/{candidate}/status").read_text().splitlines():
                    if line.startswith("NSpid:") and line.split()[-1] == str(pid):
                        return candidate
            except OSError:
                continue
        raise OSError(f"the warm sandbox's child {pid} is not in its cgroup")

    def spawn(
        self,
        role: str,
        folder: Path,
        writable: bool,
        env: dict,
        group: cgroups.Group,
        rlimit_as: int | None,
        fds: list[int],
    ) -> WarmChild:
        """Fork a child for `role` with `folder` as its scratch, move it into `group`, let it go.
        `fds`: request pipe, reply pipe, log, and the arena when there is one (passed on unread)."""
        archive, size = pack(folder)
        go_r, go_w = os.pipe()
        try:
            message = {
                "op": "spawn",
                "role": role,
                "env": env,
                "limit": rlimit_as,
                "writable": writable,
                "scratch_bytes": size + (sandbox.SCRATCH_SPARE_BYTES if writable else (1 << 20)),
                "tmp_roots": self.tmp_roots,
                "cpus": None if group.pinned_by_cpuset else group.cpus,
                "seccomp": self.bpf.hex(),
            }
            pid = self._call(message, [go_r, archive, *fds])["pid"]
            child = WarmChild(self, pid, self._host_pid(pid))
            try:
                group.add(child.host_pid)  # before it runs anything: all it starts is born inside
            except OSError:
                os.kill(child.host_pid, signal.SIGKILL)
                raise
            os.write(go_w, b"g")
            return child
        finally:
            for fd in (go_r, go_w, archive):
                os.close(fd)

    def probe(self) -> None:
        """Take one child through every step of the setup (cgroup, namespaces, mounts, capabilities,
        filter); OSError, with what the child said, where a step fails here (then sandboxes start cold
        rather than every case failing)."""
        group = cgroups.Group.create(None, sandbox.PIDS_MAX, None)
        folder = Path(tempfile.mkdtemp(prefix="kernelindex-probe-"))
        request_r, request_w = os.pipe()  # (unused: a probe reads no request)
        reply_r, reply_w = os.pipe()
        log_r, log_w = os.pipe()
        try:
            child = self.spawn(
                "probe", folder, True, {"PATH": "/usr/bin:/bin"}, group, None, [request_r, reply_w, log_w]
            )
            for fd in (request_r, reply_w, log_w):
                os.close(fd)
            request_r = reply_w = log_w = -1
            ready, _, _ = select.select([reply_r], [], [], 60.0)
            if not ready or os.read(reply_r, 16) != b"ok\n":
                child.wait(timeout=10)
                said = os.read(log_r, 4096).decode("utf-8", "replace").strip()
                raise OSError(f"a warm sandbox's child could not be set up here: {said[-600:] or 'no answer'}")
        finally:
            group.remove()
            for fd in (request_r, request_w, reply_r, reply_w, log_r, log_w):
                if fd >= 0:
                    os.close(fd)
            shutil.rmtree(folder, ignore_errors=True)

    def close(self) -> None:
        self.sock.close()
        self.box.close()


def sandbox_program() -> bytes:
    from kernelindex.harness import seccomp_filter

    return seccomp_filter.program()


def server(boot: str, env: dict, cuda: bool) -> Zygote | None:
    """The process-wide zygote for children with environment `env`, started on first use from the
    thread that starts fork servers (a sandbox dies with the thread that started it); None where warm
    sandboxes are off or cannot start."""
    if os.environ.get(WARM_VARIABLE) == "0":
        return None
    key = json.dumps([env, cuda], sort_keys=True)
    with _lock:
        running = _servers.get(key)
        if running is not None and not running.alive():
            _servers.pop(key).close()
            running = None
        if running is None and key not in _failed:
            try:
                running = forkserver.starter().submit(Zygote, boot, env, cuda).result()
            except (OSError, cgroups.Unavailable) as exc:
                _failed[key] = str(exc)
                return None
            try:
                running.probe()
            except (OSError, cgroups.Unavailable, subprocess.TimeoutExpired) as exc:
                running.close()
                _failed[key] = str(exc)
                return None
            _servers[key] = running
        return running


# --- inside the sandbox -----------------------------------------------------------------------


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    def encode(text: str | None) -> bytes | None:
        return text.encode() if text is not None else None

    _check(_libc.mount(encode(source), target.encode(), encode(kind), flags, encode(data)), f"mount {target}")


def _tmpfs(target: str, size: int, mode: str = "1777") -> None:
    os.makedirs(target, exist_ok=True)
    _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={size},mode={mode}")


_FLAGS = {"nosuid": _MS_NOSUID, "nodev": _MS_NODEV, "noexec": _MS_NOEXEC}


def _mount_points() -> list[tuple[str, bool, int]]:
    """(mount point, read-only, its nosuid/nodev/noexec flags) of every mount this process sees."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            options = parts[5].split(",")
            flags = sum(bit for name, bit in _FLAGS.items() if name in options)
            found.append((parts[4].replace("\\040", " "), "ro" in options, flags))
    return found


def _fresh_filesystems(request: dict, archive: int) -> None:
    """The child's own /proc, /tmp (with the trees bound under it), /dev/shm and scratch; all else read-only."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    held = [(root, os.open(root, os.O_PATH | os.O_DIRECTORY)) for root in request["tmp_roots"] if root != "/tmp"]
    _tmpfs("/tmp", sandbox.TMP_BYTES)
    for root, fd in held:
        os.makedirs(root, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", root, None, _MS_BIND | _MS_REC)
        os.close(fd)
    _tmpfs("/dev/shm", SHM_BYTES)
    _tmpfs(sandbox.SCRATCH, request["scratch_bytes"], "0755")
    with os.fdopen(archive, "rb") as data, tarfile.open(fileobj=data, mode="r") as tar:
        tar.extractall(sandbox.SCRATCH, filter="tar")  # the parent's archive of its own copy
    writable = {"/proc", "/tmp", "/dev/shm", "/dev/pts"} | ({sandbox.SCRATCH} if request["writable"] else set())
    for point, read_only, flags in _mount_points():
        if not read_only and point not in writable:
            _mount(None, point, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags)


def _drop_privileges(bpf: bytes) -> None:
    """Every capability gone (bounding and ambient sets too), no_new_privs, the cold sandbox's seccomp filter."""
    if sandbox._SYS_KEYCTL is not None:
        _libc.syscall(sandbox._SYS_KEYCTL, sandbox._KEYCTL_JOIN_SESSION_KEYRING, None)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        _check(_libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    _check(_libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.syscall(_SYS_CAPSET, header, data), "capset")
    status = Path("/proc/self/status").read_text().splitlines()
    held = [line for line in status if line.startswith("Cap") and int(line.split()[1], 16) != 0]
    if held:
        raise OSError(f"capabilities still held: {held}")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    program = ctypes.create_string_buffer(bpf, len(bpf))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Program(len(bpf) // 8, ctypes.addressof(program))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor the zygote had open except `keep` (a fork copies them all)."""
    start = 3
    for fd in sorted(keep | {1 << 20}):
        if fd >= start:
            os.closerange(start, fd)
            start = fd + 1


def _worker(request: dict, fds: list[int], run_worker) -> None:
    """PID 1 of the child's PID namespace: set up, then serve the parent (never returns)."""
    archive, request_r, reply_w, log_fd, *arena = fds
    code = 1
    try:
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        _close_all_but({archive, request_r, reply_w, *arena})
        os.setsid()
        _fresh_filesystems(request, archive)
        os.chdir(sandbox.SCRATCH)
        if request["cpus"]:
            os.sched_setaffinity(0, request["cpus"])
        if request["limit"]:
            resource.setrlimit(resource.RLIMIT_AS, (request["limit"], request["limit"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _drop_privileges(bytes.fromhex(request["seccomp"]))
        os.environ.clear()
        os.environ.update(request["env"])
        if request["role"] == "probe":  # Zygote.probe: every step above worked
            os.write(reply_w, b"ok\n")
        else:
            run_worker(request["role"], request_r, reply_w, arena[0] if arena else None)
        code = 0
    except BaseException:  # said on the log: the parent sees why the child ended
        os.write(2, f"kernelindex warm sandbox failed:\n{traceback.format_exc()}".encode())
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _intermediate(request: dict, fds: list[int], run_worker) -> None:
    """Wait for the parent's go (it has moved this process into the child's cgroup), take fresh
    namespaces, fork the worker into them and end with its status (128 + N for signal N, as bwrap)."""
    code = 1
    try:
        go, *rest = fds
        if os.read(go, 1) != b"g":
            os._exit(1)
        os.close(go)
        flags = _CLONE["ns"] | _CLONE["pid"] | _CLONE["ipc"] | _CLONE["net"] | _CLONE["uts"]
        _check(_libc.unshare(flags), "unshare")
        pid = os.fork()
        if pid == 0:
            _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
            _worker(request, rest, run_worker)
        for fd in rest:
            os.close(fd)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        code = 128 - status if status < 0 else status
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def serve(fd: int, run_worker) -> None:
    """The zygote's loop: fork on request, report exit statuses; it runs nothing else."""
    forkserver.serve_requests(fd, 8, lambda request, fds: _intermediate(request, fds, run_worker))
