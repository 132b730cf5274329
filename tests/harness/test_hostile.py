"""Each reward hack the issue names, as a hostile solution, and the check that catches it.

All of them run against the vector-add problem (the first case only, to keep this fast); the
attack on the problem folder gets a private copy of it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from harness_testkit import problem, quick, write_solution
from kernelindex.harness.formats import load_problem
from kernelindex.harness.runner import evaluate

FIRST = "3a1f0e2c-0000-4000-8000-000000000001"

HOSTILE = {
    "lazy_subclass": (False, """
import torch

class Deferred(torch.Tensor):
    pass

def run(x, y):
    return torch.Tensor._make_subclass(Deferred, x + y)
""", "REWARD_HACK", "not a plain torch.Tensor"),
    "meta_tensor": (False, """
import torch

def run(x, y):
    return torch.empty_like(x, device="meta")
""", "REWARD_HACK", "meta tensor"),
    "cached_outputs": (False, """
CACHE = {}

def run(x, y):
    if "z" not in CACHE:
        CACHE["z"] = x + y
    return CACHE["z"].clone()
""", "INCORRECT_NUMERICAL", "round-1"),
    "steal_reference": (False, """
import gc, glob, os
import torch

def run(x, y):
    # Upstream, the reference ran first in this process: look for its output among live tensors
    # or in files near us, and return a copy.
    for obj in gc.get_objects():
        if type(obj) is torch.Tensor and obj.shape == x.shape and obj is not x and obj is not y and obj.dtype == x.dtype:
            if torch.allclose(obj, x + y) is False and obj.abs().sum() > 0:
                return obj.clone()
    for path in glob.glob(os.path.join(os.getcwd(), "..", "**", "*.pt"), recursive=True):
        try:
            return torch.load(path)[0]
        except Exception:
            pass
    return torch.zeros_like(x)
""", "INCORRECT_NUMERICAL", ""),
    "writes_inputs": (True, """
def run(x, y, z):
    x.add_(y)
    z.copy_(x)
""", "REWARD_HACK", "wrote into input 'x'"),
    "late_thread": (True, """
import threading, time
import torch

def run(x, y, z):
    def finish():
        time.sleep(0.3)  # the hostile part: the work lands after the call returned
        torch.add(x, y, out=z)
    threading.Thread(target=finish).start()
""", "REWARD_HACK", "changed after the call returned"),
    "lingering_thread": (True, """
import threading
import torch

GATE = threading.Event()

def run(x, y, z):
    torch.add(x, y, out=z)
    threading.Thread(target=GATE.wait, daemon=True).start()
""", "REWARD_HACK", "left thread"),
    "replaces_timer": (True, """
import time
import torch

def run(x, y, z):
    time.perf_counter_ns = lambda: 0
    torch.add(x, y, out=z)
""", "REWARD_HACK", "replaced time.perf_counter_ns"),
    "replaces_torch_function": (True, """
import torch
torch.allclose = lambda *args, **kwargs: True

def run(x, y, z):
    torch.add(x, y, out=z)
""", "REWARD_HACK", "replaced torch.allclose"),
    "enables_tf32": (True, """
import torch

def run(x, y, z):
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.add(x, y, out=z)
""", "REWARD_HACK", "process-wide switch"),
    "default_dtype": (True, """
import torch
torch.set_default_dtype(torch.float64)

def run(x, y, z):
    torch.add(x, y, out=z)
""", "REWARD_HACK", "default_dtype"),
    "deterministic_flag": (True, """
import torch

def run(x, y, z):
    torch.use_deterministic_algorithms(True)
    torch.add(x, y, out=z)
""", "REWARD_HACK", "deterministic_algorithms"),
    "right_only_when_checked": (True, """
import torch
CALLS = [0]

def run(x, y, z):
    CALLS[0] += 1
    if CALLS[0] <= 3:  # the correctness rounds
        torch.add(x, y, out=z)
    else:
        z.zero_()
""", "INCORRECT_NUMERICAL", "timed-"),
}


@pytest.fixture(scope="module")
def hostile_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    with ThreadPoolExecutor(2) as pool:
        futures = {
            name: pool.submit(evaluate, problem("vector_add"), write_solution(root / name, code, dps=dps),
                              quick(cases=[FIRST], thread_join_s=3.0))
            for name, (dps, code, _, _) in HOSTILE.items()
        }
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_solution_is_caught(hostile_results, name):
    _, _, status, phrase = HOSTILE[name]
    (result,) = hostile_results[name].cases
    assert result.status == status, result.log
    assert phrase in result.log
    assert result.latency is None and result.score.sol == 0.0 if result.score.sol is not None else True


def test_overwriting_the_problem_is_caught_and_changes_nothing_measured(tmp_path, problem_copy):
    target = problem_copy / "definition.json"
    code = f"""
import torch
TARGET = {str(target)!r}

def run(x, y, z):
    with open(TARGET, "w") as f:
        f.write('{{"name": "vector_add_f32", "axes": {{}}, "inputs": {{}}, "outputs": {{}}, "reference": "def run(): pass"}}')
    z.zero_()
"""
    original = target.read_text()
    suite = evaluate(load_problem(problem_copy), write_solution(tmp_path / "vandal", code), quick(cases=[FIRST]))
    (result,) = suite.cases
    assert result.status == "REWARD_HACK" and str(target) in result.log
    assert target.read_text() != original  # the harness cannot stop the write, only see it


def test_solution_files_cannot_shadow_the_harness_or_the_problem(tmp_path):
    boom = "raise ImportError('shadowed!')\n"
    extra = {"torch.py": boom, "numpy.py": boom, "kernelindex/__init__.py": boom, "kernelindex/harness/__init__.py": boom,
             "definition.json": "{}", "workload.jsonl": "{}\n"}
    probe = """
import os, sys
import torch

HERE = os.getcwd()
assert sorted(os.listdir(HERE)) == sorted(["solution.py", "torch.py", "numpy.py", "kernelindex", "definition.json", "workload.jsonl"]), os.listdir(HERE)
assert HERE == sys.path[-1], sys.path  # the solution folder comes last
assert torch.__file__.endswith("__init__.py") and "site-packages" in torch.__file__

def run(x, y, z):
    torch.add(x, y, out=z)
"""
    suite = evaluate(problem("vector_add"), write_solution(tmp_path / "shadow", probe, extra=extra), quick(cases=[FIRST]))
    assert [c.status for c in suite.cases] == ["PASSED"], suite.cases[0].log


def test_forged_replies_on_the_control_pipe_are_caught(tmp_path):
    code = """
import json, os, stat
import torch

FORGED = json.dumps({"ok": True, "samples_ns": [1] * 8, "kept": []}) + "\\n"

def run(x, y, z):
    torch.add(x, y, out=z)
    for name in os.listdir("/proc/self/fd"):
        try:
            if stat.S_ISFIFO(os.fstat(int(name)).st_mode):
                os.write(int(name), FORGED.encode())
        except OSError:
            pass
"""
    suite = evaluate(problem("vector_add"), write_solution(tmp_path / "forger", code), quick(cases=[FIRST]))
    (result,) = suite.cases
    assert result.status == "REWARD_HACK" and "forged" in result.log
