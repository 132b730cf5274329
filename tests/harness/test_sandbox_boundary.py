"""The sandbox boundary, one hostile program per attack that worked against the /proc-walking sandbox.

Each runs in a real sandbox (bwrap as the unprivileged uid, seccomp filter, its own cgroup) and the
test checks that the kernel now stops it: frozen means every task is frozen, counted means the
cgroup's charge, killed means the group is empty.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import secrets
import stat
import time
from pathlib import Path

import pytest
from sandbox_testkit import Boxed, alive, gone_within, need_sandbox

from kernelindex.harness import cgroups, sandbox

pytestmark = [pytest.mark.xdist_group("sandbox")]

MIB = 1 << 20


@pytest.fixture(autouse=True)
def _sandbox_here():
    need_sandbox()


def _assert_still(box: Boxed, n: int, reads: int = 20) -> list[int]:
    """The counters read the same `reads` times over ~0.2 s (the program would move them every few µs)."""
    first = box.counters(n)
    for _ in range(reads):
        os.sched_yield()
        assert box.counters(n) == first, "a frozen sandbox made progress"
        time.sleep(0.01)
    return first


BUSY = """
import os, threading
def count(offset):
    n = 0
    while True:
        n += 1
        os.pwrite(COUNTER, n.to_bytes(8, "little"), offset)
"""


def test_a_process_whose_leader_thread_exited_is_frozen_counted_and_killed():
    # the leader thread ends with SYS_exit (only that thread); the process reads as a zombie in
    # /proc/PID/stat while its second thread computes on
    code = (
        BUSY
        + """
import ctypes, sys
threading.Thread(target=count, args=(0,)).start()
print(os.getpid(), flush=True)
ctypes.CDLL(None).syscall(60 if os.uname().machine == "x86_64" else 93, 0)
"""
    )
    with Boxed(code, counter=True) as box:
        box.line()
        box.wait_counting()
        deadline = time.monotonic() + 30
        while not any(
            not alive(pid) for pid in box.group.pids()
        ):  # the leader reads as a zombie: /proc walking skipped it
            assert time.monotonic() < deadline, "the leader thread did not exit"
            time.sleep(0.01)
        pids = box.group.pids()
        assert box.group.freeze()
        _assert_still(box, 1)
        box.group.thaw()
        box.wait_counting()  # it was alive all along
        assert box.group.kill()
        assert box.group.pids() == [] and box.group.tids() == []
        assert gone_within(pids) == []


def test_a_nested_user_or_pid_namespace_is_denied():
    code = """
import ctypes, json, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
out = {}
r = libc.unshare(0x10000000 | 0x20000000)  # CLONE_NEWUSER | CLONE_NEWPID
out["unshare"] = ctypes.get_errno() if r == -1 else "allowed"
r = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWUSER | SIGCHLD)
out["clone_newuser"] = ctypes.get_errno() if r == -1 else ("allowed" if r else os._exit(0))
r = subprocess.run(["unshare", "-Urp", "--fork", "true"], capture_output=True)
out["unshare_cmd"] = r.returncode
print(json.dumps(out), flush=True)
"""
    with Boxed(code) as box:
        out = box.json()
    assert out["unshare"] == errno.EPERM
    assert out["clone_newuser"] == errno.EPERM
    assert out["unshare_cmd"] != 0


def test_a_process_in_a_nested_namespace_attempt_is_still_a_member():
    # whatever the program tries, its children are in the cgroup: a double-forked daemon in its own
    # session is frozen and counted with the rest
    code = (
        BUSY
        + """
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import ctypes
        ctypes.CDLL(None).unshare(0x20000000)  # CLONE_NEWPID (denied; were it not, still in the group)
        count(8)
    os._exit(0)
count(0)
"""
    )
    with Boxed(code, counter=True) as box:
        box.wait_counting(2)
        assert len(box.group.pids()) >= 2
        assert box.group.freeze()
        _assert_still(box, 2)
        box.group.thaw()
        box.wait_counting(2)


def test_tmpfs_pages_are_counted_in_the_sandbox_memory():
    code = """
