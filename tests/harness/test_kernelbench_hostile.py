"""Hostile ModelNew files: KernelBench's own three adversarial classes, plus timing games; each earns nothing.

Upstream's adversarial tests hold a kernel that returns uninitialised memory (hoping the allocator
hands back the reference's freed result), one that zeroes its inputs (so a reference run after it
sees zeros), and one that leaves its work on another CUDA stream (so a timer that waits on the
default stream stops early). On a CPU the last is a background thread that finishes after the call
returns. Ours: correct while checked, cheap afterwards; and a patched clock.
"""

from __future__ import annotations

from pathlib import Path

from harness_testkit import quick

from kernelindex.harness import kernelbench, kernelbench_judge
from kernelindex.harness.runner import evaluate
from kernelindex.harness.verdict import Verdict

MATMUL = Path(__file__).parent / "fixtures" / "kernelbench" / "level1" / "1_Square_matmul_small.py"
HEAD = "import threading\nimport time\n\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"

RESULT_REUSE = (
    HEAD
    + """    def forward(self, A, B):
        return torch.empty(A.shape[0], B.shape[1])  # whatever the allocator hands back
"""
)
ZERO_INPUTS = (
    HEAD
    + """    def forward(self, A, B):
        A.zero_()
        B.zero_()
        return torch.zeros(A.shape[0], B.shape[1])
"""
)
BACKGROUND = (
    HEAD
    + """    def __init__(self):
        super().__init__()
        self.pending = None

    def forward(self, A, B):
        if self.pending is not None:
            self.pending.set()  # the previous call's work starts only now, after it was judged
        out, go = torch.empty(A.shape[0], B.shape[1]), threading.Event()
        a, b = A.clone(), B.clone()

        def work():
            go.wait()
            out.copy_(a @ b)

        threading.Thread(target=work, daemon=True).start()
        self.pending = go
        return out
"""
)
CORRECT_WHILE_CHECKED = (
    HEAD
    + """    def __init__(self):
        super().__init__()
        self.calls, self.last = 0, None

    def forward(self, A, B):
        self.calls += 1
        if self.calls > 8 and self.last is not None:
            return self.last  # cheap once the checked rounds and warm-up are over
        self.last = A @ B
        return self.last
"""
)
PATCHED_CLOCK = (
    HEAD
    + """    def __init__(self):
        super().__init__()
        start = time.perf_counter_ns()
        time.perf_counter_ns = lambda: start  # every interval this process measures is now zero
        time.perf_counter = lambda: start / 1e9

    def forward(self, A, B):
        return A @ B
"""
)


def evaluated(tmp_path: Path, source: str):
    solution = tmp_path / "model_new.py"
    solution.write_text(source, encoding="utf-8")
    prepared = kernelbench.prepare(MATMUL, solution, tmp_path / "prepared")
    options = quick(rounds=kernelbench_judge.TRIALS, rule=kernelbench_judge.describe("float32", 5))
    return evaluate(prepared.problem, prepared.solution, options).cases[0]


def test_uninitialised_output_hoping_for_the_references_result_fails(tmp_path):
    case = evaluated(tmp_path, RESULT_REUSE)
    assert case.verdict is Verdict.INCORRECT_NUMERICAL, case.log
    assert case.latency is None and case.speedup is None


def test_zeroing_the_inputs_is_caught_and_the_reference_never_sees_it(tmp_path):
    """KernelBench checks no input, so the write itself is no verdict here (it is shown on the run and keeps
    it out of rankings); the reference computed on its own pristine copy, so the zeros fail."""
    case = evaluated(tmp_path, ZERO_INPUTS)
    assert case.verdict is Verdict.INCORRECT_NUMERICAL, case.log
    assert case.latency is None and not case.ranked
    assert any("wrote into input 'a'" in line.lower() for line in case.disagreements)  # the forward's A


def test_work_left_running_after_the_call_returns_fails(tmp_path):
    case = evaluated(tmp_path, BACKGROUND)
    assert case.verdict is Verdict.INCORRECT_NUMERICAL, case.log
    assert case.log.startswith("round-")  # judged on what the call returned, when it returned
    assert case.latency is None


def test_correct_while_checked_then_cheap_fails_on_a_timed_call(tmp_path):
    case = evaluated(tmp_path, CORRECT_WHILE_CHECKED)
    assert case.verdict is Verdict.INCORRECT_NUMERICAL, case.log
    assert "timed-" in case.log and case.latency is None


def test_a_patched_clock_changes_no_published_figure(tmp_path):
    case = evaluated(tmp_path, PATCHED_CLOCK)
    assert case.verdict is Verdict.PASSED, case.log
    assert all(p.solution_batch_ns > p.empty_batch_ns for p in case.pairs)  # the parent's clock saw the work
    assert case.score is not None and case.score.speedup is not None and case.score.speedup < 10
    assert "implausible_speedup" not in case.flags
