"""benchmarks/upstream_conformance.py's own judgements: the perturbed copy it runs must fail under the
widest tolerance SOL-ExecBench's problems give, and only a reference's GPU-only failures are named so."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kernelindex.formats.definition import TensorSpec
from kernelindex.formats.workload import Tolerance
from kernelindex.harness.compare import sol_execbench_check

DRIVER = Path(__file__).resolve().parents[2] / "benchmarks" / "upstream_conformance.py"
WIDEST = Tolerance(max_atol=17.0, max_rtol=0.05, required_matched_ratio=0.98)  # the loosest in the 235 problems
# SOL-ExecBench casts a bool to f32 under the same tolerance: with atol >= 1 no flipped bool can fail
# (its own rule); the one problem with a bool output gives atol 1e-5
BOOL_TOLERANCE = Tolerance(max_atol=1e-5, max_rtol=0.01)


def _driver():
    spec = importlib.util.spec_from_file_location("upstream_conformance", DRIVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outputs(seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {
        "bfloat16": (torch.randn(64, 33, generator=generator) * 100).to(torch.bfloat16),
        "float32": torch.randn(257, generator=generator),
        "int64": torch.randint(-5, 5, (40,), generator=generator),
        "bool": torch.rand(50, generator=generator) > 0.5,
    }


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "int64", "bool"])
def test_the_perturbed_copy_fails_where_the_reference_passes(dtype):
    seed = random.SystemRandom().randrange(1 << 30)
    source = f"import torch\n\ndef run(x):\n    return x.clone()\n{_driver().PERTURBED_RUN}"
    namespace: dict = {}
    exec(compile(source, "reference.py", "exec"), namespace)  # the source the driver writes for its copy
    reference = _outputs(seed)[dtype]
    spec = TensorSpec("out", ("n",), dtype)
    tolerance = BOOL_TOLERANCE if dtype == "bool" else WIDEST
    same = sol_execbench_check("out", spec, namespace["_reference_run"](reference), reference, tolerance)
    assert same.status == "PASSED"
    moved = sol_execbench_check("out", spec, namespace["run"](reference), reference, tolerance)
    assert moved.status == "INCORRECT_NUMERICAL", (seed, moved)


def _suite(status: str, log: str):
    return SimpleNamespace(cases=[SimpleNamespace(status=status, log=log)])


def test_only_a_references_failure_for_want_of_a_gpu_or_memory_is_named_so():
    driver = _driver()
    said = "Traceback ...\nAssertionError: Torch not compiled with CUDA enabled\n"
    assert driver.wants(_suite("INVALID_REFERENCE", said)) == ("NEEDS_GPU", "the reference asks for device cuda itself")
    scaled = "ValueError: Invalid scaling configuration.\nGot mat_a.dtype()=Float4_e2m1fn_x2"
    assert "block-scaled" in driver.wants(_suite("INVALID_REFERENCE", scaled))[1]
    full = "RuntimeError: [enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory: 2684354560"
    assert driver.wants(_suite("INVALID_REFERENCE", full))[0] == "NEEDS_MEMORY"
    capped = "reference process: reference process exceeded the memory limit of 16384 MiB"
    assert driver.wants(_suite("INVALID_REFERENCE", capped))[0] == "NEEDS_MEMORY"
    assert driver.wants(_suite("RUNTIME_ERROR", said)) is None  # the solution's failure is never excused
    assert driver.wants(_suite("RUNTIME_ERROR", full)) is None
    assert driver.wants(_suite("INVALID_REFERENCE", "IndexError: index 3 is out of bounds")) is None
