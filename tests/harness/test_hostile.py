"""Hostile solutions, one per class of attack, against the vector-add problem's first case.

Every one must end as a non-PASSED verdict, or as PASSED with an honest figure (its per-call
figures fit the parent's batch clock and its speedup is what adding two vectors can give), with
nothing left running and nothing changed outside its scratch folder. Runs are sandboxed
(bubblewrap); the last test shows what the unsandboxed fallback still catches.
"""

from __future__ import annotations

import os
import secrets
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from harness_testkit import PROBLEMS, problem, quick, write_solution

from kernelindex.formats.problem import load_problem
from kernelindex.harness import sandbox
from kernelindex.harness.runner import PACKAGE_DIR, evaluate

FIRST = "3a1f0e2c-0000-4000-8000-000000000001"
MARK = f"kernelindex-hostile-{secrets.token_hex(6)}"
HONEST_SPEEDUP = 10.0  # torch.add against the reference's x + y: anything far above is a fake figure

pytestmark = [
    pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}"),
    pytest.mark.xdist_group("hostile"),  # one worker evaluates the hostile solutions, not each (-n 2)
]


def _writes_to_every_pipe(payload: str) -> str:
    """A solution that computes the right answer, then writes ``payload`` (a Python bytes
    expression) to every pipe it holds: among them the control pipe its process answers on."""
    return f"""
import json, os, stat
import torch

def run(x, y, z):
    torch.add(x, y, out=z)
    for name in os.listdir("/proc/self/fd"):
        try:
            if stat.S_ISFIFO(os.fstat(int(name)).st_mode):
                os.write(int(name), {payload})
        except OSError:
            pass
"""


