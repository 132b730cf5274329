"""The warm sandbox: each solution and each case gets a fresh child, nothing one child leaves reaches
the next, every child runs with no capability under the seccomp filter, and the warm process (the
zygote) holds no secret of an evaluation."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

import pytest
from harness_testkit import problem, quick, write_solution
from sandbox_testkit import need_sandbox

from kernelindex.harness import zygote
from kernelindex.harness.runner import evaluate
from kernelindex.harness.verdict import Verdict

pytestmark = [pytest.mark.xdist_group("sandbox")]
FIRST = "3a1f0e2c-0000-4000-8000-000000000001"

# Checks what an earlier child may have left, then leaves all of it for the next one. A case fails
# (its outputs are zeroed) when anything was found; what was found is printed on its output.
PLANT_AND_CHECK = """
import ctypes, os, sys, time
import torch
import kernelindex.harness.child as harness_child

MARK = {mark!r}
FOUND = []
files = ["/tmp/" + MARK, "/tmp/.triton/" + MARK, "/tmp/.inductor/" + MARK, "/dev/shm/" + MARK,
         "/tmp/scratch/" + MARK, "/tmp/daemon-" + MARK]
for path in files:
    if os.path.exists(path):
        FOUND.append("file " + path)
if os.environ.get("KI_" + MARK) or hasattr(torch, "ki_" + MARK) or hasattr(harness_child, "ki_" + MARK):
    FOUND.append("environment or module state")
libc = ctypes.CDLL(None, use_errno=True)
if libc.shmget(0x4B49, 4096, 0) != -1:
    FOUND.append("System V shared memory")
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
if others:
    FOUND.append("processes " + ",".join(others))
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
    if int(status[cap], 16):
        FOUND.append(cap + " " + status[cap].strip())
if status["Seccomp"].strip() != "2" or status["NoNewPrivs"].strip() != "1" or os.getuid() != 65534:
    FOUND.append("no seccomp filter, no_new_privs or the sandbox uid")
if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None) == 0 or libc.unshare(0x00020000) == 0:
    FOUND.append("could mount or unshare")
print("found:", FOUND, flush=True)

for path in files[:-1]:
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write("x")
    except OSError:
        pass
os.environ["KI_" + MARK] = "1"
setattr(torch, "ki_" + MARK, 1)
setattr(harness_child, "ki_" + MARK, 1)
libc.shmget(0x4B49, 4096, 0o1000 | 0o666)  # IPC_CREAT
if os.fork() == 0:  # a daemon that keeps planting, to outlive the case if it can
    os.setsid()
    if os.fork() == 0:
        while True:
            try:
                open(files[-1], "w").write("x")
            except OSError:
                pass
            time.sleep(0.01)
    os._exit(0)

def run(x, y, z):
    if FOUND:
        z.zero_()
    else:
        torch.add(x, y, out=z)
"""


def _zygote_pid() -> int:
    """The host pid of the warm sandbox's Python (the zygote), which must be running."""
    running = next(iter(zygote._servers.values()), None)  # (CPU runs: one environment, one zygote)
    assert running is not None and running.alive(), f"no warm sandbox: {zygote._failed}"
    for pid in running.box.group.pids():
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if b"zygote" in argv and not argv[0].endswith(b"bwrap"):  # (bwrap's own argv names it too)
            return pid
    raise AssertionError("the zygote is not in its cgroup")


def test_nothing_passes_from_one_solution_or_case_to_the_next(tmp_path):
    need_sandbox()
    mark = "m" + secrets.token_hex(6)
    code = PLANT_AND_CHECK.format(mark=mark)
    first = write_solution(tmp_path / "first", code, name="first")
    second = write_solution(tmp_path / "second", code, name="second")
    pids = []
    for solution in (first, second, first):
        suite = evaluate(problem("vector_add"), solution, quick())
        assert suite.sandboxed, suite.sandbox_note
        pids.append(_zygote_pid())
        assert [c.status for c in suite.cases] == ["PASSED", "PASSED"], [c.solution_output for c in suite.cases]
        assert all("found: []" in c.solution_output for c in suite.cases), [c.solution_output for c in suite.cases]
    assert len(set(pids)) == 1  # one warm process served every child
    assert not os.path.exists(f"/tmp/{mark}") and not os.path.exists(f"/dev/shm/{mark}")


