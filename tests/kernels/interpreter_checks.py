"""Run one of our Triton kernels under Triton's interpreter and compare it with our reference.

Triton fixes interpreter mode when it is first imported (its own library functions are decorated then),
so these checks run in a fresh process with TRITON_INTERPRET=1; the tests call this file as a script.
The interpreter keeps bf16 as raw 16-bit integers: our kernels cast every bf16 load to f32 before any
arithmetic and multiply f32 operands when not on a GPU, which is what makes bf16 inputs safe here.
Prints one JSON object: the harness comparison of every output.
"""

from __future__ import annotations

import json
import os
import sys

import torch


def _checks(definition, outs, refs, tolerance):
    from kernelindex.harness.compare import compare_output

    return [
        compare_output(name, spec, o, r, tolerance).to_dict()
        for (name, spec), o, r in zip(definition.outputs.items(), outs, refs)
    ]


def load_balance(seq: int, training: bool, seed: int) -> list[dict]:
    from kernelindex.formats.problem import load_problem
    from kernelindex.harness.inputs import load_reference
    from kernelindex.kernels.moe_load_balance_bwd import kernel
    from kernelindex.problems import LOAD_BALANCE_BWD

    problem = load_problem(LOAD_BALANCE_BWD)
    reference = load_reference(problem.definition)
    torch.manual_seed(seed)
    inputs = reference.make_inputs({"batch_seq_len": seq, "n_routed_experts": 256, "num_experts_per_tok": 8}, "cpu")
    inputs["training"] = torch.tensor([training])
    out = torch.full_like(inputs["grad_expert_mask"], float("nan"))
    # at most two programs over the row tiles: the grid-stride loop runs more than once per program
    kernel.forward_triton(
        inputs["grad_tokens_per_expert"],
        inputs["grad_expert_mask"],
        inputs["grad_load_balance_loss"],
        8,
        inputs["training"],
        out,
        max_programs=2,
    )
    return _checks(problem.definition, [out], [reference.run(*inputs.values())], problem.cases[0].tolerance)


def token_scatter(batch: int, n_tok: int, hidden: int, ffn: int, seed: int) -> list[dict]:
    from kernelindex.formats.problem import load_problem
    from kernelindex.harness.inputs import load_reference
    from kernelindex.kernels.moe_token_scatter_bwd import triton_path
    from kernelindex.problems import TOKEN_SCATTER_BWD

    problem = load_problem(TOKEN_SCATTER_BWD)
    reference = load_reference(problem.definition)
    torch.manual_seed(seed)
    axes = {"batch_seq_len": batch, "num_tokens": n_tok, "hidden_dim": hidden, "ffn_dim": ffn}
    inputs = reference.make_inputs(axes, "cpu")
    shapes = [(batch, hidden), (batch,), (ffn, hidden), (hidden, ffn), (ffn, hidden)]
    outs = [torch.full(s, float("nan"), dtype=torch.bfloat16) for s in shapes]
    triton_path.forward(*inputs.values(), *outs)
    # the tightest published tolerance (case 8), whatever the shape
    tolerance = min(problem.cases, key=lambda c: c.tolerance.max_atol).tolerance
    return _checks(problem.definition, outs, reference.run(*inputs.values()), tolerance)


def _assert_interpreted(module_names):
    from triton.runtime.interpreter import InterpretedFunction

    for name in module_names:
        module = sys.modules[name]
        kernels = [v for k, v in vars(module).items() if k.endswith("_kernel")]
        assert kernels and all(isinstance(k, InterpretedFunction) for k in kernels), f"{name}: not interpreted"


if __name__ == "__main__":
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    which, *args = sys.argv[1:]
    if which == "load_balance":
        result = load_balance(int(args[0]), args[1] == "1", int(args[2]))
        _assert_interpreted(["kernelindex.kernels.moe_load_balance_bwd.kernel"])
    else:
        result = token_scatter(*map(int, args))
        _assert_interpreted(["kernelindex.kernels.moe_token_scatter_bwd.triton_path"])
    print(json.dumps(result))
