"""One kernel control group per sandbox: membership, freezing, memory, process count, CPUs, killing.

A sandbox's processes are whatever the kernel lists in its group, because a process joins the group
before bubblewrap is executed and every descendant inherits it; nothing it does inside (a thread
leader that exits, a nested user or PID namespace, a double fork) takes a process out. The freezer
stops every task of the group, memory is what the kernel charges to the group (anonymous memory,
page cache and tmpfs/shared-memory pages alike), and the memory, process-count and CPU limits are
the kernel's, not a watch in the parent.

cgroup v2 (a unified hierarchy with the memory and pids controllers) is used where it is mounted and
usable, otherwise cgroup v1 (freezer, memory and pids hierarchies; cpuset when mounted). Groups live
under a `kernelindex` parent group, named `<PID namespace>.<owner pid>.<owner start time>.<n>`, so the groups of
a harness that died (killed by the OOM killer, say) are found, emptied and removed by the next one
that shares its PID namespace (a harness in another namespace cannot tell whether the owner lives).
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

PARENT = "kernelindex"
_V1_NEEDED = ("freezer", "memory", "pids")
_V2_NEEDED = ("memory", "pids")
_counter = itertools.count()
_lock = threading.Lock()


class Unavailable(OSError):
    """No cgroup can be made here; the message names what is missing."""


def _read(path: Path) -> str:
    with open(path) as f:
        return f.read()


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _mounts() -> list[tuple[str, str, list[str]]]:
    found = []
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
                found.append((parts[1].replace("\\040", " "), parts[2], parts[3].split(",")))
    return found


def _own_paths() -> dict[str, str]:
    """The calling process's group in each hierarchy: {controller or "": path}."""
    paths = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name.removeprefix("name=")] = path
    return paths


def _start_time(pid: int) -> str | None:
    try:
        return _read(Path(f"/proc/{pid}/stat")).rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _pid_namespace() -> str:
    return os.readlink("/proc/self/ns/pid").partition("[")[2].rstrip("]")


@dataclass(frozen=True)
class Hierarchy:
    """Where groups are made: v2 (one folder) or v1 (one folder per controller)."""

    version: int
    parents: dict[str, Path]  # v2: {"": parent}; v1: {controller: parent}

    @property
    def cpuset(self) -> bool:
        if self.version == 1:
            return "cpuset" in self.parents
        return "cpuset" in _read(self.parents[""] / "cgroup.subtree_control").split()


def _v2(mount: str) -> Hierarchy:
    root = Path(mount)
    available = _read(root / "cgroup.controllers").split()
    missing = [c for c in _V2_NEEDED if c not in available]
    if missing:
        raise Unavailable(f"cgroup v2 at {root} has no {', '.join(missing)} controller")
    wanted = [c for c in (*_V2_NEEDED, "cpuset") if c in available]
    parent = root / PARENT
    try:
        enabled = _read(root / "cgroup.subtree_control").split()
        if any(c not in enabled for c in _V2_NEEDED):
            _write(root / "cgroup.subtree_control", " ".join(f"+{c}" for c in _V2_NEEDED))
        if "cpuset" in available and "cpuset" not in enabled:
            try:
                _write(root / "cgroup.subtree_control", "+cpuset")
            except OSError:
                wanted.remove("cpuset")  # CPUs are then pinned with sched_setaffinity
        parent.mkdir(exist_ok=True)
        mine = _read(parent / "cgroup.subtree_control").split()
        if any(c not in mine for c in wanted):
            _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
    except OSError as exc:
        raise Unavailable(
            f"cgroup v2 at {root} is not writable here ({exc.strerror}; the harness must run as root)"
        ) from exc
    return Hierarchy(2, {"": parent})


def _v1(mounts: list[tuple[str, str, list[str]]]) -> Hierarchy:
    by_controller = {}
    for mount, kind, options in mounts:
        if kind == "cgroup":
            for name in (*_V1_NEEDED, "cpuset"):
                if name in options:
                    by_controller[name] = Path(mount)
    missing = [c for c in _V1_NEEDED if c not in by_controller]
    if missing:
        raise Unavailable(f"no cgroup v1 {', '.join(missing)} hierarchy is mounted")
    own = _own_paths()
    parents = {}
    for name, folder in by_controller.items():
        base = folder / own.get(name, "/").lstrip("/")  # nested under our own group: its limits hold
        if not base.is_dir():
            base = folder
        parent = base / PARENT
        try:
            parent.mkdir(exist_ok=True)
            if name == "cpuset":
                for setting in ("cpuset.cpus", "cpuset.mems"):
                    if not _read(parent / setting).strip():
                        _write(parent / setting, _read(base / setting).strip())
        except OSError as exc:
            if name == "cpuset":
                continue  # CPUs are then pinned with sched_setaffinity
            raise Unavailable(
                f"cgroup v1 {name} hierarchy at {mount} is not writable here ({exc.strerror}; the harness must run as root)"
            ) from exc
        parents[name] = parent
    return Hierarchy(1, parents)


