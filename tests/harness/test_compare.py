"""The correctness rule: atol + rtol·|ref|, matched ratio, cap, NaN/Inf, all zeros, exact integers, f64 in f64."""

from __future__ import annotations

import math
import secrets

import pytest
import torch

from kernelindex.formats.definition import TensorSpec
from kernelindex.formats.workload import Tolerance
from kernelindex.harness.compare import compare_output, merge

F32 = TensorSpec("out", ("n",), "float32")


def check(out, ref, spec=F32, **tol):
    return compare_output("out", spec, out, ref, Tolerance(**tol))


def test_elementwise_rule_and_matched_ratio():
    ref = torch.linspace(1, 2, 100)
    out = ref.clone()
    out[:2] += 0.5  # 2% of elements off
    result = check(out, ref, max_atol=1e-3, max_rtol=1e-3, required_matched_ratio=0.99)
    assert result.status == "INCORRECT_NUMERICAL" and result.matched_ratio == pytest.approx(0.98)
    assert result.max_absolute_error == pytest.approx(0.5)
    # a ratio of 0.98 lets 2% of elements miss the tolerance, but never by more than the outlier bound:
    # 10 × (atol + rtol·max|ref|) = 0.03 here, so 0.5 off still fails and 0.02 off passes
    outliers = check(out, ref, max_atol=1e-3, max_rtol=1e-3, required_matched_ratio=0.98)
    assert outliers.status == "INCORRECT_NUMERICAL" and "beyond the bound" in outliers.reason
    assert outliers.max_unmatched_error == pytest.approx(0.5)
    small = ref.clone()
    small[:2] += 0.02
    passed = check(small, ref, max_atol=1e-3, max_rtol=1e-3, required_matched_ratio=0.98)
    assert passed.status == "PASSED" and passed.max_unmatched_error == pytest.approx(0.02, rel=1e-3)
    # rtol scales with |ref|: 0.01 off on values near 2 passes with rtol 1e-2, not with 1e-3
    near = ref + 0.01
    assert check(near, ref, max_atol=0, max_rtol=1e-2).status == "PASSED"
    assert check(near, ref, max_atol=0, max_rtol=1e-3).status == "INCORRECT_NUMERICAL"


def test_a_matched_ratio_below_one_admits_no_huge_outliers():
    """1e30 written into 0.9% of the outputs, under a 0.99 ratio, fails and says how far off it was."""
    seed = secrets.randbits(32)
    gen = torch.Generator().manual_seed(seed)
    ref = torch.randn(10_000, generator=gen)
    out = ref.clone()
    out[torch.randperm(ref.numel(), generator=gen)[:90]] = 1e30
    result = check(out, ref, max_atol=1e-2, max_rtol=1e-2, required_matched_ratio=0.99)
    assert result.status == "INCORRECT_NUMERICAL" and result.matched_ratio == pytest.approx(0.991)
    assert result.max_unmatched_error == pytest.approx(1e30, rel=1e-3), seed


def test_error_cap_nan_inf_and_zeros():
    ref = torch.ones(1000)
    out = ref.clone()
    out[0] = 100.0
    assert check(out, ref).status == "INCORRECT_NUMERICAL"  # 99.9% match, but one element far out of bounds
    assert check(out, ref, max_error_cap=200.0).status == "PASSED"  # a stated cap is the bound instead
    assert check(out, ref, max_error_cap=1.0).status == "INCORRECT_NUMERICAL"
    nan = ref.clone()
    nan[5] = math.nan
    assert check(nan, ref).has_nan and check(nan, ref).status == "INCORRECT_NUMERICAL"
    ref_inf, out_inf = ref.clone(), ref.clone()
    ref_inf[3] = out_inf[3] = -math.inf
    assert check(out_inf, ref_inf).status == "INCORRECT_NUMERICAL"
    assert check(out_inf, ref_inf, allow_negative_inf=True).status == "PASSED"
    small = torch.full((1000,), 1e-3)
    zeros = check(torch.zeros(1000), small)
    assert zeros.status == "INCORRECT_NUMERICAL" and "all zeros" in zeros.reason  # within atol, still refused
    assert check(torch.zeros(10), torch.zeros(10)).status == "PASSED"


