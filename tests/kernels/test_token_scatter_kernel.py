"""Our 009 kernels against our reference, under each case's published tolerance.

Scaled-down shapes keep the arithmetic: hidden_dim and ffn_dim shrink (ratio kept), the token counts do
not, and make_inputs scales the weights by sqrt(4096 / hidden_dim) so every intermediate keeps its
full-size magnitude. grad_w1 and grad_w3 are held to a 99.9% match: plain bf16 operands for gg and those
two products reach only about 99.2-99.4% here (the spec reports failures at full size). grad_w2 from a bf16
geo, as the spec allows and the CPU path does, reaches about 99.8% and is held to the published 99%; the
Triton path computes it from fp16 operands and is held to 99.9% like the others.
"""

from __future__ import annotations

import pytest
import torch

from kernelindex.formats.problem import load_problem
from kernelindex.harness.compare import compare_output
from kernelindex.harness.inputs import load_reference
from kernelindex.kernels.moe_token_scatter_bwd import kernel
from kernelindex.problems import TOKEN_SCATTER_BWD

PROBLEM = load_problem(TOKEN_SCATTER_BWD)
REFERENCE = load_reference(PROBLEM.definition)
SPLIT_GRADS = ("grad_w1_weight", "grad_w3_weight")  # the CPU path's hi/lo products
WEIGHT_GRADS = ("grad_w1_weight", "grad_w2_weight", "grad_w3_weight")  # all fp16 operands on the Triton path


def _run_case(case, consts, fn=kernel.run):
    axes = {**PROBLEM.definition.resolve_axes(case.axes), **consts}
    inputs = REFERENCE.make_inputs(axes, "cpu")
    refs = REFERENCE.run(*inputs.values())
    outs = [torch.full_like(r, float("nan")) for r in refs]
    fn(*inputs.values(), *outs)
    return {
        name: compare_output(name, spec, o, r, case.tolerance)
        for (name, spec), o, r in zip(PROBLEM.definition.outputs.items(), outs, refs)
    }


# cases 0 (N=64), 11 (N=215, the first that plain bf16 fails), 2 (N=256), 10 (N=512), 7 (N=2048)
@pytest.mark.parametrize("index", [0, 11, 2, 10, 7])
def test_torch_path_passes_scaled_cases(index, seed):
    checks = _run_case(PROBLEM.cases[index], {"hidden_dim": 64, "ffn_dim": 224})
    for name, check in checks.items():
        assert check.status == "PASSED", f"{name}: {check.reason}"
    for name in SPLIT_GRADS:
        assert checks[name].matched_ratio >= 0.999, name


# the last case: hidden and ffn not multiples of any tile, so every H and F edge mask is exercised
@pytest.mark.parametrize("batch,n_tok,hidden,ffn", [(40, 24, 32, 48), (300, 215, 32, 48), (97, 37, 40, 56)])
def test_triton_pipeline_under_interpreter(interpreted, batch, n_tok, hidden, ffn):
    checks = {c["name"]: c for c in interpreted("token_scatter", batch, n_tok, hidden, ffn)}
    assert list(checks) == list(PROBLEM.definition.outputs)
    for name, check in checks.items():
        assert check["status"] == "PASSED", f"{name}: {check['reason']}"
    for name in WEIGHT_GRADS:
        assert checks[name]["matched_ratio"] >= 0.999, name


def test_rows_outside_the_indices_are_zeroed(seed):
    case = PROBLEM.cases[14]
    axes = {**PROBLEM.definition.resolve_axes(case.axes), "hidden_dim": 32, "ffn_dim": 48}
    inputs = REFERENCE.make_inputs(axes, "cpu")
    outs = [torch.full_like(r, 7.0) for r in REFERENCE.run(*inputs.values())]
    kernel.run(*inputs.values(), *outs)
    others = sorted(set(range(axes["batch_seq_len"])) - set(inputs["token_indices"].tolist()))
    assert others and bool((outs[0][others] == 0).all()) and bool((outs[1][others] == 0).all())
