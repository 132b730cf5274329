"""Bubblewrap sandboxes for the solution and the reference, and freezing one from outside.

A sandbox is a fresh mount, PID, network, IPC, UTS and cgroup namespace (`--unshare-all`) with
every capability dropped. Only what Python needs is mounted, read-only: /usr and /etc, the
interpreter's install, the virtual environment and the harness's source tree. /tmp is a private
empty tmpfs; the case's scratch folder (solution) or the pristine problem copy (reference,
read-only) is bound inside it. Nothing else of the host is visible: not the problem folder the
user gave, not the store, not other users' files. The PID namespace makes every process the
solution starts (double-forked daemons included) die with the sandbox, and hides every process
outside it. GPU device nodes are bound only for a CUDA run.

`available()` says whether bubblewrap works here and, if not, why; the runner then runs without
a sandbox and the evaluation is recorded as reproducible, not verified.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import kernelindex

SRC_ROOT = str(Path(kernelindex.__file__).resolve().parents[1])
BWRAP = shutil.which("bwrap") or "/usr/bin/bwrap"
SCRATCH = "/tmp/scratch"  # where the scratch folder (solution) or problem copy (reference) appears inside
_SYSTEM = ("/usr", "/etc", "/opt")
_LINKS = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib", "/lib64": "usr/lib64", "/lib32": "usr/lib32"}


def _python_roots() -> list[str]:
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    roots.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    roots.add(sys.prefix)  # the venv as named (its bin/python is a link into the base install)
    return sorted(r for r in roots if r and r != "/" and not any(r.startswith(s + "/") or r == s for s in _SYSTEM))


def command(
    inner: list[str],
    *,
    bind_rw: str | None = None,
    bind_ro: str | None = None,
    cuda: bool = False,
    info_fd: int | None = None,
) -> list[str]:
    """The bwrap command line that runs `inner` sandboxed, with `bind_rw` or `bind_ro` at SCRATCH."""
    args = [BWRAP, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for path in _SYSTEM:
        if os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for link, target in _LINKS.items():
        if os.path.islink(link):
            args += ["--symlink", target, link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    for root in [*_python_roots(), SRC_ROOT]:
        args += ["--ro-bind", root, root]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if cuda:
        for node in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*")):
            args += ["--dev-bind", node, node]
        for path in ("/sys", "/proc/driver/nvidia"):
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
    if bind_rw:
        args += ["--bind", bind_rw, SCRATCH]
    if bind_ro:
        args += ["--ro-bind", bind_ro, SCRATCH]
    args += ["--remount-ro", "/", "--chdir", SCRATCH if (bind_rw or bind_ro) else "/tmp"]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    return args + ["--", *inner]


@functools.lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """(True, "") when a sandboxed Python starts here; (False, why) otherwise. Probed once."""
    if os.environ.get("KERNELINDEX_HARNESS_SANDBOX") == "0":
        return False, "sandbox switched off by KERNELINDEX_HARNESS_SANDBOX=0"
    if not os.path.exists(BWRAP):
        return False, "bubblewrap (bwrap) is not installed"
    try:
        probe = subprocess.run(
            command([sys.executable, "-I", "-B", "-c", "print('ok')"]), capture_output=True, timeout=60, text=True
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap did not start: {exc}"
    if probe.returncode != 0 or probe.stdout.strip() != "ok":
        return False, f"bubblewrap cannot make a sandbox here: {(probe.stderr or probe.stdout).strip()[:300]}"
    return True, ""


def read_info(fd: int, timeout_s: float = 30.0) -> dict:
    """bwrap's --info-fd JSON (child-pid and namespace ids)."""
    data, deadline = b"", time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
            try:
                return json.loads(data)
            except json.JSONDecodeError:
                continue
    raise OSError(f"bubblewrap gave no sandbox information ({data[:200]!r})")


@dataclass
class Members:
    """The processes of one sandbox: every process in its PID namespace (or, without a sandbox,
    the worker's process group)."""

    namespace: str | None  # "pid:[inode]" of the sandbox
    group: int | None  # process group id when there is no sandbox

    def pids(self) -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            pid = int(entry)
            try:
                if self.namespace is not None:
                    if os.readlink(f"/proc/{pid}/ns/pid") == self.namespace:
                        found.append(pid)
                elif os.getpgid(pid) == self.group:
                    found.append(pid)
            except OSError:
                continue
        return found

    def rss_bytes(self) -> int:
        total = 0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                continue
        return total

    def run_delay_ns(self) -> int:
        """Nanoseconds the members' threads have spent runnable but waiting for a CPU (the kernel's
        schedstat run delay): time taken from them by other load, which no member can fake."""
        total = 0
        for pid in self.pids():
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tasks:
                try:
                    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                        total += int(f.read().split()[1])
                except (OSError, ValueError, IndexError):
                    continue
        return total

    def freeze(self, timeout_s: float = 5.0) -> bool:
        """SIGSTOP every member until a scan finds none running (a member may fork meanwhile);
        False if some member still runs after `timeout_s`."""
        deadline, pause = time.monotonic() + timeout_s, 0.0005
        while True:
            running = [pid for pid in self.pids() if _state(pid) not in ("T", "t", "Z", "X", None)]
            if not running:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in running:
                _signal(pid, signal.SIGSTOP)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def thaw(self) -> None:
        for pid in self.pids():
            _signal(pid, signal.SIGCONT)

    def kill(self) -> None:
        for _ in range(5):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                _signal(pid, signal.SIGKILL)
            time.sleep(0.01)


def own_run_delay_ns() -> int:
    """The calling thread's run delay: how long the parent itself waited for a CPU (for example to
    wake up when a reply arrived), which is no side's doing either."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def namespace_of(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/pid")