def _readable_memory(pid: int) -> bytes:
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("rw"):
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except (OSError, OverflowError, ValueError):
                continue
    return b"".join(chunks)


def test_the_warm_process_holds_no_secret_of_an_evaluation(tmp_path, monkeypatch):
    need_sandbox()
    key = secrets.token_hex(24)
    monkeypatch.setenv("KERNELINDEX_SIGNING_KEY", key)
    code = "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n"
    suite = evaluate(problem("vector_add"), write_solution(tmp_path / "honest", code), quick())
    assert [c.status for c in suite.cases] == ["PASSED", "PASSED"]
    pid = _zygote_pid()
    memory = _readable_memory(pid)
    assert len(memory) > 1 << 20  # it did read the process's writable memory
    for secret in (suite.nonce, key):
        assert secret.encode() not in memory
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert key.encode() not in environ and b"KERNELINDEX_SIGNING_KEY" not in environ
    held = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    assert not [h for h in held if "memfd" in h or h.startswith("pipe:")], held  # no arena, no child's pipe
    assert not re.search(r"memfd:kernelindex", Path(f"/proc/{pid}/maps").read_text())
    status = Path(f"/proc/{pid}/status").read_text()
    assert re.search(r"^Uid:\s+65534\s", status, re.M)  # unprivileged on the host too


def test_a_warm_childs_memory_is_charged_to_its_own_cgroup_and_limited(tmp_path):
    """What a warm child writes (here into its /dev/shm) is its own group's, under its own limit; the
    torch pages it shares with the zygote are not, so the same solution passes under a larger limit."""
    need_sandbox()
    code = """
import torch
with open("/dev/shm/fill", "wb") as f:
    for _ in range(1000):
        f.write(b"x" * (1 << 20))

def run(x, y, z):
    torch.add(x, y, out=z)
"""
    solution = write_solution(tmp_path / "filler", code)
    small = evaluate(problem("vector_add"), solution, quick(memory_limit_mb=900, cases=[FIRST]))
    assert small.sandboxed and small.cases[0].verdict is Verdict.RESOURCE_EXCEEDED, small.cases[0].log
    assert "memory limit" in small.cases[0].log
    roomy = evaluate(problem("vector_add"), solution, quick(memory_limit_mb=2048, cases=[FIRST]))
    assert roomy.cases[0].status == "PASSED", roomy.cases[0].log


def test_where_a_warm_child_cannot_be_set_up_sandboxes_start_cold(tmp_path, monkeypatch):
    """A zygote without the capabilities to make namespaces: its probe child fails, the reason is kept,
    and the evaluation runs in cold sandboxes, still sandboxed."""
    need_sandbox()
    monkeypatch.setattr(zygote, "_servers", {})
    monkeypatch.setattr(zygote, "_failed", {})
    monkeypatch.setattr(zygote, "_CAPS_KEPT", ())
    code = "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n"
    suite = evaluate(problem("vector_add"), write_solution(tmp_path / "honest", code), quick(cases=[FIRST]))
    assert suite.sandboxed and suite.cases[0].status == "PASSED", suite.cases[0].log
    assert zygote._servers == {}
    assert [why for why in zygote._failed.values() if "could not be set up" in why]


@pytest.mark.parametrize("mode", ["off", "required"])
def test_a_solution_runs_torch_on_the_threads_its_environment_says_in_either_mode(tmp_path, monkeypatch, mode):
    """Both servers import torch under the children's environment: OpenMP reads OMP_NUM_THREADS then, and a
    forked worker keeps what it read (a fork server started under the harness's environment ran every
    unsandboxed solution on as many threads as the machine has cores, pinned to one)."""
    if mode == "required":
        need_sandbox()
    monkeypatch.delenv("KERNELINDEX_HARNESS_SPAWN", raising=False)  # forked from the server, as by default
    code = (
        "import torch\n\ndef run(x, y, z):\n"
        "    torch.add(x, y, out=z)\n"
        "    if torch.get_num_threads() != 1:\n"
        "        z.add_(1.0)\n"
    )
    suite = evaluate(
        problem("vector_add"), write_solution(tmp_path / "threads", code), quick(sandbox=mode, cases=[FIRST])
    )
    assert suite.sandboxed == (mode == "required")
    assert suite.cases[0].status == "PASSED", suite.cases[0].log
