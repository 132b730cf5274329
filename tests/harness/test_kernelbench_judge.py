"""Our comparator under KernelBench's tolerances gives upstream's allclose verdict on finite outputs."""

from __future__ import annotations

import torch

from kernelindex.formats.definition import TensorSpec
from kernelindex.harness.compare import compare_output
from kernelindex.harness.kernelbench_judge import TOLERANCES, allclose_verdict, tolerance_for


def test_verdicts_agree_with_allclose_over_seeded_perturbations():
    gen = torch.Generator().manual_seed(20261202)
    for precision, atol in TOLERANCES.items():
        dtype = getattr(torch, precision)
        spec = TensorSpec("out", ("n",), precision)
        agreed = {True: 0, False: 0}
        for trial in range(60):
            ref = torch.randn(257, generator=gen).to(dtype)
            size = atol * (0.2 + 3.0 * torch.rand(1, generator=gen).item())  # around the tolerance on both sides
            noise = torch.zeros(257)
            noise[torch.randint(0, 257, (1 + trial % 4,), generator=gen)] = size
            out = (ref.float() + noise).to(dtype)
            ours = compare_output("out", spec, out, ref, tolerance_for(precision)).status == "PASSED"
            assert ours == allclose_verdict(out, ref, precision), (precision, trial, size)
            agreed[ours] += 1
        assert agreed[True] and agreed[False]  # both verdicts were exercised


def test_where_we_are_stricter_than_allclose():
    ref = torch.tensor([float("inf"), 1.0])
    assert allclose_verdict(ref.clone(), ref, "float32")
    assert (
        compare_output("o", TensorSpec("o", ("n",), "float32"), ref.clone(), ref, tolerance_for("float32")).status
        != "PASSED"
    )