import time
with open("/tmp/big", "wb") as f:
    for _ in range(96):
        f.write(b"x" * (1 << 20))
print("written", flush=True)
while True:
    time.sleep(1)
"""
    with Boxed(code, memory_limit_bytes=512 * MIB) as box:
        assert box.line() == "written"
        assert box.box.members.memory_bytes() >= 96 * MIB
        assert box.box.members.peak_memory_bytes() >= 96 * MIB


def test_the_memory_limit_is_the_kernels_and_covers_tmpfs():
    code = """
import sys
try:
    with open("/tmp/big", "wb") as f:
        for i in range(400):
            f.write(b"x" * (1 << 20))
            f.flush()
    print("wrote all", flush=True)
except OSError as exc:
    print("write failed", exc.errno, flush=True)
"""
    with Boxed(code, memory_limit_bytes=160 * MIB) as box:
        out = box.output()
        assert "wrote all" not in out
        assert box.group.oom_kills() > 0 or "write failed" in out
        assert box.group.peak_memory_bytes() <= 160 * MIB


def test_host_secrets_are_not_visible(tmp_path):
    planted_home = Path.home() / f".kernelindex-planted-{secrets.token_hex(4)}"
    secret_dir = tmp_path / "bound"
    secret_dir.mkdir()
    secret_dir.chmod(0o755)
    root_only = secret_dir / "root-only"
    root_only.write_text("secret")
    root_only.chmod(0o600)
    planted_home.write_text("home secret")
    try:
        code = f"""
import json, os
out = {{"uid": os.getuid(), "gid": os.getgid(), "etc": sorted(os.listdir("/etc"))}}
for path in ["/etc/shadow", "/opt", {str(Path.home())!r}, {str(planted_home)!r}, "/root/.bash_history"]:
    out[path] = os.path.exists(path)
try:
    open({str(root_only)!r}).read()
    out["root_only"] = "read"
except OSError as exc:
    out["root_only"] = exc.errno
out["owner"] = os.stat({str(root_only)!r}).st_uid
print(json.dumps(out), flush=True)
"""
        with Boxed(code, extra_ro=[str(secret_dir)]) as box:
            out = box.json()
    finally:
        planted_home.unlink()
    assert out["uid"] == sandbox.SANDBOX_UID != 0 and out["gid"] == sandbox.SANDBOX_GID
    assert out["/etc/shadow"] is False and "shadow" not in out["etc"] and "gshadow" not in out["etc"]
    assert set(out["etc"]) <= set(sandbox._ETC) | {"passwd", "group"}
    assert out["/opt"] is False and out[str(planted_home)] is False
    assert out["root_only"] == errno.EACCES  # a host root file is not the sandbox's, whatever it reads as
    assert stat.S_IMODE(root_only.stat().st_mode) == 0o600


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the syscall numbers below are x86_64's")
def test_dangerous_system_calls_fail_with_eperm():
    calls = {
        "keyctl": (250, 0, -3, 0),  # KEYCTL_GET_KEYRING_ID of the session keyring
        "add_key": (248, 0, 0, 0, 0, -3),
        "request_key": (249, 0, 0, 0, 0),
        "ptrace": (101, 0, 0, 0, 0),  # PTRACE_TRACEME
        "process_vm_readv": (310, 1, 0, 0, 0, 0, 0),
        "mount": (165, 0, 0, 0, 0, 0),
        "umount2": (166, 0, 0),
        "pivot_root": (155, 0, 0),
        "unshare": (272, 0x00020000),
        "setns": (308, 0, 0),
        "bpf": (321, 0, 0, 0),
        "perf_event_open": (298, 0, 0, -1, -1, 0),
        "init_module": (175, 0, 0, 0),
        "open_by_handle_at": (304, 0, 0, 0),
        "userfaultfd": (323, 0),
    }
    code = f"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
out = {{}}
for name, args in {calls!r}.items():
    ctypes.set_errno(0)
    r = libc.syscall(*[ctypes.c_long(a) for a in args])
    out[name] = ctypes.get_errno() if r == -1 else "returned %d" % r
print(json.dumps(out), flush=True)
"""
    with Boxed(code) as box:
        out = box.json()
    assert out == {name: errno.EPERM for name in calls}


