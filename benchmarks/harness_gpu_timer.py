"""GPU checks of the harness timer (needs a CUDA GPU; on a CPU-only machine it says so and exits 0).

1. Spread: a fixed kernel (an 8192² bf16 matrix product) timed 200 times by the harness's own
   CUDA-event timer with the L2 flushed before each call: p95/p05 must stay under 1.05.
2. Copy: the bandwidth of a 256 MiB device-to-device copy is measured separately (events around
   back-to-back copies, no flush); then a copy problem goes through the whole isolated harness
   (`evaluate`, device cuda) and its median must be within 5% of bytes moved / that bandwidth.
3. Smoke: the CPU test fixtures (PyTorch and compiled Triton solutions) through the harness on
   the GPU, and the ExecutionEnvironment read from the machine.
4. Hostile: a solution whose work lands on a side stream after the call returned must not pass.
Run: python benchmarks/harness_gpu_timer.py   (results also written to $OUT/harness_gpu_timer.json when $OUT is set)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

COPY_ELEMENTS = 64 << 20  # float32: 256 MiB, far beyond any L2
FIXTURES = ROOT / "tests" / "harness" / "fixtures"


def spread_check(torch, results: dict) -> None:
    from kernelindex.harness.stats import summarize
    from kernelindex.harness.timing import CudaEventTimer

    timer = CudaEventTimer("cuda")
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)
    for _ in range(10):
        torch.matmul(a, b, out=out)
    samples = []
    for _ in range(200):
        timer.flush()
        timer.start()
        torch.matmul(a, b, out=out)
        elapsed = timer.stop()
        timer.barrier()
        samples.append(elapsed())
    s = summarize(samples)
    ratio = s.p95 / s.p05
    results["spread"] = {"kernel": "bf16 matmul 8192^3", **s.to_dict(), "p95_over_p05": ratio, "ok": ratio < 1.05}
    print(
        f"[spread] median {s.median / 1e3:.1f} us  p05 {s.p05 / 1e3:.1f}  p95 {s.p95 / 1e3:.1f}  "
        f"p95/p05 = {ratio:.4f}  -> {'OK' if ratio < 1.05 else 'FAIL'} (< 1.05)"
    )


def bandwidth(torch) -> float:
    """Bytes per second of a device-to-device copy (read + write), events around 50 back-to-back copies."""
    x = torch.empty(COPY_ELEMENTS, device="cuda", dtype=torch.float32).normal_()
    y = torch.empty_like(x)
    for _ in range(5):
        y.copy_(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(50):
        y.copy_(x)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3 / 50
    return 2 * x.numel() * x.element_size() / seconds


def copy_problem(folder: Path) -> tuple[Path, Path]:
    problem = folder / "copy_f32"
    problem.mkdir()
    (problem / "definition.json").write_text(
        json.dumps(
            {
                "name": "copy_f32",
                "op_type": "copy",
                "axes": {"n": {"type": "var"}},
                "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
                "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
                "bytes": "8 * n",
                "reference": "def run(x):\n    return x.clone()\n",
            }
        )
    )
    (problem / "workload.jsonl").write_text(
        json.dumps(
            {
                "uuid": "c0b1c0b1-0000-4000-8000-000000000001",
                "axes": {"n": COPY_ELEMENTS},
                "tolerance": {"max_atol": 0, "max_rtol": 0, "required_matched_ratio": 1.0},
            }
        )
        + "\n"
    )
    solution = folder / "copy_solution.json"
    solution.write_text(
        json.dumps(
            {
                "name": "copy_torch",
                "definition": "copy_f32",
                "spec": {
                    "languages": ["pytorch"],
                    "target_hardware": ["cuda"],
                    "entry_point": "copy.py::run",
                    "destination_passing_style": True,
                },
                "sources": [{"path": "copy.py", "content": "def run(x, y):\n    y.copy_(x)\n"}],
            }
        )
    )
    return problem, solution


def copy_check(torch, results: dict) -> None:
    from kernelindex.formats.problem import load_problem
    from kernelindex.formats.solution import load_solution
    from kernelindex.harness.runner import EvalOptions, evaluate

    rate = bandwidth(torch)
    expected_ns = 2 * COPY_ELEMENTS * 4 / rate * 1e9
    with tempfile.TemporaryDirectory() as folder:
        problem_dir, solution_path = copy_problem(Path(folder))
        suite = evaluate(
            load_problem(problem_dir),
            load_solution(solution_path),
            EvalOptions(device="cuda", rounds=2, warmup=5, iterations=30, keep_bytes=2 << 30),
        )
    case = suite.cases[0]
    if case.status != "PASSED":
        results["copy"] = {"status": case.status, "log": case.log[-2000:], "ok": False}
        print(f"[copy] {case.status}: {case.log[-2000:]}")
        return
    measured = case.latency.median
    error = measured / expected_ns - 1
    results["copy"] = {
        "bandwidth_GBps": rate / 1e9,
        "expected_ns": expected_ns,
        "median_ns": measured,
        "p05_ns": case.latency.p05,
        "p95_ns": case.latency.p95,
        "relative_error": error,
        "reference_median_ns": case.reference_latency.median,
        "ok": abs(error) < 0.05,
    }
    print(
        f"[copy] bandwidth {rate / 1e9:.0f} GB/s -> expected {expected_ns / 1e3:.1f} us; harness median {measured / 1e3:.1f} us "
        f"(p05 {case.latency.p05 / 1e3:.1f}, p95 {case.latency.p95 / 1e3:.1f}); error {error:+.2%} -> "
        f"{'OK' if abs(error) < 0.05 else 'FAIL'} (within 5%)"
    )


def smoke(results: dict) -> None:
    from kernelindex.formats.problem import load_problem
    from kernelindex.formats.solution import load_solution
    from kernelindex.harness.environment import read_environment
    from kernelindex.harness.runner import EvalOptions, evaluate

    environment = read_environment("cuda")
    results["environment"] = environment
    print(f"[env] {json.dumps(environment)}")
    pairs = [
        ("vector_add", "vector_add_torch"),
        ("vector_add", "vector_add_triton"),
        ("softmax", "softmax_triton"),
        ("moe_gather_scatter", "moe_gather_scatter_torch"),
        ("moe_gather_scatter", "moe_gather_scatter_triton"),
    ]
    results["smoke"] = {}
    for problem_name, solution_name in pairs:
        suite = evaluate(
            load_problem(FIXTURES / "problems" / problem_name),
            load_solution(FIXTURES / "solutions" / solution_name / "solution.json"),
            EvalOptions(device="cuda", rounds=3, warmup=3, iterations=20),
        )
        statuses = [c.status for c in suite.cases]
        results["smoke"][solution_name] = {
            "statuses": statuses,
            "medians_ns": [c.latency.median if c.latency else None for c in suite.cases],
            "logs": [c.log[-1500:] for c in suite.cases if c.status != "PASSED"],
        }
        print(
            f"[smoke] {solution_name}: {statuses} medians(us) "
            f"{[round(c.latency.median / 1e3, 2) if c.latency else None for c in suite.cases]}"
        )
        for c in suite.cases:
            if c.status != "PASSED":
                print(c.log[-1500:])


SIDE_STREAM = """
import torch