# name: (destination passing?, code, verdicts it may end with ("PASSED" = only with an honest figure), log phrase)
HOSTILE = {
    # --- reaching into the harness's objects --------------------------------------------------
    "frames_rewrite_clock_and_samples": (
        True,
        """
import sys, time
import torch

def run(x, y, z):
    time.sleep(0.01)  # the real cost of this kernel
    torch.add(x, y, out=z)
    frame = sys._getframe(1)
    while frame is not None:  # find the harness's timer and samples up the stack and fake them
        owner = frame.f_locals.get("self")
        if owner is not None and hasattr(owner, "timer"):
            owner.timer._clock = lambda c=[0]: c.__setitem__(0, c[0] + 1) or c[0]
        samples = frame.f_locals.get("samples")
        if isinstance(samples, list):
            samples[:] = [1] * len(samples)
        frame = frame.f_back
""",
        {"PASSED", "REWARD_HACK"},
        "",
    ),  # impossible figures of its own (a reward hack), or the parent's figure with the 10 ms in it
    "globals_patch_verdict_and_batch": (
        True,
        """
import kernelindex.harness.child as child
import kernelindex.harness.judgement as judgement

judgement.decide = lambda seen: ("passed", "")  # the verdict function, as this process sees it
child.Calls.batch = lambda self, fn, layout, slots, timed, *rest: [1] * len(slots) if timed else []  # skip every call

def run(x, y, z):
    pass
""",
        {"INCORRECT_NUMERICAL"},
        "round-0",
    ),
    "harness_exception_claims_pass": (
        True,
        """
import kernelindex.harness.child as child

def run(x, y, z):
    raise child.CallFailed("passed", "PASSED: everything matched")
""",
        {"REWARD_HACK"},
        "malformed reply",
    ),  # a failure kind outside the schema: the reply fits none, so the case fails
    # --- clocks below Python ----------------------------------------------------------------
    "ctypes_clock": (
        True,
        """
import ctypes, time
import torch

COUNTER = [0]
PROTO = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p)

def fake(module, unused):
    COUNTER[0] += 1
    return COUNTER[0]

CALLBACK = PROTO(fake)

class MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]

# Rewrite the C function behind time.perf_counter_ns (every reference to it, bound or not).
definition = ctypes.c_void_p.from_address(id(time.perf_counter_ns) + 2 * ctypes.sizeof(ctypes.c_void_p)).value
MethodDef.from_address(definition).meth = ctypes.cast(CALLBACK, ctypes.c_void_p).value

def run(x, y, z):
    for _ in range(1_000_000):  # about 30 ms of CPU work that its own figures will not show
        pass
    torch.add(x, y, out=z)
""",
        {"PASSED", "REWARD_HACK"},
        "",
    ),  # the published figure is the parent's: the 30 ms show, whatever its clock says
    # --- lazy or serialisation-time outputs --------------------------------------------------
    "lazy_subclass": (
        False,
        """
import torch

class Deferred(torch.Tensor):
    pass

def run(x, y):
    return torch.Tensor._make_subclass(Deferred, x + y)
""",
        {"RUNTIME_ERROR"},
        "not a plain torch.Tensor",
    ),
    "lazy_torch_function": (
        False,
        """
import torch

class Later(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})

def run(x, y):
    return Later(torch.empty_like(x))  # the work would happen when someone copies it
""",
        {"RUNTIME_ERROR"},
        "not a plain torch.Tensor",
    ),
    "serialisation_time_output": (
        False,
        """
import torch

class Pickled:
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __reduce__(self):  # computes only when pickled, outside any timer
        return (torch.add, (self.x, self.y))

def run(x, y):
    return Pickled(x, y)
""",
        {"RUNTIME_ERROR"},
        "not a plain torch.Tensor",
    ),
    "meta_tensor": (
        False,
        """
import torch

def run(x, y):
    return torch.empty_like(x, device="meta")
""",
        {"RUNTIME_ERROR"},
        "meta",
    ),
    "late_thread": (
        True,
        """
import threading, time
import torch

def run(x, y, z):
    def finish():
        time.sleep(0.3)  # the work lands after the call returned
        torch.add(x, y, out=z)
    threading.Thread(target=finish).start()
""",
        {"INCORRECT_NUMERICAL"},
        "NaN",
    ),
    # --- predicting inputs --------------------------------------------------------------------
    "predicts_inputs": (
        True,
        f"""
import torch
from kernelindex.harness.inputs import seed_for

CALLS = [0]

def run(x, y, z):
    # Regenerate what the inputs of this call would be without the evaluation's nonce and
    # answer from that, never reading x or y.
    index = CALLS[0]
    CALLS[0] += 1
    made = []
    for name in ("x", "y"):
        gen = torch.Generator().manual_seed(seed_for({FIRST!r}, "round", index, name))
        made.append(torch.randn(x.shape, generator=gen))
    z.copy_(made[0] + made[1])
""",
        {"INCORRECT_NUMERICAL"},
        "round-0",
    ),
    # --- state carried across evaluations ------------------------------------------------------
    "cached_outputs": (
        False,
        """
CACHE = {}

def run(x, y):
    if "z" not in CACHE:
        CACHE["z"] = x + y
    return CACHE["z"].clone()
""",
        {"INCORRECT_NUMERICAL"},
        "round-1",
    ),
    # --- the reference's outputs ---------------------------------------------------------------
    "steal_reference": (
        False,
        """
import gc, glob, os
import torch

def run(x, y):
    for obj in gc.get_objects():
        if type(obj) is torch.Tensor and obj.shape == x.shape and obj is not x and obj is not y and obj.abs().sum() > 0:
            if not torch.equal(obj, x) and not torch.equal(obj, y):
                return obj.clone()
    for path in glob.glob("/tmp/**/*.pt", recursive=True) + glob.glob("../**/*.pt", recursive=True):
        try:
            return torch.load(path)[0]
        except Exception:
            pass
    return torch.zeros_like(x)
""",
        {"INCORRECT_NUMERICAL"},
        "",
    ),
    "writes_inputs": (
        True,
        """
def run(x, y, z):
    x.add_(y)
    z.copy_(x)
""",
        {"REWARD_HACK"},
        "wrote into input 'x'",
    ),
    # --- right when checked, wrong when timed --------------------------------------------------
    "right_only_in_rounds": (
        True,
        """
import torch
CALLS = [0]

def run(x, y, z):
    CALLS[0] += 1
    if CALLS[0] <= 3:  # the correctness rounds
        torch.add(x, y, out=z)
    else:
        z.zero_()
""",
        {"INCORRECT_NUMERICAL"},
        "timed-",
    ),
    "right_unless_timed": (
        True,
        """
import sys
import torch

def run(x, y, z):
    frame = sys._getframe(1)
    if frame.f_locals.get("timed"):  # the harness's own flag: skip the work while being timed
        z.zero_()
    else:
        torch.add(x, y, out=z)
""",
        {"INCORRECT_NUMERICAL"},
        "timed-",
    ),
    "forged_replies": (
        True,
        _writes_to_every_pipe('(json.dumps({"ok": True, "samples": [1, 1], "notes": [], "seq": 3}) + "\\n").encode()'),
        {"REWARD_HACK", "INCORRECT_NUMERICAL"},
        "",
    ),  # a reply before its batch is done: the clock stops, the processes freeze with outputs unwritten
    "floods_the_reply_pipe": (
        True,
        """
import os, stat
import torch

def run(x, y, z):
    torch.add(x, y, out=z)
    pipes = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if stat.S_ISFIFO(os.fstat(int(name)).st_mode):
                os.set_blocking(int(name), False)  # a full pipe nobody reads (its log) must not stop the flood
                pipes.append(int(name))
        except OSError:
            pass
    while True:  # one endless reply: the parent must not hold it
        for fd in pipes:
            try:
                os.write(fd, b"[" * 65536)
            except OSError:
                pass
""",
        {"REWARD_HACK"},
        "as one reply",
    ),
    "nests_a_reply_past_the_stack": (
        True,
        _writes_to_every_pipe('b"[" * 100000 + b"\\n"'),
        {"REWARD_HACK"},
        "out of turn",
    ),
    "replies_in_bytes_not_utf8": (
        True,
        _writes_to_every_pipe('b\'{"ok": true, "seq": 3, "note": "\\xff\\xfe"}\\n\''),  # not UTF-8
        {"REWARD_HACK"},
        "out of turn",
    ),
    # --- tricks that change nothing the parent measures: honest figures -----------------------
    "replaces_timer": (
        True,
        """
import time
import torch

def run(x, y, z):
    time.perf_counter_ns = lambda: 0
    torch.add(x, y, out=z)
""",
        {"PASSED"},
        "replaced time.perf_counter_ns",
    ),
    "enables_tf32_and_default_dtype": (
        True,
        """
import torch
torch.set_default_dtype(torch.float64)

def run(x, y, z):
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.use_deterministic_algorithms(True)
    torch.add(x, y, out=z)
""",
        {"PASSED"},
        "default_dtype",
    ),
    "lingering_thread": (
        True,
        """
import threading
import torch

GATE = threading.Event()

def run(x, y, z):
    torch.add(x, y, out=z)
    threading.Thread(target=GATE.wait, daemon=True).start()
""",
        {"PASSED", "RUNTIME_ERROR"},
        "left thread",
    ),  # a thread a call: noted; past the sandbox's pids.max (1,024 tasks) a new thread fails the call
    "slows_the_reference": (
        True,
        """
import os, signal, threading
import torch

def burn():
    while True:
        pass

for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    if pid != os.getpid():
        for sig in (signal.SIGSTOP,):
            try:
                os.kill(pid, sig)  # whatever it can see: only its own sandbox
            except OSError:
                pass
        try:
            os.setpriority(os.PRIO_PROCESS, pid, 19)
        except OSError:
            pass
for _ in range(2):
    threading.Thread(target=burn, daemon=True).start()  # eats CPU whenever it is allowed to run

def run(x, y, z):
    torch.add(x, y, out=z)
""",
        {"PASSED", "REWARD_HACK"},
        "",
    ),  # its burners slow its own batches only (then its figures do not add up)
}


