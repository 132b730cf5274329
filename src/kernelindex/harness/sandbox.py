"""Bubblewrap sandboxes for the solution and the reference, each in its own kernel control group.

What the kernel enforces for a sandbox (see docs/evidence.md, "What the sandbox does"):

- Membership, freezing, memory and process count are the sandbox's cgroup (cgroups.py): the first
  process joins it before bubblewrap is executed, so every descendant is inside whatever it does.
- The processes run as an unprivileged uid (65534) that owns nothing on the host: a root harness
  drops to it before executing bwrap, so bwrap itself is unprivileged and makes the user namespace,
  and no host file appears owned by the sandbox. No capabilities, no further user namespaces
  (--disable-userns), a seccomp filter (seccomp_filter.py) and a fresh session keyring.
- A fresh mount, PID, network, IPC, UTS and cgroup namespace. Visible, read-only: /usr, the few /etc
  files the dynamic loader and Python read (passwd and group are written for the sandbox), the
  interpreter's install, the virtual environment and the harness's source tree; never /etc/shadow,
  /opt or $HOME. /tmp is a size-bounded tmpfs mounted before those binds, so a checkout or venv under
  /tmp stays visible. The case's folder is copied into a size-bounded tmpfs at SCRATCH (read-only
  for the reference): what the solution writes never reaches the host and is charged to its memory.
- As root, the bind sources are first bound, in a private mount namespace of the starting process,
  into a folder the unprivileged uid can traverse (the interpreter may live under a 0700 /root).

`available()` runs a sandboxed Python through exactly this path (uid, seccomp, cgroup) and says why
not when it fails; the runner then records the evaluation as reproducible, not verified.
"""

from __future__ import annotations

import atexit
import ctypes
import errno
import functools
import glob
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import kernelindex
from kernelindex.harness import cgroups, seccomp_filter

SRC_ROOT = str(Path(kernelindex.__file__).resolve().parents[1])
BWRAP = shutil.which("bwrap") or "/usr/bin/bwrap"
SCRATCH = "/tmp/scratch"  # where the scratch folder (solution) or problem copy (reference) appears inside
SANDBOX_UID = SANDBOX_GID = 65534  # "nobody": owns nothing on the host
PIDS_MAX = 1024  # processes and threads of one sandbox
TMP_BYTES = 1 << 30  # the sandbox's /tmp
SCRATCH_SPARE_BYTES = 1 << 30  # room the solution may write in its scratch folder
MAX_FOLDER_ENTRIES = 2500  # files and folders copied into SCRATCH (bwrap takes at most 9000 arguments)
_SYSTEM = ("/usr",)
_LINKS = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib", "/lib64": "usr/lib64", "/lib32": "usr/lib32"}
# the /etc the dynamic loader, the C library and Python read; nothing with a secret in it
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "localtime", "alternatives", "hosts")
_PASSWD = f"root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nnobody:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:/tmp:/usr/sbin/nologin\n"
_GROUP = f"root:x:0:\nnogroup:x:{SANDBOX_GID}:\n"

_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNS = 0x00020000
_MS_BIND, _MS_REC, _MS_PRIVATE = 0x1000, 0x4000, 0x40000
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
_KEYCTL_JOIN_SESSION_KEYRING = 1


def _python_roots() -> list[str]:
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    roots.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    roots.add(sys.prefix)  # the venv as named (its bin/python is a link into the base install)
    return sorted(r for r in roots if r and r != "/" and not any(r.startswith(s + "/") or r == s for s in _SYSTEM))


def _mount(source: str, target: str, flags: int) -> None:
    if _libc.mount(source.encode() if source else None, target.encode(), None, flags, None) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {source or '(propagation)'} on {target}: {os.strerror(code)}")


_STAGE_PREFIX = "kernelindex-stage-"


@functools.lru_cache(maxsize=1)
def _stage_root() -> str:
    """This process's folder of staging mount points (empty on the host: the mounts are made in the
    starting processes' private mount namespaces), named after its pid and start time so that the
    folders of a harness that died are removed here."""
    base = tempfile.gettempdir()
    for stale in glob.glob(os.path.join(base, _STAGE_PREFIX + "*.*")):
        owner, _, started = os.path.basename(stale).removeprefix(_STAGE_PREFIX).partition(".")
        if owner.isdigit() and cgroups._start_time(int(owner)) != started:
            shutil.rmtree(stale, ignore_errors=True)
    root = os.path.join(base, f"{_STAGE_PREFIX}{os.getpid()}.{cgroups._start_time(os.getpid())}")
    os.makedirs(root, mode=0o755, exist_ok=True)
    os.chmod(root, 0o755)
    atexit.register(shutil.rmtree, root, True)
    return root