def test_an_inherited_session_keyring_token_cannot_be_read():
    libc = ctypes.CDLL(None, use_errno=True)
    token = secrets.token_hex(8).encode()
    description = f"kernelindex-test-{secrets.token_hex(4)}".encode()
    # a session keyring of the test's own, with a token in it, as an earlier evaluation might leave
    assert libc.syscall(250, 1, description) > 0  # KEYCTL_JOIN_SESSION_KEYRING
    key = libc.syscall(248, b"user", description, token, len(token), -3)  # add_key to the session keyring
    assert key > 0, os.strerror(ctypes.get_errno())
    try:
        buffer = ctypes.create_string_buffer(64)
        assert libc.syscall(250, 11, key, buffer, 64) == len(token) and buffer.raw[: len(token)] == token
        code = f"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
buffer = ctypes.create_string_buffer(64)
r = libc.syscall(250, 11, {key}, buffer, 64)  # KEYCTL_READ of the parent's key
out = {{"read": ctypes.get_errno() if r < 0 else buffer.raw[:r].decode()}}
r = libc.syscall(249, b"user", {description!r}, None, 0)  # request_key by description
out["request"] = ctypes.get_errno() if r < 0 else r
print(json.dumps(out), flush=True)
"""
        with Boxed(code) as box:
            out = box.json()
    finally:
        libc.syscall(250, 3, key)  # KEYCTL_REVOKE
    assert out == {"read": errno.EPERM, "request": errno.EPERM}


def test_a_fork_bomb_is_stopped_by_the_pids_limit():
    code = """
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(600)
            os._exit(0)
        children += 1
except OSError as exc:
    print(children, exc.errno, flush=True)
time.sleep(600)
"""
    with Boxed(code, pids_max=32) as box:
        children, code_ = map(int, box.line().split())
        assert children < 32 and code_ == errno.EAGAIN
        members = box.group.pids()
        assert len(members) <= 32
        assert box.group.kill()
        assert box.group.pids() == [] and gone_within(members) == []


def test_processes_are_pinned_to_the_given_cpus():
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one CPU here: nothing to pin to")
    code = """
import os
line = [l for l in open("/proc/self/status") if l.startswith("Cpus_allowed_list")][0].split()[1]
try:
    os.sched_setaffinity(0, set(range(os.cpu_count())))
except OSError:
    pass
print(line, sorted(os.sched_getaffinity(0)), flush=True)
if os.fork() == 0:
    print("child", sorted(os.sched_getaffinity(0)), flush=True)
"""
    with Boxed(code, cpus=[allowed[-1]]) as box:
        listed, after = box.line().split(" ", 1)
        child = box.line()
    assert listed == str(allowed[-1])
    assert after == str([allowed[-1]])  # asking for every CPU gives none more
    assert child == f"child {[allowed[-1]]}"


def test_a_frozen_sandbox_makes_no_progress_in_any_process():
    code = (
        BUSY
        + """
for offset in (8, 16):
    if os.fork() == 0:
        count(offset)
threading.Thread(target=count, args=(24,), daemon=True).start()
count(0)
"""
    )
    with Boxed(code, counter=True) as box:
        box.wait_counting(4)
        for _ in range(3):
            assert box.group.freeze()
            _assert_still(box, 4, reads=5)
            box.group.thaw()
            box.wait_counting(4)


def test_kill_by_cgroup_leaves_no_process():
    code = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(600)
        os._exit(0)
print("ready", flush=True)
time.sleep(600)
"""
    with Boxed(code) as box:
        assert box.line() == "ready"
        members = box.group.pids()
        assert len(members) >= 5  # bwrap, its init, the program and three daemons
        assert box.group.freeze()  # killing works on a frozen group too
        assert box.group.kill()
        assert box.group.pids() == [] and box.group.tids() == []
        assert gone_within(members) == []
        dirs = list(box.group.dirs.values())
    assert not any(path.exists() for path in dirs)  # close removed the group