@pytest.fixture(scope="module")
def hostile_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    with ThreadPoolExecutor(2) as pool:
        futures = {
            name: pool.submit(
                evaluate,
                problem("vector_add"),
                write_solution(root / name, code, dps=dps),
                quick(cases=[FIRST], timeout_s=60),
            )
            for name, (dps, code, _, _) in HOSTILE.items()
        }
        return {name: f.result() for name, f in futures.items()}


def assert_honest(result) -> None:
    assert result.passed and result.score.speedup is not None, result.log
    # the published figures are the parent's, one a pair; a figure other load disturbed is never ranked
    assert result.samples_ns == [p.solution_ns for p in result.pairs]
    if not any(p.noisy for p in result.pairs):
        assert result.score.speedup < HONEST_SPEEDUP, (result.score.speedup, result.log)
    else:
        assert "unstable" in result.flags and not result.ranked


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_solution_is_caught_or_measured_honestly(hostile_results, name):
    _, _, allowed, phrase = HOSTILE[name]
    (result,) = hostile_results[name].cases
    assert result.status in allowed, result.log
    assert phrase in result.log or phrase in result.solution_output, (result.log, result.solution_output)
    if result.passed:
        assert_honest(result)
        assert result.latency.median >= HIDDEN_WORK_NS.get(name, 0), (result.latency, result.pairs)
    else:
        assert result.latency is None and (result.score.sol in (None, 0.0))


# work these solutions do in every call and hide from their own clock: the published figure shows it
HIDDEN_WORK_NS = {"frames_rewrite_clock_and_samples": 8e6, "ctypes_clock": 10e6}


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_double_forked_daemons_die_with_the_case(tmp_path):
    code = f"""
import os, sys
import torch

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", {MARK!r}])
    os._exit(0)

def run(x, y, z):
    torch.add(x, y, out=z)
"""
    suite = evaluate(problem("vector_add"), write_solution(tmp_path / "daemon", code), quick(cases=[FIRST]))
    assert suite.cases[0].status == "PASSED", suite.cases[0].log
    assert _processes_with(MARK) == []