STREAM = []

def run(x, y, z):
    if not STREAM:
        STREAM.append(torch.cuda.Stream())
    with torch.cuda.stream(STREAM[0]):
        torch.cuda._sleep(2_000_000)  # the hostile part: the result lands after the timed call returned
        torch.add(x, y, out=z)
"""


def hostile(results: dict) -> None:
    """Side-stream work that finishes after the timer stopped must not pass on a GPU."""
    from kernelindex.formats.problem import load_problem
    from kernelindex.formats.solution import load_solution
    from kernelindex.harness.runner import EvalOptions, evaluate

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "solution.json"
        path.write_text(
            json.dumps(
                {
                    "name": "side_stream",
                    "definition": "vector_add_f32",
                    "spec": {
                        "languages": ["pytorch"],
                        "target_hardware": ["cuda"],
                        "entry_point": "s.py::run",
                        "destination_passing_style": True,
                    },
                    "sources": [{"path": "s.py", "content": SIDE_STREAM}],
                }
            )
        )
        suite = evaluate(
            load_problem(FIXTURES / "problems" / "vector_add"),
            load_solution(path),
            EvalOptions(device="cuda", rounds=2, warmup=2, iterations=5),
        )
    statuses = [c.status for c in suite.cases]
    results["side_stream"] = {"statuses": statuses, "log": suite.cases[0].log[-1500:], "ok": "PASSED" not in statuses}
    print(
        f"[hostile] side stream: {statuses} -> {'OK' if 'PASSED' not in statuses else 'FAIL'}\n{suite.cases[0].log[-600:]}"
    )


def main() -> None:
    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU visible: nothing measured (this script is for a GPU machine)")
        return
    results: dict = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    try:
        spread_check(torch, results)
        copy_check(torch, results)
        smoke(results)
        hostile(results)
    finally:
        out = os.environ.get("OUT")
        if out:
            Path(out, "harness_gpu_timer.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
