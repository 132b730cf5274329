"""Each benchmark's own correctness rule (chosen by the problem's format), and where ours differs.

The cases are the two disagreements found on upstream problems: an index one off (SOL-ExecBench
applies its tolerance to integers: it passes; our rule wants integers exact) and a GEMM with 0.78%
of its elements off (SOL-ExecBench's matched ratio of 0.99 passes it; FlashInfer-Bench wants every
element within atol or rtol)."""

from __future__ import annotations

import json
import math

import torch

from kernelindex.formats.definition import Definition, TensorSpec
from kernelindex.formats.problem import flashinfer_bench_tolerance, load_problem
from kernelindex.formats.workload import Tolerance
from kernelindex.harness.compare import (
    COMPARATORS,
    STRICT,
    flashinfer_bench_check,
    sol_execbench_check,
)

I64 = TensorSpec("index", ("n",), "int64")
F32 = TensorSpec("out", ("n",), "float32")
BOOL = TensorSpec("mask", ("n",), "bool")


def test_sol_execbench_applies_its_tolerance_to_integers_and_bools():
    ref = torch.arange(1000, dtype=torch.int64)
    out = ref.clone()
    out[7] += 1  # one index off by one: outside atol + rtol·|ref|, but 99.9% of them match
    tol = Tolerance()
    assert sol_execbench_check("index", I64, out, ref, tol).status == "PASSED"
    assert STRICT.check("index", I64, out, ref, tol).status == "INCORRECT_NUMERICAL"
    out[:20] = 0  # 2% of the indices wrong by more than the tolerance: below the matched ratio
    assert sol_execbench_check("index", I64, out, ref, tol).status == "INCORRECT_NUMERICAL"
    mask = torch.ones(200, dtype=torch.bool)
    flipped = mask.clone()
    flipped[0] = False  # 0.5% of a bool output flipped: the 0.99 matched ratio lets it through
    assert sol_execbench_check("mask", BOOL, flipped, mask, tol).status == "PASSED"
    assert sol_execbench_check("mask", BOOL, torch.zeros(200, dtype=torch.bool), mask, tol).reason.startswith(
        "output is all zeros"
    )


def test_flashinfer_bench_needs_every_element_where_sol_execbench_takes_the_ratio():
    gen = torch.Generator().manual_seed(30)
    ref = torch.randn(128 * 100, generator=gen) + 3.0
    out = ref.clone()
    off = torch.randperm(ref.numel(), generator=gen)[: round(ref.numel() * 0.0078)]
    out[off] += 0.5  # 0.78% of the elements off by far more than atol and rtol
    tol = Tolerance()
    sol = sol_execbench_check("out", F32, out, ref, tol)
    assert sol.status == "PASSED" and sol.matched_ratio < 0.993
    gemm = Definition("gemm", {}, {}, {"out": F32}, "")
    every = flashinfer_bench_tolerance(gemm)  # its BenchmarkConfig's, whatever the workload says
    fib = flashinfer_bench_check("out", F32, out, ref, every)
    assert fib.status == "INCORRECT_NUMERICAL" and f"{len(off)} of {ref.numel()}" in fib.reason
    # within either bound is enough for FlashInfer-Bench: 0.5% off everywhere is past atol where |ref| > 2, within rtol
    close = ref * 1.005
    assert flashinfer_bench_check("out", F32, close, ref, every).status == "PASSED"
    # its low-bit evaluator (picked by the definition's name) asks 95% of the elements only
    lowbit = flashinfer_bench_tolerance(Definition("gemm_moe_fp8_block_scale_e8", {}, {}, {"out": F32}, ""))
    assert flashinfer_bench_check("out", F32, out, ref, lowbit).status == "PASSED"


def test_non_finite_values_fail_as_each_benchmark_says():
    ref = torch.tensor([1.0, -math.inf, 2.0])
    out = ref.clone()
    tol = Tolerance()
    assert sol_execbench_check("out", F32, out, ref, tol).status == "INCORRECT_NUMERICAL"  # even matching -inf
    allowed = Tolerance(allow_negative_inf=True)
    assert sol_execbench_check("out", F32, out, ref, allowed).status == "PASSED"
    assert flashinfer_bench_check("out", F32, out, ref, tol).reason == "output has Inf"
    nan = torch.tensor([1.0, math.nan, 2.0])
    assert flashinfer_bench_check("out", F32, nan, torch.ones(3), tol).has_nan


def test_the_format_picks_the_rule_and_names_it(tmp_path):
    definition = {
        "name": "add_one",
        "op_type": "elementwise",
        "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
        "reference": "def run(x):\n    return x + 1\n",
    }
    for name, extra, line, expected in [
        ("sol", {}, {"uuid": "a", "axes": {"n": 4}, "tolerance": {"max_atol": 1e-3}}, "sol_execbench"),
        ("fib", {"tags": ["status:verified"]}, {"uuid": "a", "axes": {"n": 4}}, "flashinfer_bench"),
    ]:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "definition.json").write_text(json.dumps({**definition, **extra}))
        (folder / "workload.jsonl").write_text(json.dumps(line) + "\n")
        assert load_problem(folder).format == expected
    assert {f: row.name for f, row in COMPARATORS.items()} == {
        "kernelindex": "kernelindex_strict",
        "sol_execbench": "sol_execbench_error_stats",
        "flashinfer_bench": "flashinfer_bench_every_element",
    }


def test_our_own_packs_keep_our_exact_rule():
    from kernelindex.formats.packs import problem_folders
    from kernelindex.problems import PROBLEMS_DIR

    assert {load_problem(p).format for p in problem_folders(PROBLEMS_DIR)} == {"kernelindex"}


def test_a_flashinfer_bench_sampling_definition_is_judged_by_its_sampling_rule(tmp_path):
    """FlashInfer-Bench judges sampling by the distribution of many calls' samples (harness/sampling_judge.py,
    tested in test_sampling_judge.py): chosen by the format and the op_type together."""
    from kernelindex.harness.sampling_judge import rule_for

    definition = {
        "name": "sample_from_probs",
        "op_type": "sampling",
        "tags": ["status:verified"],
        "axes": {"n": {"type": "var"}, "v": {"type": "const", "value": 16}},
        "inputs": {"probs": {"shape": ["n", "v"], "dtype": "float32"}},
        "outputs": {"samples": {"shape": ["n"], "dtype": "int64"}},
        "reference": "import torch\n\ndef run(probs):\n    return torch.multinomial(probs, 1).squeeze(1)\n",
    }
    folder = tmp_path / "sampling"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(definition))
    (folder / "workload.jsonl").write_text(json.dumps({"uuid": "a", "axes": {"n": 4}, "inputs": {}}) + "\n")
    problem = load_problem(folder)
    assert problem.format == "flashinfer_bench"
    rule = rule_for(problem.format, problem.definition, problem.cases)
    assert rule is not None and (rule.name, rule.method) == ("flashinfer_bench_sampling_tvd", "none")
    assert rule_for("sol_execbench", problem.definition, problem.cases) is None  # SOL-ExecBench has no such rule
    definition["op_type"] = "elementwise"
    (folder / "definition.json").write_text(json.dumps(definition))
    assert rule_for("flashinfer_bench", load_problem(folder).definition, problem.cases) is None