def test_files_outside_scratch_cannot_be_read_or_written(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the answer")
    planted = [
        tmp_path / "planted.txt",
        PACKAGE_DIR / "harness" / "__pycache__" / "planted.pyc",
        PROBLEMS / "vector_add" / "planted.json",
        Path("/var/tmp") / f"{MARK}.txt",
    ]
    code = f"""
import os
import torch

REACHED = []
for path in [{str(secret)!r}, {str(PROBLEMS / "vector_add" / "definition.json")!r}, "/root/.bash_history"]:
    try:
        open(path).read()
        REACHED.append(path)
    except OSError:
        pass
for path in {[str(p) for p in planted]!r}:  # whether these land is checked from outside
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("x")
    except OSError:
        pass
os.makedirs("/tmp/cache", exist_ok=True)  # its own private /tmp: allowed, and gone after the case
open("/tmp/cache/answers", "w").write("x")
open("own-scratch-file", "w").write("x")

def run(x, y, z):
    if REACHED:
        z.zero_()  # shows up as a failure
    else:
        torch.add(x, y, out=z)
"""
    suite = evaluate(problem("vector_add"), write_solution(tmp_path / "snoop", code), quick(cases=[FIRST]))
    assert suite.cases[0].status == "PASSED", suite.cases[0].log
    assert not any(p.exists() for p in planted)


def test_answers_cached_in_files_do_not_reach_the_next_evaluation(tmp_path):
    places = [
        "/tmp/ki-answers",
        "/var/tmp/ki-answers",
        "/dev/shm/ki-answers",
        os.path.expanduser("~/.ki-answers"),
        "ki-answers",
        "../ki-answers",
    ]
    code = f"""
import os
import torch

TOKEN = os.urandom(8).hex()  # one per process: a file with another token came from an earlier one
FOUND = []
for place in {places!r}:
    try:
        if open(place).read() != TOKEN:
            FOUND.append(place)
    except OSError:
        pass
    try:
        with open(place, "w") as f:
            f.write(TOKEN)
    except OSError:
        pass

def run(x, y, z):
    if FOUND:
        z.zero_()  # the cached answer would be used here
    else:
        torch.add(x, y, out=z)
"""
    solution = write_solution(tmp_path / "cacher", code)
    for _ in range(2):
        suite = evaluate(problem("vector_add"), solution, quick())
        assert [c.status for c in suite.cases] == ["PASSED", "PASSED"], [c.log for c in suite.cases]
    assert not [p for p in places[:4] if os.path.exists(p)]


def test_the_problem_and_harness_files_cannot_be_altered(tmp_path, problem_copy):
    target = problem_copy / "definition.json"
    bytecode = PACKAGE_DIR / "harness" / "__pycache__" / "judgement.cpython-311.pyc"
    before = target.read_bytes(), bytecode.read_bytes() if bytecode.exists() else None
    code = f"""
import torch

ALTERED = []
for path in ({str(target)!r}, {str(bytecode)!r}, {str(PACKAGE_DIR / "harness" / "judgement.py")!r}):
    try:
        with open(path, "wb") as f:
            f.write(b"def decide(seen): return 'passed', ''")
        ALTERED.append(path)
    except OSError:
        pass

def run(x, y, z):
    if ALTERED:
        z.zero_()
    else:
        torch.add(x, y, out=z)
"""
    suite = evaluate(load_problem(problem_copy), write_solution(tmp_path / "vandal", code), quick(cases=[FIRST]))
    assert suite.cases[0].status == "PASSED", suite.cases[0].log
    assert (target.read_bytes(), bytecode.read_bytes() if bytecode.exists() else None) == before


def test_without_a_sandbox_the_run_is_reproducible_and_tampering_is_still_seen(tmp_path, problem_copy):
    """The fallback: no namespaces, so a write to the problem folder lands; the parent's digests,
    taken once before the first case, catch it in this case and every later one."""
    target = problem_copy / "workload.jsonl"
    code = f"""
import torch

def run(x, y, z):
    with open({str(target)!r}, "a") as f:
        f.write("\\n")
    torch.add(x, y, out=z)
"""
    suite = evaluate(load_problem(problem_copy), write_solution(tmp_path / "vandal", code), quick(sandbox="off"))
    assert not suite.sandboxed and "switched off" in suite.sandbox_note
    assert [c.status for c in suite.cases] == ["REWARD_HACK", "REWARD_HACK"]
    assert all(str(target) in c.log for c in suite.cases)
