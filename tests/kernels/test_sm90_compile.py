"""Our Triton kernels compiled for an H200 (sm_90) with the ptxas that ships in Triton's wheel, no GPU needed.

The interpreter never lowers a kernel to PTX, so it cannot see what only the GPU compiler checks: tl.dot
operand dtypes, layouts of bf16/fp16 tensor-core products, and whether the pipelined tiles fit in shared
memory. Each kernel is compiled with the exact tile configurations the GPU path launches, specialised as a
launch on the real shapes would be (16-byte aligned pointers; H = 4096 and F = 14336 divisible by 16).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from kernelindex.kernels.moe_load_balance_bwd import kernel as load_balance
from kernelindex.kernels.moe_token_scatter_bwd import triton_path

SM90 = GPUTarget("cuda", 90, 32)
SM90_SHARED_LIMIT = 232448  # bytes of shared memory one block may opt into on sm_90
DIVISIBLE_BY_16 = {"H", "F", "M", "N", "a_stride", "col0"}

if not (Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas").exists():
    pytest.skip("this Triton install ships no ptxas", allow_module_level=True)

GATE_TYPES = {
    "a_hi_ptr": "*bf16",
    "a_lo_ptr": "*bf16",
    "w2_ptr": "*bf16",
    "w1o_ptr": "*bf16",
    "gate_ptr": "*bf16",
    "up_ptr": "*bf16",
    "ub_ptr": "*bf16",
    "u16_ptr": "*fp16",
    "n_tok": "i32",
    "H": "i32",
    "F": "i32",
}
ROWS_TYPES = {
    "u_ptr": "*bf16",
    "w3_ptr": "*bf16",
    "w1_ptr": "*bf16",
    "idx_ptr": "*i64",
    "out_ptr": "*bf16",
    "n_tok": "i32",
    "H": "i32",
    "F": "i32",
}
WGRAD_TYPES = {
    "a_ptr": "*fp16",
    "b_ptr": "*fp16",
    "out_ptr": "*bf16",
    "K": "i32",
    "M": "i32",
    "N": "i32",
    "a_stride": "i32",
    "col0": "i32",
}
GATHER_TYPES = {
    "go_ptr": "*bf16",
    "idx_ptr": "*i64",
    "x_ptr": "*bf16",
    "eo_ptr": "*bf16",
    "sw_ptr": "*bf16",
    "grw_ptr": "*bf16",
    "geo_hi_ptr": "*bf16",
    "geo_lo_ptr": "*bf16",
    "geo16_ptr": "*fp16",
    "x16_ptr": "*fp16",
    "H": "i32",
}
BALANCE_TYPES = {
    "gm_ptr": "*fp32",
    "gtpe_ptr": "*fp32",
    "glb_ptr": "*fp32",
    "train_ptr": "*u8",
    "out_ptr": "*fp32",
    "n_rows": "i32",
    "inv_sk": "fp32",
}


def _configs():
    """(kernel, argument types, constexprs, launch options) for every configuration the GPU path uses."""
    seen = []
    for n_tok in (64, 128, 2048):  # the three branches of _launch_params
        gate, rows, wgrad = triton_path._launch_params(n_tok, True)
        for fn, types, params, extra in (
            (triton_path.gate_grad_kernel, GATE_TYPES, gate, {}),
            (triton_path.row_grad_scatter_kernel, ROWS_TYPES, rows, {}),
            (triton_path.weight_grad_kernel, WGRAD_TYPES, wgrad, {"A_ONCE": False}),
            (triton_path.weight_grad_kernel, WGRAD_TYPES, wgrad, {"A_ONCE": True}),
        ):
            tiles = {k: v for k, v in params.items() if k not in ("num_warps", "num_stages")}
            options = {
                "num_warps": params["num_warps"],
                "num_stages": params["num_stages"],
                "enable_fp_fusion": triton_path.FP_FUSION,
            }
            item = (fn, types, {**tiles, **extra, "DOT_F32": False}, options)
            if item not in seen:
                seen.append(item)
    seen.append(
        (
            triton_path.gather_rows_kernel,
            GATHER_TYPES,
            {"BLOCK_H": 1024},
            {"num_warps": 4, "enable_fp_fusion": triton_path.FP_FUSION},
        )
    )
    seen.append(
        (
            load_balance.load_balance_bwd_kernel,
            BALANCE_TYPES,
            {"E": 256, "BLOCK_ROWS": load_balance.BLOCK_ROWS},
            {"num_warps": 4, "enable_fp_fusion": load_balance.FP_FUSION},
        )
    )
    return seen


CONFIGS = _configs()


@pytest.mark.parametrize(
    "fn,types,constexprs,options",
    CONFIGS,
    ids=[f"{c[0].__name__}-{'-'.join(f'{k}{v}' for k, v in {**c[2], **c[3]}.items())}" for c in CONFIGS],
)
def test_kernel_compiles_for_sm90_within_shared_memory(fn, types, constexprs, options):
    names = list(inspect.signature(fn.fn).parameters)
    signature = {n: types.get(n, "constexpr") for n in names}
    assert set(types) <= set(names), f"{fn.__name__}: argument list changed, update the types here"
    attrs = {
        (i,): [["tt.divisibility", 16]]
        for i, n in enumerate(names)
        if types.get(n, "").startswith("*") or n in DIVISIBLE_BY_16
    }
    compiled = triton.compile(
        ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs), target=SM90, options=options
    )
    assert "cubin" in compiled.asm and compiled.asm["cubin"]
    assert compiled.metadata.shared <= SM90_SHARED_LIMIT, (fn.__name__, constexprs, compiled.metadata.shared)
