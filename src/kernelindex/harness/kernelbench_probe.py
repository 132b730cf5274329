"""Run in a child process of its own: what a KernelBench problem's inputs and outputs look like.

The problem file is run here, never in the evaluating parent: on torch's meta device first (shapes
and dtypes without allocating anything, so a problem too large for the machine can be refused
before it runs), and on the CPU only when an operator has no meta kernel and the inputs are small.
Reads the problem's source on stdin, writes one JSON object on stdout.
"""

from __future__ import annotations

import json
import math
import sys
import types

CPU_FALLBACK_BYTES = 1 << 30
SEED = 42
MAX_EXACT_INT = 2**53


def _describe(value, where: str, scalars: bool = False) -> dict:
    """A tensor's shape, dtype and bytes; given ``scalars``, an int, float or bool as its value (passed
    to forward as it is, as KernelBench passes it)."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."), "bytes": _bytes(value)}
    if scalars and isinstance(value, (bool, int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where} is {value}: a scalar input must be finite (a record holds no NaN)")
        if isinstance(value, int) and abs(value) > MAX_EXACT_INT:
            raise ValueError(f"{where} is {value}: past the integers a record holds exactly (2**53)")
        dtype = "bool" if isinstance(value, bool) else "int64" if isinstance(value, int) else "float64"
        return {"scalar": value, "dtype": dtype, "bytes": 0}
    kinds = "tensors and int, float or bool scalars are" if scalars else "tensors are"
    raise TypeError(f"{where} is a {type(value).__name__}; only {kinds} supported")


def _bytes(tensor) -> int:
    return tensor.numel() * tensor.element_size()


def _run(source: str, device: str) -> dict:
    import torch

    module = types.ModuleType("kernelbench_problem")
    with torch.device(device):
        exec(compile(source, "<kernelbench problem>", "exec"), module.__dict__)
        torch.manual_seed(SEED)
        init = module.get_init_inputs()
        torch.manual_seed(SEED)
        model = module.Model(*init)
        inputs = module.get_inputs()
        described = [_describe(x, f"get_inputs()[{i}]", scalars=True) for i, x in enumerate(inputs)]
        if device == "cpu" and sum(d["bytes"] for d in described) > CPU_FALLBACK_BYTES:
            raise MemoryError("inputs too large to probe on the CPU")
        with torch.no_grad():
            out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    state = [*model.parameters(), *model.buffers()]
    return {
        "inputs": described,
        "outputs": [_describe(x, f"forward output {i}") for i, x in enumerate(outs)],
        "tuple": isinstance(out, (tuple, list)),
        "parameter_bytes": sum(_bytes(t) for t in state),
        "probed_on": device,
    }


def main() -> None:
    source = sys.stdin.read()
    try:
        try:
            answer = _run(source, "meta")
        except (NotImplementedError, RuntimeError):  # an operator without a meta kernel
            answer = _run(source, "cpu")
    except BaseException as exc:  # reported to the parent as the problem's fault, never raised there
        answer = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