def _room_for_descriptors(count: int) -> None:
    """Raise the soft descriptor limit (up to the hard one) when a folder's files must all be open at
    once for bwrap to copy them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    if wanted > soft:
        if hard != resource.RLIM_INFINITY and wanted > hard:
            raise OSError(errno.EMFILE, f"the folder has {count} files, more than can be open at once ({hard})")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def _data_fd(text: str) -> int:
    fd = os.memfd_create("kernelindex-sandbox-file", os.MFD_CLOEXEC)
    os.write(fd, text.encode())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class Sandbox:
    """One sandbox to start: its cgroup, its bwrap command line and the descriptors that go with it.

    `inner` runs with `folder` copied at SCRATCH (writable when `writable`); `memory_limit_bytes`
    (everything the group is charged, tmpfs included), `pids_max` and `cpus` are the kernel's limits.
    `keep_caps` is for the warm sandbox only (zygote.py), which never runs solution code: it keeps
    those capabilities inside its own user namespace and gets no seccomp filter, because it makes
    each child's namespaces; every child then drops them all and loads the filter itself.
    Start it with `popen`; `close` ends every process in it and removes the group.
    """

    def __init__(
        self,
        inner: list[str],
        *,
        folder: str | os.PathLike | None = None,
        writable: bool = False,
        cuda: bool = False,
        memory_limit_bytes: int | None = None,
        cpus: list[int] | None = None,
        pids_max: int | None = PIDS_MAX,
        extra_ro: list[str] | tuple[str, ...] = (),
        keep_caps: tuple[str, ...] = (),
    ):
        self.privileged = os.geteuid() == 0
        self._fds: list[int] = []
        self._stage: str | None = None
        self._staged: list[tuple[str, str]] = []  # (host source, stage folder) bound in the starting process
        self.group = cgroups.Group.create(memory_limit_bytes, pids_max, cpus)
        self.members = Members(self.group)
        self.proc: subprocess.Popen | None = None
        try:
            roots = [*_python_roots(), SRC_ROOT, *extra_ro]
            self.argv = self._command(inner, folder, writable, cuda, roots, keep_caps)
        except BaseException:
            self.close()
            raise

    def _fd(self, fd: int) -> str:
        self._fds.append(fd)
        return str(fd)

    def _bind_source(self, path: str) -> str:
        """Where bwrap finds `path`: the path itself, or (as root) a staged bind the sandbox uid can reach."""
        if not self.privileged:
            return path
        if self._stage is None:
            self._stage = tempfile.mkdtemp(dir=_stage_root())
            os.chmod(self._stage, 0o755)
        target = os.path.join(self._stage, str(len(self._staged)))
        os.mkdir(target, 0o755)
        self._staged.append((path, target))
        return target

    def _command(
        self, inner: list[str], folder, writable: bool, cuda: bool, roots: list[str], keep_caps: tuple[str, ...]
    ) -> list[str]:
        args = [BWRAP, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"]
        args += ["--cap-drop", "ALL"] + [a for cap in keep_caps for a in ("--cap-add", cap)]
        args += ["--size", str(TMP_BYTES), "--tmpfs", "/tmp"]  # before any bind under /tmp
        for path in _SYSTEM:
            if os.path.isdir(path):
                args += ["--ro-bind", path, path]
        for link, target in _LINKS.items():
            if os.path.islink(link):
                args += ["--symlink", target, link]
            elif os.path.isdir(link):
                args += ["--ro-bind", link, link]
        for name in _ETC:
            if os.path.lexists(f"/etc/{name}"):
                args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        args += ["--ro-bind-data", self._fd(_data_fd(_PASSWD)), "/etc/passwd"]
        args += ["--ro-bind-data", self._fd(_data_fd(_GROUP)), "/etc/group"]
        for root in dict.fromkeys(roots):
            args += ["--ro-bind", self._bind_source(root), root]
        args += ["--dev", "/dev", "--proc", "/proc"]
        if cuda:
            for node in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*")):
                args += ["--dev-bind", node, node]
            for path in ("/sys", "/proc/driver/nvidia"):
                if os.path.exists(path):
                    args += ["--ro-bind", path, path]
        if folder is not None:
            args += self._copy_folder(str(folder), writable)
        args += ["--remount-ro", "/", "--chdir", SCRATCH if folder is not None else "/tmp"]
        if not keep_caps:
            args += ["--seccomp", self._fd(seccomp_filter.memfd())]
        return args + ["--", *inner]

    def _copy_folder(self, folder: str, writable: bool) -> list[str]:
        """bwrap arguments that copy `folder` into a size-bounded tmpfs at SCRATCH (the harness opens
        the files, so their host permissions and the path to them do not matter)."""
        entries, total = [], 0
        count = sum(len(files) + len(dirs) for _, dirs, files in os.walk(folder))
        if count > MAX_FOLDER_ENTRIES:
            raise OSError(errno.E2BIG, f"the folder {folder} has {count} entries, more than {MAX_FOLDER_ENTRIES}")
        _room_for_descriptors(count)
        for current, dirs, files in os.walk(folder):
            dirs.sort()
            rel = os.path.relpath(current, folder)
            inside = SCRATCH if rel == "." else f"{SCRATCH}/{rel}"
            if rel != ".":
                entries += ["--dir", inside]
            for name in sorted(files):
                path = os.path.join(current, name)
                if os.path.islink(path):
                    entries += ["--symlink", os.readlink(path), f"{inside}/{name}"]
                    continue
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
                mode = os.fstat(fd)
                total += -(-mode.st_size // 4096) * 4096 + 4096  # whole pages, and room for the entry
                if mode.st_mode & 0o111:
                    entries += ["--perms", "0755"]
                entries += ["--file", self._fd(fd), f"{inside}/{name}"]
        size = total + (SCRATCH_SPARE_BYTES if writable else (1 << 20))
        args = ["--size", str(size), "--tmpfs", SCRATCH, *entries]
        return args if writable else [*args, "--remount-ro", SCRATCH]

    def preexec(self, extra: Callable[[], None] | None = None) -> Callable[[], None]:
        """What runs between fork and the exec of bwrap: join the cgroup, `extra` (limits), stage the
        bind sources, drop to the sandbox uid, take a fresh session keyring."""

        def setup() -> None:
            try:
                self.group.join_self()
                if extra is not None:
                    extra()
                if self.privileged:
                    if _libc.unshare(_CLONE_NEWNS) != 0:
                        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
                    _mount("", "/", _MS_REC | _MS_PRIVATE)  # nothing below propagates to the host
                    for source, target in self._staged:
                        _mount(source, target, _MS_BIND | _MS_REC)
                    os.setgroups([])
                    os.setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID)
                    os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
                if _SYS_KEYCTL is not None:
                    _libc.syscall(_SYS_KEYCTL, _KEYCTL_JOIN_SESSION_KEYRING, None)
            except BaseException as exc:  # said on the log, then exit: the parent sees why, not a bare error
                os.write(2, f"kernelindex sandbox setup failed: {exc!r}\n".encode())
                os._exit(126)

        return setup

    def popen(
        self,
        *,
        env: dict | None,
        stdout: int | None = None,
        stderr: int | None = subprocess.STDOUT,
        pass_fds: tuple[int, ...] | list[int] = (),
        preexec: Callable[[], None] | None = None,
    ) -> subprocess.Popen:
        """Start the sandbox; the caller's `preexec` (limits) runs inside the group, before the uid drop."""
        for fd in self._fds:
            os.set_inheritable(fd, True)
        try:
            self.proc = subprocess.Popen(
                self.argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                pass_fds=(*pass_fds, *self._fds),
                start_new_session=True,
                preexec_fn=self.preexec(preexec),
            )
        finally:
            self._close_fds()
        return self.proc

    def _close_fds(self) -> None:
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds = []

    def close(self) -> None:
        """Kill every process of the sandbox, reap bwrap, remove the group and the staging folder."""
        self._close_fds()
        self.group.remove()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self._stage is not None:
            shutil.rmtree(self._stage, ignore_errors=True)
            self._stage = None


