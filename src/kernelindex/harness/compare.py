"""The correctness rules, applied to one output of one call: each benchmark's own, and ours.

A problem is judged by the rule of the benchmark it comes from (`COMPARATORS`, by the problem's
format; the name is written into the run's protocol, so runs judged differently never share a
comparison key): SOL-ExecBench's error statistics (every dtype cast to f32; a case passes when the
matched ratio of |out − ref| ≤ atol + rtol·|ref| reaches the tolerance's, no value in either tensor
is non-finite, the output is not all zeros against a non-zero reference, and no error passes the
cap) or FlashInfer-Bench's (no NaN or Inf in the output; every element within atol or within
rtol, or 95% of them for its low-bit definitions). A case is judged by its own tolerance:
SOL-ExecBench's workloads carry one; FlashInfer-Bench's do not, and the loader gives each case its
BenchmarkConfig's defaults (`formats.problem.flashinfer_bench_tolerance`), which its records then
state. A format added later adds one row. tests/harness/test_judge_agreement.py holds each
restated rule to the benchmark's own code on fresh random cases. FlashInfer-Bench's sampling
definitions are no output-by-output matter: `sampling_judge` judges their draws instead.

`compare_output` is our own stricter rule (below), run beside as a second opinion: where it
disagrees, the benchmark's verdict stands and the run says so.

Floats are compared after upcasting to f32 (f64 stays f64, so a double-precision kernel is not
judged at single precision); integer, bool and packed fp4 outputs must match exactly, because a
relative tolerance on an index or a count is meaningless.

An element is matched when |out − ref| ≤ atol + rtol·|ref|. A tolerance that asks for a matched
ratio below 1 lets a few elements miss that bound, never by an unbounded amount: no output may
hold a NaN or an infinity the reference does not, and every unmatched element must lie within
OUTLIER_BOUND × (atol + rtol·max|ref|) of the reference (the output's own scale), or within the
tolerance's max_error_cap where one is given. The worst error among unmatched elements is kept
with each check (max_unmatched_error) and shown with the run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from kernelindex.formats.definition import TensorSpec
from kernelindex.formats.dtypes import DTYPES
from kernelindex.formats.workload import Tolerance
from kernelindex.harness.dtypes import name_of


@dataclass
class OutputCheck:
    name: str
    status: str  # PASSED | INCORRECT_SHAPE | INCORRECT_DTYPE | INCORRECT_NUMERICAL
    max_absolute_error: float = 0.0
    max_relative_error: float = 0.0
    matched_ratio: float = 1.0
    has_nan: bool = False
    has_inf: bool = False
    reason: str = ""
    max_unmatched_error: float = 0.0  # worst absolute error among the elements outside atol + rtol·|ref|

    def to_dict(self) -> dict:
        return asdict(self)


OUTLIER_BOUND = 10.0


def _finite(x: float) -> float:
    return x if math.isfinite(x) else 1e308


def _identical_passes(check: Check) -> Check:
    """A rule's verdict, decided at once where the output is bit for bit the reference and holds no NaN
    or infinity, not even cast to f32 (`_all_finite`): every rule here then finds no error, every element matched, no zeros against a non-zero
    reference, and passes (`check.__wrapped__` is the full computation; a test holds the two equal). A
    correct output often is identical, and the full statistics of a 2 MiB output cost tens of
    milliseconds a call on a loaded machine, which every checked call of every candidate pays."""

    @functools.wraps(check)
    def checked(name: str, spec: TensorSpec, out, ref, tol: Tolerance) -> OutputCheck:
        sides = _comparable(name, spec, out, ref)
        if isinstance(sides, OutputCheck):
            return sides
        out_t, ref_t = sides
        if same_bits(out_t, ref_t) and _all_finite(out_t, spec):
            return OutputCheck(name, "PASSED")
        return check(name, spec, out_t, ref_t, tol)  # (on the CPU already: not copied from a GPU twice)

    return checked


def same_bits(a, b) -> bool:
    """Whether two tensors hold the same bytes, compared as the widest integers both views allow: bytes
    one at a time are several times slower (4 MiB: 15 ms against 2 ms as int64, loaded machine)."""
    import torch

    x, y = a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)
    for wide in (torch.int64, torch.int32, torch.int16):
        try:
            return bool(torch.equal(x.view(wide), y.view(wide)))
        except RuntimeError:  # a size or an offset the wider type does not divide
            continue
    return bool(torch.equal(x, y))


def _all_finite(tensor, spec: TensorSpec) -> bool:
    """Finite as an f32 cast too: both benchmarks judge at f32, where an f64 past its range is infinite."""
    import torch

    if DTYPES[spec.dtype].kind != "float":
        return True  # integers, bools and packed bytes hold no NaN or infinity
    wide = tensor if tensor.dtype == torch.float32 else tensor.to(torch.float32)
    return bool(torch.isfinite(wide).all())


def _comparable(name: str, spec: TensorSpec, out, ref):
    """Both sides as CPU tensors of one shape and dtype, or the check that says why they are not."""
    import torch

    if spec.is_scalar:
        out_t, ref_t = torch.as_tensor(out), torch.as_tensor(ref)
    else:
        if not isinstance(out, torch.Tensor):
            return OutputCheck(name, "INCORRECT_DTYPE", reason=f"returned {type(out).__name__}, expected a tensor")
        out_t, ref_t = out, ref
        if tuple(out_t.shape) != tuple(ref_t.shape):
            return OutputCheck(
                name, "INCORRECT_SHAPE", reason=f"shape {tuple(out_t.shape)}, expected {tuple(ref_t.shape)}"
            )
        if out_t.dtype != ref_t.dtype:
            return OutputCheck(
                name, "INCORRECT_DTYPE", reason=f"dtype {name_of(out_t.dtype)}, expected {name_of(ref_t.dtype)}"
            )
    return out_t.detach().cpu(), ref_t.detach().cpu()


@_identical_passes
def compare_output(name: str, spec: TensorSpec, out, ref, tol: Tolerance) -> OutputCheck:
    """Our rule (``kernelindex_strict``): exact integers, bounded outliers, NaN/Inf only where the reference has them."""
    import torch

    sides = _comparable(name, spec, out, ref)
    if isinstance(sides, OutputCheck):
        return sides
    out_t, ref_t = sides
    kind = DTYPES[spec.dtype].kind
    if kind in ("int", "bool", "packed"):
        if kind == "packed":
            a, b = out_t.view(torch.uint8), ref_t.view(torch.uint8)
        else:
            a, b = out_t.to(torch.int64), ref_t.to(torch.int64)
        equal = a == b
        matched = float(equal.float().mean()) if equal.numel() else 1.0
        diff = (a - b).abs() if kind != "packed" else (~equal).to(torch.int64)
        max_abs = float(diff.max()) if diff.numel() else 0.0
        status = "PASSED" if bool(equal.all()) else "INCORRECT_NUMERICAL"
        return OutputCheck(
            name,
            status,
            max_abs,
            0.0 if status == "PASSED" else 1.0,
            matched,
            reason="" if status == "PASSED" else f"{(~equal).sum().item()} elements differ (exact match required)",
        )
    stats = _float_stats(out_t, ref_t, tol)
    n, has_nan, has_inf = out_t.numel(), stats.has_nan, stats.has_inf
    matched = stats.matched / n if n else 1.0
    max_abs, max_rel, worst_missed, scale = stats.max_abs, stats.max_rel, stats.worst_missed, stats.scale
    bound = (
        tol.max_error_cap if tol.max_error_cap is not None else OUTLIER_BOUND * (tol.max_atol + tol.max_rtol * scale)
    )
    check = OutputCheck(name, "PASSED", max_abs, max_rel, matched, has_nan, has_inf, max_unmatched_error=worst_missed)
    if has_nan or has_inf:
        check.status, check.reason = "INCORRECT_NUMERICAL", f"output has {'NaN' if has_nan else 'Inf'}"
    elif matched < tol.required_matched_ratio:
        check.status = "INCORRECT_NUMERICAL"
        check.reason = f"{matched:.4%} of elements within atol {tol.max_atol} + rtol {tol.max_rtol}·|ref|, need {tol.required_matched_ratio:.2%}"
    elif worst_missed > bound:
        check.status = "INCORRECT_NUMERICAL"
        check.reason = (
            f"an unmatched element is off by {worst_missed:.3g}, beyond the bound {bound:.3g} for elements outside "
            + (
                "the error cap"
                if tol.max_error_cap is not None
                else f"the tolerance ({OUTLIER_BOUND:g} × (atol + rtol·max|ref|))"
            )
        )
    elif tol.max_error_cap is not None and max_abs > tol.max_error_cap:
        check.status, check.reason = "INCORRECT_NUMERICAL", f"max error {max_abs:.3g} above the cap {tol.max_error_cap}"
    elif n and not stats.out_nonzero and stats.ref_nonzero:
        check.status, check.reason = "INCORRECT_NUMERICAL", "output is all zeros, the reference is not"
    return check


CHUNK = 1 << 20  # elements per pass of `_float_stats`: its temporaries stay in the cache (a few MiB)


@dataclass
class _FloatStats:
    """What our rule needs of a float output, gathered a chunk at a time (`_float_stats`)."""

    matched: int = 0  # elements within atol + rtol·|ref| (both finite), or -inf on both sides where allowed
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst_missed: float = 0.0  # the largest error among finite, unmatched elements
    scale: float = 0.0  # max |ref| over its finite elements
    has_nan: bool = False
    has_inf: bool = False  # an infinity in the output, other than an allowed -inf where the reference has one
    out_nonzero: bool = False
    ref_nonzero: bool = False


def _float_stats(out_t, ref_t, tol: Tolerance) -> _FloatStats:
    """The statistics of the whole tensors, computed over slices of CHUNK elements: a maximum, a count
    and an any are the same over the slices as over the whole, and each slice's dozen temporaries fit in
    the cache, where whole-tensor temporaries (a 4096 × 14336 weight gradient: 235 MB each in f32) made
    checking every call of a large case take longer than running it. A NaN among the relative errors
    (a NaN reference) makes their maximum NaN, as one pass over the whole would."""
    import torch

    work = torch.float64 if out_t.dtype == torch.float64 else torch.float32
    tiny = torch.finfo(work).tiny
    xs, ys = out_t.reshape(-1), ref_t.reshape(-1)
    found = _FloatStats()
    rel_nan = False
    for start in range(0, xs.numel(), CHUNK):
        x, y = xs[start : start + CHUNK].to(work), ys[start : start + CHUNK].to(work)
        if _finite_slice(found, x, y, tol, tiny):
            continue
        neg_inf_ok = (x == -math.inf) & (y == -math.inf) if tol.allow_negative_inf else None
        inf = torch.isinf(x) if neg_inf_ok is None else torch.isinf(x) & ~neg_inf_ok
        both_finite = torch.isfinite(x) & torch.isfinite(y)
        y_abs = y.abs()
        err = torch.where(both_finite, (x - y).abs(), 0.0)
        within = (err <= tol.max_atol + tol.max_rtol * y_abs) & both_finite
        ok = within if neg_inf_ok is None else within | neg_inf_ok
        missed = ~ok & both_finite
        rel = float((err / y_abs.clamp_min(tiny)).max())
        rel_nan = rel_nan or math.isnan(rel)
        finite_ref = y_abs[torch.isfinite(y)]
        found.matched += int(ok.sum())
        found.max_abs = max(found.max_abs, float(err.max()))
        found.max_rel = max(found.max_rel, rel) if not math.isnan(rel) else found.max_rel
        found.worst_missed = (
            max(found.worst_missed, float(err[missed].max())) if bool(missed.any()) else found.worst_missed
        )
        found.scale = max(found.scale, float(finite_ref.max())) if finite_ref.numel() else found.scale
        found.has_nan = found.has_nan or bool(torch.isnan(x).any())
        found.has_inf = found.has_inf or bool(inf.any())
        found.out_nonzero = found.out_nonzero or bool(x.ne(0).any())
        found.ref_nonzero = found.ref_nonzero or bool(y.ne(0).any())
    found.max_abs, found.worst_missed = _finite(found.max_abs), _finite(found.worst_missed)
    found.max_rel = _finite(math.nan if rel_nan else found.max_rel)
    return found


def _finite_slice(found: _FloatStats, x, y, tol: Tolerance, tiny: float) -> bool:
    """`_float_stats` over a slice with no NaN or infinity on either side (most slices), in half the tensor
    operations: no masks of finiteness, and no zero test once a side has shown a non-zero. Returns False,
    having changed nothing, where a side holds one: the largest error or |reference| is then NaN or
    infinite (a NaN propagates through both maxima), and the slice takes the general path."""
    y_abs = y.abs()
    err = (x - y).abs_()
    max_abs, scale = float(err.max()), float(y_abs.max())
    if not (math.isfinite(max_abs) and math.isfinite(scale)):
        return False
    within = err <= y_abs.mul(tol.max_rtol).add_(tol.max_atol)
    count = int(within.sum())
    found.matched += count
    found.max_abs, found.scale = max(found.max_abs, max_abs), max(found.scale, scale)
    if count < err.numel():
        found.worst_missed = max(found.worst_missed, float(err[~within].max()))
    found.out_nonzero = found.out_nonzero or bool(x.ne(0).any())
    found.ref_nonzero = found.ref_nonzero or scale > 0
    found.max_rel = max(found.max_rel, float(err.div_(y_abs.clamp_min_(tiny)).max()))
    return True


def _bits(name: str, out_t, ref_t) -> OutputCheck:
    """fp4 pairs have no arithmetic in torch: both benchmarks' casts are undefined, so bit equality."""
    import torch

    equal = out_t.view(torch.uint8) == ref_t.view(torch.uint8)
    matched = float(equal.float().mean()) if equal.numel() else 1.0
    if bool(equal.all()):
        return OutputCheck(name, "PASSED", matched_ratio=matched)
    return OutputCheck(
        name, "INCORRECT_NUMERICAL", 1.0, 1.0, matched, reason=f"{(~equal).sum().item()} packed bytes differ"
    )


