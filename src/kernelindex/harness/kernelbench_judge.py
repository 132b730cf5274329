"""KernelBench's correctness rule, as its `eval_kernel_against_ref` states it, in our terms.

Upstream compares each trial's output with ``torch.allclose(ref, out, atol=t, rtol=t)`` where
``t`` depends on the precision (fp32 1e-4; fp16 and bf16 1e-2; v0/v0.1 used 1e-2 throughout), after
checking the shapes, over a number of correctness trials on fresh inputs (its scripts use 5).

Our comparator (`compare.py`) gives the same verdict with ``required_matched_ratio = 1`` for every
finite output: an element passes when |out − ref| ≤ atol + rtol·|ref|, which is allclose's test.
Where the two differ we are stricter, and say so in the protocol: an infinity in both outputs
passes allclose but not ours, an all-zero output against a non-zero reference fails ours even
inside the tolerance, and every timed call is checked too, not only the trials.
"""

from __future__ import annotations

from kernelindex.formats.workload import Tolerance

TRIALS = 5
TOLERANCES = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}
DEFAULT_PRECISION = "float32"
RULE = "kernelbench_allclose"


def tolerance_for(dtype: str) -> Tolerance:
    """Upstream's per-precision atol = rtol; outputs of other dtypes are judged at fp32's (integers
    and bools are compared exactly by our comparator, which allclose's tolerance admits too)."""
    value = TOLERANCES.get(dtype, TOLERANCES[DEFAULT_PRECISION])
    return Tolerance(max_atol=value, max_rtol=value, required_matched_ratio=1.0)


def describe(precision: str, trials: int) -> str:
    """The rule as recorded in the protocol of every run it judges."""
    value = TOLERANCES.get(precision, TOLERANCES[DEFAULT_PRECISION])
    return (
        f"{RULE}: torch.allclose(out, ref, atol={value:g}, rtol={value:g}) ({precision}), shapes equal, "
        f"{trials} correctness trials on fresh inputs; also every timed call checked, an infinity or NaN or an "
        "all-zero output against a non-zero reference refused (stricter than upstream)"
    )


def allclose_verdict(out, ref, precision: str) -> bool:
    """Upstream's own test on one output, for conformance checks against our comparator."""
    import torch

    if tuple(out.shape) != tuple(ref.shape):
        return False
    value = TOLERANCES.get(precision, TOLERANCES[DEFAULT_PRECISION])
    return bool(torch.allclose(ref, out, atol=value, rtol=value))