class Members:
    """The processes of one sandbox, as its cgroup lists them."""

    def __init__(self, group: cgroups.Group):
        self.group = group

    def pids(self) -> list[int]:
        return self.group.pids()

    def memory_bytes(self) -> int:
        return self.group.memory_bytes()

    def peak_memory_bytes(self) -> int:
        return self.group.peak_memory_bytes()

    def oom_killed(self) -> bool:
        return self.group.oom_kills() > 0

    def freeze(self, timeout_s: float = 5.0) -> bool:
        return self.group.freeze(timeout_s)

    def thaw(self) -> None:
        self.group.thaw()

    def kill(self) -> None:
        self.group.kill()


class ProcessGroup:
    """Without a sandbox (reproducible runs only): the worker's process group, found by walking /proc.
    A process that leaves the group escapes it; that is why such runs are never verified."""

    def __init__(self, pgid: int):
        self.pgid = pgid
        self._peak = 0

    def pids(self) -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.getpgid(int(entry)) == self.pgid:
                        found.append(int(entry))
                except OSError:
                    continue
        return found

    def memory_bytes(self) -> int:
        total = 0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                continue
        self._peak = max(self._peak, total)
        return total

    def peak_memory_bytes(self) -> int:
        self.memory_bytes()
        return self._peak

    def oom_killed(self) -> bool:
        return False

    def freeze(self, timeout_s: float = 5.0) -> bool:
        """SIGSTOP every member until a scan finds none running; False if one still runs after `timeout_s`."""
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


