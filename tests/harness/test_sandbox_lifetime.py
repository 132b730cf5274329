"""No process outlives the harness: the fork server and its workers die with their parent, and a
sandbox dies with it too; a cgroup holds a process in a nested user and PID namespace as well."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from sandbox_testkit import alive, gone_within, need_sandbox

from kernelindex.harness import cgroups

pytestmark = [pytest.mark.xdist_group("sandbox")]

PARENT = textwrap.dedent(
    """
    import os, sys, tempfile, time
    from pathlib import Path
    from kernelindex.harness import forkserver
    from kernelindex.harness.arena import Arena
    from kernelindex.harness.isolation import Child

    folder = Path(tempfile.mkdtemp(prefix="kernelindex-lifetime-"))
    sandboxed = sys.argv[1] == "sandboxed"
    child = Child("solution", folder, folder / "log", None, "cpu", Arena(4096, "cpu"), sandboxed, True)
    reply = child.request({"op": "nothing"}, time.monotonic() + 60)  # the worker is set up and answering
    assert reply["ok"] is False, reply
    server = [] if sandboxed else [s.proc.pid for s in forkserver._servers.values()]
    members = child.members.pids() if sandboxed else [child.proc.pid]
    print(folder, " ".join(map(str, [*server, *members])), flush=True)
    time.sleep(600)  # until the test kills this process
    """
)


def _start_parent(mode: str, tmp_path) -> tuple[subprocess.Popen, list[int]]:
    env = {k: v for k, v in os.environ.items() if k != "KERNELINDEX_HARNESS_SPAWN"}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    line = parent.stdout.readline()
    assert line.strip(), f"the parent process printed nothing (exit {parent.poll()})"
    folder, *pids = line.split()
    (tmp_path / "parent-folder").write_text(folder)
    return parent, [int(x) for x in pids]


@pytest.fixture
def parent_folder(tmp_path):
    """The folder the parent process made (removed after the test: the killed parent cannot)."""
    yield tmp_path
    made = tmp_path / "parent-folder"
    if made.exists():
        shutil.rmtree(made.read_text(), ignore_errors=True)


def test_the_fork_server_and_its_workers_die_with_the_parent(parent_folder):
    parent, (server, worker) = _start_parent("forked", parent_folder)
    try:
        assert alive(server) and alive(worker)
        os.kill(worker, signal.SIGSTOP)  # a stopped worker, as a frozen one would be
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        assert gone_within([server, worker], timeout_s=10) == []
    finally:
        for pid in (server, worker):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        parent.stdout.close()


def test_a_sandbox_dies_with_the_parent(parent_folder):
    need_sandbox()
    parent, members = _start_parent("sandboxed", parent_folder)
    parent_pid = parent.pid
    where = cgroups.hierarchy()
    mine = [p for parent_dir in where.parents.values() for p in parent_dir.glob(f"*.{parent_pid}.*")]
    assert mine and glob.glob(f"/tmp/kernelindex-stage-{parent_pid}.*")  # what it made, to be cleared
    try:
        assert members and all(alive(pid) for pid in members)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        assert gone_within(members, timeout_s=10) == []
    finally:
        parent.stdout.close()
    # the next harness clears the dead one's group and staging folder (under xdist another worker
    # may be that harness first)
    where = cgroups.hierarchy()
    cgroups.reap_stale(where)
    left = [p for parent in where.parents.values() for p in parent.glob(f"*.{parent_pid}.*")]
    assert left == []
    survivor = subprocess.run(
        [sys.executable, "-c", "from kernelindex.harness import sandbox; print(sandbox._stage_root())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert survivor.stdout.strip() and glob.glob(f"/tmp/kernelindex-stage-{parent_pid}.*") == []


def test_a_process_in_a_nested_user_and_pid_namespace_is_frozen_counted_and_killed(tmp_path):
    """Even outside bwrap (which denies nested namespaces), a cgroup member that enters its own user
    and PID namespace stays a member: frozen, counted, killed."""
    need_sandbox()
    if subprocess.run(["unshare", "-Urp", "--fork", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -Urp does not work on this host")
    counter = tmp_path / "counter"
    counter.write_bytes(b"\0" * 8)
    busy = f"n = 0\nwhile True:\n    n += 1\n    open({str(counter)!r}, 'r+b').write(n.to_bytes(8, 'little'))\n"
    group = cgroups.Group.create(memory_limit_bytes=256 << 20, pids_max=64)
    proc = subprocess.Popen(["unshare", "-Urp", "--fork", sys.executable, "-c", busy], preexec_fn=group.join_self)
    try:

        def value() -> int:
            return int.from_bytes(counter.read_bytes()[:8], "little")

        deadline = time.monotonic() + 30
        while value() == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        members = group.pids()
        inner = [pid for pid in members if os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid")]
        assert inner, "the busy process is in its own PID namespace"
        assert group.memory_bytes() > 0
        assert group.freeze()
        frozen = value()
        for _ in range(20):
            time.sleep(0.01)
            assert value() == frozen
        group.thaw()
        deadline = time.monotonic() + 30
        while value() == frozen:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert group.kill()
        assert group.pids() == [] and gone_within(members) == []
    finally:
        group.remove()
        proc.wait(timeout=10)
