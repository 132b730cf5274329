"""Our 042 kernel against our reference: the PyTorch path at full size, the Triton kernel under the
interpreter (f32 throughout, so the interpreter's bf16 trap does not arise for this kernel)."""

from __future__ import annotations

import pytest
import torch

from kernelindex.formats.problem import load_problem
from kernelindex.harness.compare import compare_output
from kernelindex.harness.inputs import load_reference
from kernelindex.kernels.moe_load_balance_bwd import kernel
from kernelindex.problems import LOAD_BALANCE_BWD

PROBLEM = load_problem(LOAD_BALANCE_BWD)
REFERENCE = load_reference(PROBLEM.definition)
OUT_SPEC = PROBLEM.definition.outputs["grad_expert_mask_out"]
SMALL_CASES = [c for c in PROBLEM.cases if c.axes["batch_seq_len"] <= 4096]


def _inputs(seq, training=True):
    inputs = REFERENCE.make_inputs({"batch_seq_len": seq, "n_routed_experts": 256, "num_experts_per_tok": 8}, "cpu")
    inputs["training"] = torch.tensor([training])
    return inputs


def _assert_passes(out, ref, tolerance):
    check = compare_output("grad_expert_mask_out", OUT_SPEC, out, ref, tolerance)
    assert check.status == "PASSED", check.reason
    assert check.matched_ratio == 1.0 and check.max_absolute_error <= 1e-6


@pytest.mark.parametrize("case", SMALL_CASES, ids=lambda c: c.uuid[:8])
def test_torch_path_passes_full_size_cases(case, seed):
    inputs = _inputs(case.axes["batch_seq_len"])
    out = torch.empty_like(inputs["grad_expert_mask"])
    returned = kernel.run(*inputs.values(), out)
    assert returned is out
    _assert_passes(out, REFERENCE.run(*inputs.values()), case.tolerance)


@pytest.mark.parametrize("seq,training", [(37, 1), (1, 0)])
def test_triton_kernel_under_interpreter(interpreted, seq, training):
    (check,) = interpreted("load_balance", seq, training)
    assert check["status"] == "PASSED", check["reason"]
    assert check["matched_ratio"] == 1.0 and check["max_absolute_error"] <= 1e-6


def test_constant_depends_on_the_device_scalars_not_on_unused_inputs(seed):
    inputs = _inputs(64)
    base = kernel.run(*inputs.values(), torch.empty(64, 256))
    inputs["topk_idx"] = torch.zeros_like(inputs["topk_idx"])
    inputs["expert_mask"] = torch.zeros_like(inputs["expert_mask"])
    assert torch.equal(kernel.run(*inputs.values(), torch.empty(64, 256)), base)
    inputs["grad_load_balance_loss"] = inputs["grad_load_balance_loss"] + 64 * 8
    shifted = kernel.run(*inputs.values(), torch.empty(64, 256))
    torch.testing.assert_close(shifted - base, torch.ones(64, 256), atol=1e-5, rtol=0)