@_identical_passes
def sol_execbench_check(name: str, spec: TensorSpec, out, ref, tol: Tolerance) -> OutputCheck:
    """SOL-ExecBench's `check_tensor_sanity` and `compute_error_stats`, restated step for step on f32
    casts: integers and bools under the same tolerance; the all-zeros test by the vector norms of the
    whole tensors, before matching -inf are set aside (a norm that underflows reads as zeros, as there);
    an infinite error never matched; the matched ratio as 1 − missed/total, rounded as upstream rounds it."""
    import torch

    sides = _comparable(name, spec, out, ref)
    if isinstance(sides, OutputCheck):
        return sides
    if DTYPES[spec.dtype].kind == "packed":
        return _bits(name, *sides)
    x, y = (t.to(torch.float32) for t in sides)
    bad_x, bad_y = ~torch.isfinite(x), ~torch.isfinite(y)
    both = (x == -math.inf) & (y == -math.inf) if tol.allow_negative_inf else None
    if both is not None:
        bad_x, bad_y = bad_x & ~both, bad_y & ~both
    if bool(bad_x.any()) or bool(bad_y.any()):
        nan = bool(torch.isnan(x).any()) or bool(torch.isnan(y).any())
        where = "output" if bool(bad_x.any()) else "reference"
        return OutputCheck(
            name, "INCORRECT_NUMERICAL", has_nan=nan, has_inf=not nan, reason=f"{where} has {'NaN' if nan else 'Inf'}"
        )
    zeros = bool(torch.linalg.vector_norm(y) > 0) and bool(torch.linalg.vector_norm(x) == 0)
    if both is not None:
        x, y = x[~both], y[~both]
    if x.numel() == 0:
        return OutputCheck(name, "PASSED")
    error = (x - y).abs()
    missed = (error > tol.max_atol + tol.max_rtol * y.abs()) | ~torch.isfinite(error)
    matched = _matched_ratio(missed)
    max_abs = float(error.max())
    max_rel = _finite(float((error / y.abs().clamp_min(tol.max_atol)).max()))
    worst_missed = _finite(float(error[missed].max())) if bool(missed.any()) else 0.0
    check = OutputCheck(name, "PASSED", _finite(max_abs), max_rel, matched, max_unmatched_error=worst_missed)
    if zeros:
        check.status, check.reason = "INCORRECT_NUMERICAL", "output is all zeros, the reference is not"
    elif matched < tol.required_matched_ratio:
        check.status = "INCORRECT_NUMERICAL"
        check.reason = f"{matched:.4%} of elements within atol {tol.max_atol} + rtol {tol.max_rtol}·|ref|, need {tol.required_matched_ratio:.2%}"
    elif tol.max_error_cap is not None and max_abs > tol.max_error_cap:
        check.status, check.reason = "INCORRECT_NUMERICAL", f"max error {max_abs:.3g} above the cap {tol.max_error_cap}"
    return check