_PROBE = (
    "import ctypes, os, sys; sys.path.insert(0, {src!r}); import kernelindex.harness; "
    "libc = ctypes.CDLL(None, use_errno=True); "
    "denied = {denied}; "
    "print('ok', os.getuid(), 'keyctl-denied' if denied else 'keyctl-allowed', open('probe.txt').read())"
)


def probe() -> tuple[bool, str]:
    """Run a sandboxed Python with every flag, uid, filter and group a real one gets."""
    folder = tempfile.mkdtemp(prefix="kernelindex-probe-")
    try:
        Path(folder, "probe.txt").write_text("scratch")
        denied = (
            "True"
            if _SYS_KEYCTL is None
            else f"libc.syscall({_SYS_KEYCTL}, 0, -3, 0) == -1 and ctypes.get_errno() == {errno.EPERM}"
        )
        code = _PROBE.format(src=SRC_ROOT, denied=denied)
        box = Sandbox(
            [sys.executable, "-I", "-B", "-c", code], folder=folder, writable=True, memory_limit_bytes=1 << 30
        )
    except (OSError, cgroups.Unavailable) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return False, f"cannot prepare a sandbox: {exc}"
    try:
        proc = box.popen(env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, stdout=subprocess.PIPE)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            return False, "a sandboxed Python did not start within 60 s"
        text = out.decode("utf-8", "replace").strip()
        uid = SANDBOX_UID if box.privileged else os.geteuid()
        expected = f"ok {uid} keyctl-denied scratch"
        if proc.returncode != 0 or text != expected:
            return False, f"bubblewrap cannot make a sandbox here: {text[-300:] or f'exit code {proc.returncode}'}"
        if box.members.peak_memory_bytes() <= 0:
            return False, "the sandbox's memory was not charged to its cgroup"
        return True, ""
    except OSError as exc:
        return False, f"bubblewrap did not start: {exc}"
    finally:
        box.close()
        shutil.rmtree(folder, ignore_errors=True)


@functools.lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """(True, "") when a sandboxed Python starts here with every protection; (False, why) otherwise. Probed once."""
    if os.environ.get("KERNELINDEX_HARNESS_SANDBOX") == "0":
        return False, "sandbox switched off by KERNELINDEX_HARNESS_SANDBOX=0"
    if not os.path.exists(BWRAP):
        return False, "bubblewrap (bwrap) is not installed"
    try:
        cgroups.hierarchy()
    except cgroups.Unavailable as exc:
        return False, f"no cgroup for the sandbox: {exc}"
    reason = seccomp_filter.unavailable_reason()
    if reason:
        return False, reason
    try:
        with open("/proc/sys/user/max_user_namespaces") as f:
            if int(f.read()) <= 0:
                return False, "user namespaces are switched off (user.max_user_namespaces = 0)"
    except (OSError, ValueError):
        pass
    return probe()