def test_the_scratch_folder_is_a_bounded_copy(tmp_path):
    folder = tmp_path / "scratch"
    folder.mkdir(mode=0o700)
    (folder / "given.txt").write_text("given")
    (folder / "given.txt").chmod(0o400)  # the harness's read-only copy: only root may read it on the host
    code = """
import os
print(open("given.txt").read(), flush=True)
with open("new.txt", "w") as f:
    f.write("made inside")
try:
    with open("/tmp/scratch/huge", "wb") as f:
        while True:
            f.write(b"x" * (1 << 20))
except OSError as exc:
    print("full", exc.errno, flush=True)
"""
    old = sandbox.SCRATCH_SPARE_BYTES
    sandbox.SCRATCH_SPARE_BYTES = 8 * MIB
    try:
        with Boxed(code, folder=folder, memory_limit_bytes=512 * MIB) as box:
            assert box.line() == "given"
            assert box.line() == f"full {errno.ENOSPC}"
    finally:
        sandbox.SCRATCH_SPARE_BYTES = old
    assert sorted(p.name for p in folder.iterdir()) == ["given.txt"]  # nothing written reached the host


def test_a_read_only_folder_stays_read_only(tmp_path):
    folder = tmp_path / "problem"
    folder.mkdir()
    (folder / "definition.json").write_text("{}")
    code = """
try:
    open("definition.json", "w").write("changed")
    print("written", flush=True)
except OSError as exc:
    print(open("definition.json").read(), exc.errno, flush=True)
"""
    with Boxed(code, folder=folder, writable=False) as box:
        assert box.line() == f"{{}} {errno.EROFS}"


def test_groups_of_a_dead_harness_are_removed():
    where = cgroups.hierarchy()
    name = f"{cgroups._pid_namespace()}.{2**22 + 12345}.1.0"  # a pid no process has here
    dirs = {key: parent / name for key, parent in where.parents.items()}
    for path in dirs.values():
        path.mkdir()
    live = cgroups.Group.create()  # ours: its owner lives
    try:
        cgroups.reap_stale(where)  # (under xdist another worker's harness may be the one that reaps it)
        assert not any(path.exists() for path in dirs.values())
        assert all(path.exists() for path in live.dirs.values())
    finally:
        live.remove()


def test_without_a_cgroup_the_sandbox_is_unavailable_and_says_why(monkeypatch):
    monkeypatch.setattr(cgroups, "_found", None)
    monkeypatch.setattr(cgroups, "_mounts", lambda: [])  # no hierarchy mounted at all
    usable, why = sandbox.available.__wrapped__()
    assert usable is False
    assert why == "no cgroup for the sandbox: no cgroup v1 freezer, memory, pids hierarchy is mounted"


def test_a_folder_of_many_files_is_copied_whole(tmp_path):
    """More files than the usual soft descriptor limit (1024): all are open while bwrap copies them;
    a folder past MAX_FOLDER_ENTRIES is refused, saying why."""
    folder = tmp_path / "many"
    folder.mkdir()
    count = 2000
    for i in range(count):
        (folder / f"f{i}.txt").write_text(str(i))
    code = "import os; print(len(os.listdir('.')), open('f7.txt').read(), flush=True)"
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < count + 256:  # then it is refused, saying why
        with pytest.raises(OSError, match="2000 files, more than can be open at once"):
            Boxed(code, folder=folder, writable=False)
        return
    with Boxed(code, folder=folder, writable=False) as box:
        assert box.line() == f"{count} 7"
    (folder / "sub").mkdir()
    for i in range(sandbox.MAX_FOLDER_ENTRIES - count):
        (folder / "sub" / f"g{i}").write_text("")
    with pytest.raises(OSError, match=f"has {sandbox.MAX_FOLDER_ENTRIES + 1} entries"):
        Boxed(code, folder=folder)