def _matched_ratio(missed) -> float:
    """1 − missed/total, clamped to [0, 1]: both benchmarks' own arithmetic, so a required ratio that
    lies on a fraction of the element count is met or missed as upstream decides it."""
    return max(0.0, min(1.0, 1.0 - float(missed.sum()) / float(missed.numel())))


@_identical_passes
def flashinfer_bench_check(name: str, spec: TensorSpec, out, ref, tol: Tolerance) -> OutputCheck:
    """FlashInfer-Bench's default evaluator, restated: no NaN or Inf in the output as it was returned
    (an f64 past f32's range is not one), then on f32 casts an element misses when beyond both atol
    and rtol, and the matched ratio must reach the tolerance's (`formats.problem.flashinfer_bench_tolerance`, set on each case as it loads)."""
    import torch

    sides = _comparable(name, spec, out, ref)
    if isinstance(sides, OutputCheck):
        return sides
    if DTYPES[spec.dtype].kind == "packed":
        return _bits(name, *sides)
    native = sides[0] if sides[0].dtype == torch.float64 else sides[0].to(torch.float32)
    nan, inf = bool(torch.isnan(native).any()), bool(torch.isinf(native).any())
    if nan or inf:
        return OutputCheck(
            name, "INCORRECT_NUMERICAL", has_nan=nan, has_inf=inf, reason=f"output has {'Inf' if inf else 'NaN'}"
        )
    x, y = (t.to(torch.float32) for t in sides)
    if x.numel() == 0:
        return OutputCheck(name, "PASSED")
    error = (x - y).abs()
    relative = error / (y.abs() + 1e-8)
    missed = (error > tol.max_atol) & (relative > tol.max_rtol)
    matched = _matched_ratio(missed)
    worst_missed = _finite(float(error[missed].max())) if bool(missed.any()) else 0.0
    check = OutputCheck(
        name,
        "PASSED",
        _finite(float(error.max())),
        _finite(float(relative.max())),
        matched,
        max_unmatched_error=worst_missed,
    )
    if matched < tol.required_matched_ratio:
        check.status = "INCORRECT_NUMERICAL"
        check.reason = (
            f"{int(missed.sum())} of {x.numel()} elements beyond both atol {tol.max_atol} and rtol {tol.max_rtol} "
            f"(need {tol.required_matched_ratio:.2%} of them within one)"
        )
    return check


