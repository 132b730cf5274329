"""cgroup v2's freezer, membership and kill, on whatever v2 hierarchy this host has.

GPU hosts usually have a pure v2 hierarchy; this one has v1 controllers and an empty v2 (hybrid)
hierarchy, whose core files (cgroup.procs, cgroup.freeze, cgroup.events, cgroup.kill) work without
any controller, so the v2 code that freezes, lists and kills is exercised here too. Memory, pids and
cpuset of v2 need those controllers, and are checked where they are enabled.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from sandbox_testkit import gone_within

from kernelindex.harness import cgroups

pytestmark = [pytest.mark.xdist_group("sandbox")]


def _v2_mount() -> Path | None:
    for mount, kind, _ in cgroups._mounts():
        if kind == "cgroup2":
            return Path(mount)
    return None


@pytest.fixture
def v2_hierarchy():
    mount = _v2_mount()
    if mount is None or not (mount / "cgroup.procs").exists():
        pytest.skip("no cgroup v2 hierarchy is mounted here")
    parent = mount / cgroups.PARENT
    try:
        parent.mkdir(exist_ok=True)
    except OSError as exc:
        pytest.skip(f"cgroup v2 at {mount} is not writable here: {exc}")
    if not (parent / "cgroup.freeze").exists():
        pytest.skip("this kernel's cgroup v2 has no freezer (cgroup.freeze)")
    return cgroups.Hierarchy(2, {"": parent})


def test_v2_freezes_lists_and_kills_every_process(v2_hierarchy, tmp_path):
    counter = tmp_path / "counter"
    counter.write_bytes(b"\0" * 16)
    busy = (
        "import os\n"
        "def count(offset):\n"
        "    n = 0\n"
        "    f = open(%r, 'r+b', buffering=0)\n"
        "    while True:\n"
        "        n += 1\n"
        "        os.pwrite(f.fileno(), n.to_bytes(8, 'little'), offset)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    count(8)\n"
        "count(0)\n"
    ) % str(counter)
    available = set((v2_hierarchy.parents[""].parent / "cgroup.controllers").read_text().split())
    limits = {"memory_limit_bytes": 256 << 20} if "memory" in available else {}
    group = cgroups.Group.create(where=v2_hierarchy, **limits)
    proc = subprocess.Popen([sys.executable, "-c", busy], preexec_fn=group.join_self)
    try:

        def values() -> list[int]:
            data = counter.read_bytes()
            return [int.from_bytes(data[i : i + 8], "little") for i in (0, 8)]

        deadline = time.monotonic() + 30
        while 0 in values():
            assert time.monotonic() < deadline, values()
            time.sleep(0.01)
        members = group.pids()
        assert proc.pid in members and len(members) == 2
        assert group.populated()
        assert group.freeze()
        frozen = values()
        for _ in range(20):
            time.sleep(0.01)
            assert values() == frozen
        group.thaw()
        deadline = time.monotonic() + 30
        while any(a <= b for a, b in zip(values(), frozen)):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        if limits:
            assert group.memory_bytes() > 0
        assert group.kill()
        assert group.pids() == [] and not group.populated()
        assert gone_within(members) == []
    finally:
        group.remove()
        proc.wait(timeout=10)
    assert not group.dirs[""].exists()