def test_integers_and_bools_must_match_exactly():
    ints = TensorSpec("out", ("n",), "int64")
    ref = torch.arange(1000, 2000)
    off = ref.clone()
    off[7] += 1  # relative error 5e-4, within any float tolerance
    assert check(off, ref, ints, max_rtol=1e-2).status == "INCORRECT_NUMERICAL"
    assert check(ref.clone(), ref, ints).status == "PASSED"
    flags = TensorSpec("out", ("n",), "bool")
    b = torch.rand(100) < 0.5
    assert check(~b, b, flags).status == "INCORRECT_NUMERICAL"


def test_f64_is_compared_in_f64():
    f64 = TensorSpec("out", ("n",), "float64")
    ref = torch.full((10,), 1.0 + 1e-10, dtype=torch.float64)
    out = torch.ones(10, dtype=torch.float64)
    assert float(ref.float()[0]) == float(out.float()[0])  # f32 cannot see the difference
    assert check(out, ref, f64, max_atol=1e-13, max_rtol=0).status == "INCORRECT_NUMERICAL"


def test_shape_and_dtype_mismatches():
    ref = torch.ones(4)
    assert check(torch.ones(5), ref).status == "INCORRECT_SHAPE"
    assert check(torch.ones(4, dtype=torch.float64), ref).status == "INCORRECT_DTYPE"
    assert check([1.0] * 4, ref).status == "INCORRECT_DTYPE"


def test_merge_keeps_the_worst():
    ok = check(torch.ones(4), torch.ones(4))
    bad = check(torch.ones(4) * 2, torch.ones(4))
    merged = merge([ok, bad, ok])
    assert merged.status == "INCORRECT_NUMERICAL" and merged.max_absolute_error == 1.0 and merged.matched_ratio == 0.0


@pytest.mark.parametrize("dtype", sorted(__import__("kernelindex.harness.dtypes", fromlist=["DTYPES"]).DTYPES))
def test_every_dtype_generates_and_compares(dtype):
    from kernelindex.harness.inputs import _random_tensor

    spec = TensorSpec("x", ("n",), dtype)
    value = _random_tensor(torch, spec, (64,), {"n": 64}, "cpu", seed=7)
    assert compare_output("x", spec, value, value.clone(), Tolerance()).status == "PASSED"
    flipped = value.clone()
    if dtype == "bool":
        flipped[:8] = ~flipped[:8]
    elif flipped.element_size() == 1:  # fp8 / fp4 / int8: change the bits of a few elements
        flipped.view(torch.uint8)[:8] ^= 0x35
    else:
        flipped[:8] = (flipped[:8].to(torch.float64) * -3 + 5).to(flipped.dtype)
    assert not torch.equal(flipped.view(torch.uint8), value.view(torch.uint8))
    assert (
        compare_output(
            "x", spec, flipped, value, Tolerance(max_atol=1e-3, max_rtol=1e-3, required_matched_ratio=1.0)
        ).status
        != "PASSED"
    )


@pytest.mark.parametrize("rule", ["compare_output", "sol_execbench_check", "flashinfer_bench_check"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "bool"])
def test_an_identical_output_is_decided_as_the_full_rule_decides_it(rule, dtype):
    """The shortcut for a bit-identical output gives exactly the full computation's check, and an
    identical output with a NaN or an infinity still goes through the full rule (and fails)."""
    from kernelindex.harness import compare
    from kernelindex.harness.inputs import _random_tensor

    judge = getattr(compare, rule)
    spec = TensorSpec("x", ("n",), dtype)
    seed = secrets.randbits(32)
    value = _random_tensor(torch, spec, (257,), {"n": 257}, "cpu", seed=seed)
    tol = Tolerance(max_atol=1e-3, max_rtol=1e-3, required_matched_ratio=0.9)
    assert judge("x", spec, value, value.clone(), tol) == judge.__wrapped__("x", spec, value, value.clone(), tol)
    assert judge("x", spec, value, value.clone(), tol).status == "PASSED", seed
    if spec.dtype.startswith(("float", "bfloat")):
        for bad in (math.nan, math.inf):
            odd = value.clone()
            odd[3] = bad
            shortcut, full = (
                judge("x", spec, odd, odd.clone(), tol),
                judge.__wrapped__("x", spec, odd, odd.clone(), tol),
            )
            assert shortcut == full and shortcut.status == "INCORRECT_NUMERICAL", (bad, seed)