Check = Callable[[str, TensorSpec, Any, Any, Tolerance], OutputCheck]


@dataclass(frozen=True)
class Comparator:
    name: str  # as written in the BenchmarkProtocol's correctness.comparator
    check: Check


# One row per problem format (`formats.problem.Problem.format`); KernelBench adds its own.
COMPARATORS: dict[str, Comparator] = {
    "sol_execbench": Comparator("sol_execbench_error_stats", sol_execbench_check),
    "flashinfer_bench": Comparator("flashinfer_bench_every_element", flashinfer_bench_check),
}
STRICT = Comparator("kernelindex_strict", compare_output)
COMPARATORS["kernelindex"] = STRICT  # our own packs: our rule is the rule (and the second opinion agrees)


def comparator_for(problem_format: str) -> Comparator:
    return COMPARATORS[problem_format]


def merge(checks: list[OutputCheck]) -> OutputCheck:
    """Worst case of one output over several calls: first failure wins (else the last pass that gives its
    figures, as the sampling rule's distance), errors are maxima."""
    first = checks[0]
    merged = OutputCheck(first.name, "PASSED")
    for check in checks:
        merged.max_absolute_error = max(merged.max_absolute_error, check.max_absolute_error)
        merged.max_relative_error = max(merged.max_relative_error, check.max_relative_error)
        merged.matched_ratio = min(merged.matched_ratio, check.matched_ratio)
        merged.has_nan |= check.has_nan
        merged.has_inf |= check.has_inf
        merged.max_unmatched_error = max(merged.max_unmatched_error, check.max_unmatched_error)
        if merged.status == "PASSED" and (check.status != "PASSED" or check.reason):
            merged.status, merged.reason = check.status, check.reason  # a pass says why only when figures back it
    return merged