_found: Hierarchy | None = None


def _forget() -> None:
    global _found
    with _lock:
        _found = None


def hierarchy() -> Hierarchy:
    """The hierarchy groups are made in (found once); Unavailable, naming what is missing, if none."""
    global _found
    with _lock:
        if _found is not None:
            return _found
        mounts = _mounts()
        reasons = []
        v2 = sorted((m for m, kind, _ in mounts if kind == "cgroup2"), key=lambda m: m != "/sys/fs/cgroup")
        for mount in v2:
            try:
                _found = _v2(mount)
                return _found
            except (Unavailable, OSError) as exc:
                reasons.append(str(exc))
        try:
            _found = _v1(mounts)
            return _found
        except Unavailable as exc:
            reasons.append(str(exc))
        raise Unavailable("; ".join(reasons) or "no cgroup hierarchy is mounted")


@dataclass
class Group:
    """One sandbox's group (one folder, or one per v1 controller)."""

    hierarchy: Hierarchy
    dirs: dict[str, Path]
    cpus: list[int] | None = None
    pinned_by_cpuset: bool = False
    _peak: int = field(default=0, repr=False)

    @classmethod
    def create(
        cls,
        memory_limit_bytes: int | None = None,
        pids_max: int | None = None,
        cpus: list[int] | None = None,
        where: Hierarchy | None = None,
    ) -> Group:
        if cpus and not set(cpus) <= os.sched_getaffinity(0):
            raise ValueError(f"CPUs {sorted(set(cpus) - os.sched_getaffinity(0))} are not available to this process")
        for attempt in range(2):
            chosen = where or hierarchy()
            reap_stale(chosen)
            name = f"{_pid_namespace()}.{os.getpid()}.{_start_time(os.getpid())}.{next(_counter)}"
            dirs = {key: parent / name for key, parent in chosen.parents.items()}
            group = cls(chosen, dirs, sorted(set(cpus)) if cpus else None)
            try:
                for path in dirs.values():
                    path.mkdir()
                group._configure(memory_limit_bytes, pids_max)
                return group
            except FileNotFoundError:  # the kernelindex parent group was removed meanwhile: find it again
                group.remove()
                if where is not None or attempt:
                    raise
                _forget()
            except BaseException:
                group.remove()
                raise
        raise AssertionError("unreachable")

    def _dir(self, controller: str) -> Path:
        return self.dirs[""] if self.hierarchy.version == 2 else self.dirs[controller]

    def _configure(self, memory_limit: int | None, pids_max: int | None) -> None:
        memory = self._dir("memory")
        if self.hierarchy.version == 2:
            if memory_limit:
                _write(memory / "memory.max", str(memory_limit))
                if (memory / "memory.swap.max").exists():
                    _write(memory / "memory.swap.max", "0")
                _write(memory / "memory.oom.group", "1")  # an OOM kill ends the whole sandbox
        elif memory_limit:
            _write(memory / "memory.limit_in_bytes", str(memory_limit))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_limit))  # no escape into swap
        if pids_max:
            _write(self._dir("pids") / "pids.max", str(pids_max))
        if self.hierarchy.cpuset:
            cpuset = self._dir("cpuset")
            if self.hierarchy.version == 1:
                _write(cpuset / "cpuset.mems", _read(cpuset.parent / "cpuset.mems").strip())
                cpus = _read(cpuset.parent / "cpuset.cpus").strip()
                _write(cpuset / "cpuset.cpus", ",".join(map(str, self.cpus)) if self.cpus else cpus)
            elif self.cpus:
                _write(cpuset / "cpuset.cpus", ",".join(map(str, self.cpus)))
            self.pinned_by_cpuset = bool(self.cpus)

    # --- joining (runs in the child between fork and exec) ---------------------------------

    def procs_files(self) -> list[str]:
        return [str(path / "cgroup.procs") for path in self.dirs.values()]

    def add(self, pid: int) -> None:
        """Move process `pid` into the group (every process it starts afterwards is born inside), and
        pin it to the group's CPUs where no cpuset controller does."""
        for procs in self.procs_files():
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, str(pid).encode())
            finally:
                os.close(fd)
        if self.cpus and not self.pinned_by_cpuset:
            os.sched_setaffinity(pid, self.cpus)

    def join_self(self) -> None:
        """Move the calling process into the group (runs between fork and exec)."""
        self.add(os.getpid())

    # --- what the kernel says -------------------------------------------------------------

    def _ids(self, filename: str) -> list[int]:
        """Ids listed in `filename` of the group and of any group below it."""
        found: list[int] = []
        top = self._dir("freezer") if self.hierarchy.version == 1 else self.dirs[""]
        for folder, _, _ in os.walk(top):
            try:
                found += [int(x) for x in _read(Path(folder) / filename).split()]
            except (OSError, ValueError):
                continue
        return found

    def pids(self) -> list[int]:
        return self._ids("cgroup.procs")

    def tids(self) -> list[int]:
        return self._ids("tasks" if self.hierarchy.version == 1 else "cgroup.threads")

    def populated(self) -> bool:
        if self.hierarchy.version == 2:
            try:
                return "populated 1" in _read(self.dirs[""] / "cgroup.events")
            except OSError:
                return False
        return bool(self.tids() or self.pids())

    def memory_bytes(self) -> int:
        name = "memory.current" if self.hierarchy.version == 2 else "memory.usage_in_bytes"
        try:
            now = int(_read(self._dir("memory") / name))
        except (OSError, ValueError):
            return 0
        self._peak = max(self._peak, now)
        return now

    def peak_memory_bytes(self) -> int:
        name = "memory.peak" if self.hierarchy.version == 2 else "memory.max_usage_in_bytes"
        try:
            self._peak = max(self._peak, int(_read(self._dir("memory") / name)))
        except (OSError, ValueError):
            self.memory_bytes()
        return self._peak

    def oom_kills(self) -> int:
        """How many processes of the group the kernel's OOM killer ended (the limit was reached)."""
        name = "memory.events" if self.hierarchy.version == 2 else "memory.oom_control"
        try:
            for line in _read(self._dir("memory") / name).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    # --- freezing and ending ----------------------------------------------------------------

    def _frozen(self) -> bool:
        if self.hierarchy.version == 2:
            return "frozen 1" in _read(self.dirs[""] / "cgroup.events")
        return _read(self.dirs["freezer"] / "freezer.state").strip() == "FROZEN"

    def freeze(self, timeout_s: float = 5.0) -> bool:
        """Freeze every task of the group; True once the kernel says all are frozen."""
        try:
            if self.hierarchy.version == 2:
                _write(self.dirs[""] / "cgroup.freeze", "1")
            else:
                _write(self.dirs["freezer"] / "freezer.state", "FROZEN")
        except OSError:
            return False
        deadline, pause = time.monotonic() + timeout_s, 0.0002
        while True:
            try:
                if self._frozen():
                    return True
            except OSError:
                return False
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)  # polling the kernel's state, not waiting for a race to pass
            pause = min(pause * 2, 0.02)

    def thaw(self) -> None:
        try:
            if self.hierarchy.version == 2:
                _write(self.dirs[""] / "cgroup.freeze", "0")
            else:
                _write(self.dirs["freezer"] / "freezer.state", "THAWED")
        except OSError:
            pass

    def kill(self, timeout_s: float = 10.0) -> bool:
        """SIGKILL every process of the group until it is empty; True when it is."""
        deadline = time.monotonic() + timeout_s
        kill_file = self.dirs.get("", Path("/nonexistent")) / "cgroup.kill"
        if self.hierarchy.version == 2 and kill_file.exists():
            try:
                _write(kill_file, "1")
            except OSError:
                pass
        pause = 0.0005
        while self.populated():
            if time.monotonic() > deadline:
                return False
            if not (self.hierarchy.version == 2 and kill_file.exists()):
                self.freeze(timeout_s=0.5)  # nothing forks between the listing and the kill
                for tid in self.tids():
                    try:
                        os.kill(tid, signal.SIGKILL)
                    except OSError:
                        pass
                self.thaw()  # a frozen task dies of SIGKILL only once it runs
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        return True

    def remove(self) -> None:
        """Kill what is left and remove the group's folders."""
        self.thaw()
        self.kill()
        for path in self.dirs.values():
            _rmdir_tree(path)


def _rmdir_tree(path: Path, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    for folder, subdirs, _ in os.walk(path, topdown=False):
        for sub in subdirs:
            _rmdir_tree(Path(folder) / sub, timeout_s)
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return
            time.sleep(0.005)  # the last member's exit is being accounted


def reap_stale(where: Hierarchy) -> list[str]:
    """Empty and remove the groups of harness processes that no longer exist; the names removed."""
    removed: list[str] = []
    first = next(iter(where.parents.values()))
    try:
        names = [p.name for p in first.iterdir() if p.is_dir()]
    except OSError:
        return removed
    namespace = _pid_namespace()
    for name in names:
        parts = name.split(".")
        if len(parts) != 4 or parts[0] != namespace or not parts[1].isdigit():
            continue
        if _start_time(int(parts[1])) == parts[2]:
            continue
        stale = Group(where, {key: parent / name for key, parent in where.parents.items()})
        stale.remove()
        removed.append(name)
    return removed
