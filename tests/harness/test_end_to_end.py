"""Whole evaluations on CPU: correct solutions in PyTorch and Triton (interpreter) pass; wrong,
crashing, hanging and non-compiling ones get their status and a log; the other cases still run."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from harness_testkit import QUICK, problem, quick, solution, write_solution

from kernelindex.harness.runner import evaluate

pytestmark = pytest.mark.xdist_group("end_to_end")  # one worker evaluates the module's solutions, not each (-n 2)

CORRECT = [
    ("vector_add", "vector_add_torch"),
    ("vector_add", "vector_add_triton"),
    ("softmax", "softmax_torch"),
    ("softmax", "softmax_triton"),
    ("moe_gather_scatter", "moe_gather_scatter_torch"),
    ("moe_gather_scatter", "moe_gather_scatter_triton"),
]

ADD = "import torch\n\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n"
BROKEN = {
    # name: (code, dps, options, expected statuses per case, a phrase of the first case's log)
    "wrong": ("def run(x, y, z):\n    z.copy_(x - y)\n", True, {}, ["INCORRECT_NUMERICAL"] * 2, "within atol"),
    "untouched": ("def run(x, y, z):\n    pass\n", True, {}, ["INCORRECT_NUMERICAL"] * 2, "NaN"),
    "shape": (
        "import torch\n\ndef run(x, y):\n    return torch.cat([x, y])\n",
        False,
        {},
        ["INCORRECT_SHAPE"] * 2,
        "shape",
    ),
    "dtype": ("def run(x, y):\n    return (x + y).double()\n", False, {}, ["INCORRECT_DTYPE"] * 2, "float64"),
    "crash_first": (
        "import os\nimport torch\n\ndef run(x, y, z):\n    if x.numel() == 1000:\n        os.abort()\n    torch.add(x, y, out=z)\n",
        True,
        {},
        ["RUNTIME_ERROR", "PASSED"],
        # a warm child is PID 1 of its own PID namespace, where the kernel drops the SIGABRT that
        # abort() raises at itself, and glibc's fallback then faults: the death is named either way
        "solution process ended (signal SIG",
    ),
    "hang_first": (
        "import torch\n\ndef run(x, y, z):\n    while x.numel() == 1000:\n        pass\n    torch.add(x, y, out=z)\n",
        True,
        {"timeout_s": 8},
        ["TIMEOUT", "PASSED"],
        "time limit",
    ),
    "raises": (
        "def run(x, y, z):\n    raise ValueError('kernel launch failed')\n",
        True,
        {},
        ["RUNTIME_ERROR"] * 2,
        "kernel launch failed",
    ),
    "syntax": ("def run(x, y, z)\n    pass\n", True, {}, ["COMPILE_ERROR"] * 2, "SyntaxError"),
    "missing_entry": ("def other(x, y, z):\n    pass\n", True, {}, ["COMPILE_ERROR"] * 2, "has no attribute 'run'"),
    "memory_hog": (
        "import torch\n\ndef run(x, y, z):\n    hog = torch.ones(1 << 30, dtype=torch.float64)\n    z.copy_(x + y + hog[0] - 1)\n",
        True,
        {"memory_limit_mb": 3072},
        ["RUNTIME_ERROR"] * 2,
        "alloc",
    ),
}


@pytest.fixture(scope="module")
def correct_results():
    with ThreadPoolExecutor(2) as pool:
        futures = {pair: pool.submit(evaluate, problem(pair[0]), solution(pair[1]), quick()) for pair in CORRECT}
        return {pair: f.result() for pair, f in futures.items()}


@pytest.fixture(scope="module")
def broken_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("broken")
    with ThreadPoolExecutor(2) as pool:
        futures = {
            name: pool.submit(
                evaluate, problem("vector_add"), write_solution(root / name, code, dps=dps), quick(**opts)
            )
            for name, (code, dps, opts, _, _) in BROKEN.items()
        }
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("pair", CORRECT, ids=lambda p: p[1])
def test_correct_solutions_pass(correct_results, pair):
    suite = correct_results[pair]
    for result in suite.cases:
        assert result.status == "PASSED", result.log
        # one published sample per paired batch, from the parent's clock; every timed call checked
        assert len(result.samples_ns) == QUICK["pairs"] and len(result.reference_samples_ns) == QUICK["pairs"]
        assert result.samples_ns == [p.solution_ns for p in result.pairs]
        assert result.checked_calls[: QUICK["rounds"]] == [f"round-{r}" for r in range(QUICK["rounds"])]
        timed = [c for c in result.checked_calls if c.startswith("timed-")]
        # every timed call checked, those of pairs run again because other load disturbed them too
        assert len(timed) >= sum(p.calls for p in result.pairs) >= QUICK["iterations"]
        assert all(p.calls >= QUICK["iterations"] // QUICK["pairs"] for p in result.pairs)
        assert len(result.pairs) == QUICK["pairs"] and result.speedup.low <= result.speedup.value <= result.speedup.high
        assert result.latency.min <= result.latency.median <= result.latency.max
        assert result.latency.ci95_low <= result.latency.median <= result.latency.ci95_high
        assert result.score.speedup == pytest.approx(result.reference_latency.median / result.latency.median)
        assert all(o.matched_ratio >= 0.99 and not o.has_nan for o in result.outputs)
        assert [o.name for o in result.outputs] == list(suite.problem.definition.outputs)
    assert suite.score.passed == len(suite.cases) and suite.score.geomean_latency_ms > 0


def test_integer_output_is_checked_exactly(correct_results):
    moe = correct_results[("moe_gather_scatter", "moe_gather_scatter_torch")]
    counts = next(o for o in moe.cases[0].outputs if o.name == "tokens_per_expert")
    assert counts.max_absolute_error == 0 and counts.matched_ratio == 1.0


def test_scores_use_the_workload_baseline_and_sol(correct_results):
    suite = correct_results[("vector_add", "vector_add_torch")]
    first = suite.cases[0].score
    assert first.baseline_source == "workload" and first.baseline_ms == 0.02 and first.t_sol_ms == 0.0005
    assert 0 <= first.sol <= 1 and suite.score.sol_score == pytest.approx(sum(c.score.sol for c in suite.cases) / 2)
    softmax = correct_results[("softmax", "softmax_torch")].cases[0].score
    assert (
        softmax.baseline_source == "reference" and softmax.t_sol_ms is None and softmax.sol is None
    )  # no GPU peaks on CPU


def test_trace_lines_are_strict_json_in_the_upstream_shape(correct_results, tmp_path):
    from kernelindex.formats.trace import trace_lines
    from kernelindex.harness.runner import write_traces

    suite = correct_results[("moe_gather_scatter", "moe_gather_scatter_triton")]
    path = tmp_path / "trace.jsonl"
    write_traces(suite, path)
    lines = [
        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
        for line in path.read_text().splitlines()
    ]
    assert len(lines) == 2
    line = lines[0]
    assert set(line) == {"definition", "solution", "workload", "evaluation"}
    assert line["definition"] == "moe_gather_scatter_small" and line["solution"] == "moe_gather_scatter_triton"
    assert line["workload"]["uuid"] == suite.cases[0].case.uuid and line["workload"]["inputs"]["alpha"] == {
        "type": "scalar",
        "value": 0.5,
    }
    evaluation = line["evaluation"]
    assert evaluation["status"] == "PASSED" and evaluation["timestamp"].endswith("Z")
    assert set(evaluation["correctness"]) == {"max_relative_error", "max_absolute_error", "has_nan", "has_inf"}
    assert evaluation["performance"]["latency_ms"] == pytest.approx(suite.cases[0].latency.median / 1e6)
    assert set(evaluation["environment"]) == {"hardware", "libs"} and "torch" in evaluation["environment"]["libs"]
    read, errors = trace_lines(path.read_bytes(), path)  # what we write, our reader takes
    assert errors == [] and [r.workload_uuid for r in read] == [c.case.uuid for c in suite.cases]
    assert read[0].status == "passed" and read[0].latency_ms == pytest.approx(evaluation["performance"]["latency_ms"])


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_solutions_get_their_status_and_a_log(broken_results, name):
    _, _, _, statuses, phrase = BROKEN[name]
    suite = broken_results[name]
    assert [c.status for c in suite.cases] == statuses, [c.log for c in suite.cases]
    # the harness's own reason, or what the solution's process said (kept apart from the harness's log)
    first = suite.cases[0]
    assert phrase in first.log or phrase in first.solution_output, (first.log, first.solution_output)
    assert "Traceback" not in first.log
    assert suite.cases[0].latency is None and suite.score.passed == statuses.count("PASSED")


def test_invalid_reference(tmp_path):
    suite = evaluate(problem("broken_reference"), write_solution(tmp_path / "ok", ADD), quick())
    assert [c.status for c in suite.cases] == ["INVALID_REFERENCE"]
    assert "(128,)" in suite.cases[0].log and "(64,)" in suite.cases[0].log


def test_fresh_interpreter_workers_behave_the_same(tmp_path, monkeypatch):
    """The fallback without the fork server: each worker a new `python -I -B` process."""
    monkeypatch.setenv("KERNELINDEX_HARNESS_SPAWN", "1")
    code, dps, _, statuses, phrase = BROKEN["crash_first"]
    suite = evaluate(problem("vector_add"), write_solution(tmp_path / "crash", code, dps=dps), quick())
    assert [c.status for c in suite.cases] == statuses and phrase in suite.cases[0].log


def test_nothing_gpu_only_is_loaded_on_a_cpu_run(correct_results):
    import sys

    import torch

    assert correct_results  # evaluations ran in this process
    assert not torch.cuda.is_initialized()
    assert not [m for m in sys.modules if "cupti" in m.lower() or "nvml" in m.lower()]


def test_scalars_a_custom_inputs_function_makes_reach_both_sides(tmp_path):
    """The generator's Python scalars (type custom, value null in the workload) reach the reference and
    the solution, call by call: the reference as a solution passes, one that ignores them fails."""
    p = problem("custom_scalar")
    echo = "def run(x, scale, shift):\n    return x * scale + shift\n"
    ignores = "def run(x, scale, shift):\n    return x * 1.25 + 5\n"
    name = p.definition.name
    right = evaluate(p, write_solution(tmp_path / "echo", echo, definition=name, dps=False), quick())
    wrong = evaluate(p, write_solution(tmp_path / "ignores", ignores, definition=name, dps=False), quick())
    assert [c.status for c in right.cases] == ["PASSED", "PASSED"], [c.log for c in right.cases]
    assert [c.status for c in wrong.cases] == ["INCORRECT_NUMERICAL"] * 2
