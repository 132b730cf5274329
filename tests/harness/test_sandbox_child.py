"""A real `Child` and real evaluations in the sandbox: memory from the cgroup, a kernel OOM kill
reported as `memory`, output bounded, and a project that lives under /tmp still sandboxed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from harness_testkit import problem, quick, write_solution
from sandbox_testkit import ENV, gone_within, need_sandbox

from kernelindex.harness import isolation, sandbox, zygote
from kernelindex.harness.arena import Arena
from kernelindex.harness.isolation import Child, ChildEnded
from kernelindex.harness.runner import evaluate
from kernelindex.harness.verdict import Verdict

pytestmark = [pytest.mark.xdist_group("sandbox"), pytest.mark.slow]

MIB = 1 << 20
FIRST = "3a1f0e2c-0000-4000-8000-000000000001"


@pytest.fixture(autouse=True)
def _sandbox_here():
    need_sandbox()


def test_a_childs_memory_is_its_cgroups_and_close_removes_everything(tmp_path, monkeypatch):
    """A cold sandbox, whose child imports torch itself (a warm child's torch pages are its zygote's:
    test_zygote.py covers what a warm child is charged)."""
    monkeypatch.setenv(zygote.WARM_VARIABLE, "0")
    folder = tmp_path / "scratch"
    folder.mkdir()
    arena = Arena(4096, "cpu")
    child = Child("solution", folder, tmp_path / "log", 2048 * MIB, "cpu", arena, True, True, cpus=[0])
    try:
        deadline = time.monotonic() + 60
        while child.memory_bytes() < 32 * MIB:  # the child imports torch before it reads a request
            assert time.monotonic() < deadline, child.log_tail()
            time.sleep(0.05)
        now = child.memory_bytes()
        assert now >= 32 * MIB and child.peak_memory_bytes() >= now
        members = child.members.pids()
        assert child.proc.pid in members
        assert child.freeze()
        child.thaw()
        assert child.group is not None
        dirs = list(child.group.dirs.values())
    finally:
        child.close()
        arena.close()
    assert gone_within(members) == []
    assert not any(path.exists() for path in dirs)


def test_a_kernel_oom_kill_is_reported_as_memory(tmp_path):
    code = """
import torch

def run(x, y, z):
    with open("/dev/shm/fill" if False else "/tmp/fill", "wb") as f:
        for _ in range(2048):
            f.write(b"x" * (1 << 20))
    torch.add(x, y, out=z)
"""
    suite = evaluate(
        problem("vector_add"), write_solution(tmp_path / "filler", code), quick(memory_limit_mb=900, cases=[FIRST])
    )
    assert suite.sandboxed
    case = suite.cases[0]
    # the tmpfs (1 GiB) holds more than the limit minus torch: the kernel kills the group first
    assert case.verdict is Verdict.RESOURCE_EXCEEDED, case.log
    assert "memory limit" in case.log


def test_the_memory_watch_reads_the_oom_kill_of_any_member(tmp_path):
    """A helper process, not the child itself, is OOM-killed: still `memory`."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    arena = Arena(4096, "cpu")
    child = Child("solution", folder, tmp_path / "log", 1024 * MIB, "cpu", arena, True, True)
    try:
        group = child.group
        assert group is not None
        helper = subprocess.Popen(  # joins the group from outside, as a member the child started would be in
            [sys.executable, "-c", "b = bytearray(1 << 31); b[:] = b'x' * len(b)"], preexec_fn=group.join_self
        )
        helper.wait(timeout=60)
        assert helper.returncode == -9 and group.oom_kills() > 0
        with pytest.raises(ChildEnded) as ended:
            child.receive(time.monotonic() + 30, "a test")
        assert ended.value.kind == "memory"
    finally:
        child.close()
        arena.close()


def test_a_sandboxs_output_is_bounded_in_its_log(tmp_path):
    log_path = tmp_path / "log"
    box = sandbox.Sandbox([sys.executable, "-c", "import sys\nfor _ in range(64): sys.stdout.write('y' * (1 << 20))"])
    read, write = os.pipe()
    try:
        with open(log_path, "ab") as log:
            box.popen(env=ENV, stdout=write)
            os.close(write)
            pump = isolation._LogPump(read, log, limit=4 * MIB)
            assert box.proc.wait(timeout=60) == 0  # the writer never blocked on a full pipe
            pump.join(timeout=30)
            assert not pump.is_alive()
    finally:
        box.close()
    data = log_path.read_bytes()
    assert data.startswith(b"y" * (4 * MIB)) and len(data) < 4 * MIB + 200
    assert b"[output cut: more than 4194304 bytes]" in data


@pytest.fixture
def project_under_tmp(monkeypatch):
    """The harness's source tree copied under /tmp and used as SRC_ROOT (the sandbox's own /tmp
    tmpfs would hide it were it mounted after the binds)."""
    root = Path(tempfile.mkdtemp(prefix="kernelindex-project-", dir="/tmp"))
    src = root / "src"
    shutil.copytree(Path(sandbox.SRC_ROOT) / "kernelindex", src / "kernelindex")
    boot = isolation.BOOT.replace(repr(sandbox.SRC_ROOT), repr(str(src)))
    assert boot != isolation.BOOT
    monkeypatch.setattr(sandbox, "SRC_ROOT", str(src))  # the only tree bound: the copy must be what runs
    monkeypatch.setattr(isolation, "BOOT", boot)
    yield src
    shutil.rmtree(root, ignore_errors=True)


def test_a_source_tree_under_tmp_is_visible_in_the_sandbox(project_under_tmp):
    assert sandbox.probe() == (True, "")
    code = (
        f"import sys; sys.path.insert(0, {str(project_under_tmp)!r}); import kernelindex; print(kernelindex.__file__)"
    )
    box = sandbox.Sandbox([sys.executable, "-I", "-B", "-c", code])
    try:
        out, _ = box.popen(env=ENV, stdout=subprocess.PIPE).communicate(timeout=60)
    finally:
        box.close()
    assert out.decode().strip() == str(project_under_tmp / "kernelindex" / "__init__.py")


def test_an_evaluation_from_a_source_tree_under_tmp_is_sandboxed(project_under_tmp, tmp_path):
    code = "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n"
    suite = evaluate(
        problem("vector_add"), write_solution(tmp_path / "honest", code), quick(sandbox="required", cases=[FIRST])
    )
    assert suite.sandboxed and suite.cases[0].status == "PASSED", suite.cases[0].log


def test_a_venv_under_tmp_is_visible_in_the_sandbox(tmp_path):
    """A harness whose interpreter is a venv under /tmp: the probe (same flags as a real run) passes,
    and says why when the sandbox's uid may not read the venv."""
    venv = Path(tempfile.mkdtemp(prefix="kernelindex-venv-", dir="/tmp"))  # mode 0700
    probe = "import sys; from kernelindex.harness import sandbox; print(sys.prefix); print(sandbox.available())"
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
        site = next(venv.glob("lib/python3*/site-packages"))
        project_site = next(Path(sys.prefix).glob("lib/python3*/site-packages"))
        (site / "kernelindex-src.pth").write_text(f"{sandbox.SRC_ROOT}\n{project_site}\n")
        runs = []
        for mode in (0o700, 0o755):
            venv.chmod(mode)
            runs.append(
                subprocess.run(
                    [str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, timeout=120, check=True
                ).stdout.splitlines()
            )
    finally:
        shutil.rmtree(venv, ignore_errors=True)
    private, readable = runs
    assert private[0] == str(venv) and private[1].startswith("(False, ") and "Permission denied" in private[1]
    assert readable == [str(venv), "(True, '')"]