@pytest.mark.parametrize("size", [0, 1, 3, 6, 8, 4099])
def test_same_bits_sees_every_byte_whatever_the_size(size):
    from kernelindex.harness.compare import same_bits

    a = torch.randint(0, 256, (size,), dtype=torch.uint8, generator=torch.Generator().manual_seed(secrets.randbits(32)))
    assert same_bits(a, a.clone()) and same_bits(a[1:], a.clone()[1:])  # an odd offset too
    for where in {0, size // 2, size - 1} if size else set():
        b = a.clone()
        b[where] ^= 1
        assert not same_bits(a, b) and not same_bits(a.view(1, -1), b.view(1, -1)), where
    assert not same_bits(a, torch.cat([a, torch.zeros(1, dtype=torch.uint8)]))  # another length


def _whole_tensor_rule(out, ref, tol: Tolerance) -> tuple:
    """Our rule's statistics over the whole tensors at once, restated here from the rule's text: what the
    chunked computation must give exactly."""
    work = torch.float64 if out.dtype == torch.float64 else torch.float32
    x, y = out.reshape(-1).to(work), ref.reshape(-1).to(work)
    neg_inf_ok = (x == -math.inf) & (y == -math.inf) if tol.allow_negative_inf else torch.zeros_like(x, dtype=bool)
    both = torch.isfinite(x) & torch.isfinite(y)
    err = torch.where(both, (x - y).abs(), torch.zeros_like(x))
    rel = err / y.abs().clamp_min(torch.finfo(work).tiny)
    ok = ((err <= tol.max_atol + tol.max_rtol * y.abs()) & both) | neg_inf_ok
    missed = ~ok & both
    n = x.numel()

    def top(t) -> float:
        value = float(t.max()) if t.numel() else 0.0
        return value if math.isfinite(value) else 1e308

    return (
        float(ok.to(torch.float64).mean()) if n else 1.0,
        top(err),
        top(rel),
        top(err[missed]),
        float(y[torch.isfinite(y)].abs().max()) if bool(torch.isfinite(y).any()) else 0.0,
        bool(torch.isnan(x).any()),
        bool((torch.isinf(x) & ~neg_inf_ok).any()),
        bool(x.ne(0).any()),
        bool(y.ne(0).any()),
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_the_chunked_statistics_are_the_whole_tensors(dtype, monkeypatch):
    """Over slices as small as a few elements, with NaN, infinities, zeros and huge values placed at random,
    the statistics are exactly those of one pass over the whole tensors."""
    from kernelindex.harness import compare

    seed = secrets.randbits(32)
    gen = torch.Generator().manual_seed(seed)
    for trial in range(30):
        monkeypatch.setattr(compare, "CHUNK", int(torch.randint(1, 40, (1,), generator=gen)))
        n = int(torch.randint(0, 300, (1,), generator=gen))
        ref = torch.randn(n, generator=gen, dtype=torch.float64) * 10 ** int(torch.randint(-3, 4, (1,), generator=gen))
        out = ref + torch.randn(n, generator=gen, dtype=torch.float64) * 1e-2
        share = 0.02 * (trial % 3) / 2  # some trials all finite: whole slices take the finite one's shortcut
        for tensor in (out, ref):
            for odd in (math.nan, math.inf, -math.inf, 0.0, 1e300):
                picked = torch.rand(n, generator=gen) < share
                tensor[picked] = odd
        out, ref = out.to(dtype), ref.to(dtype)
        tol = Tolerance(
            max_atol=float(torch.rand(1, generator=gen)) * 1e-2,
            max_rtol=float(torch.rand(1, generator=gen)) * 1e-2,
            allow_negative_inf=bool(trial % 2),
        )
        stats = compare._float_stats(out, ref, tol)
        chunked = (
            stats.matched / n if n else 1.0,
            stats.max_abs,
            stats.max_rel,
            stats.worst_missed,
            stats.scale,
            stats.has_nan,
            stats.has_inf,
            stats.out_nonzero,
            stats.ref_nonzero,
        )
        assert chunked == _whole_tensor_rule(out, ref, tol), (seed, trial)
