"""Random cases for the judge-agreement checks (test_judge_agreement.py, benchmarks/judge_agreement.py)
and each benchmark's verdict on them, given by its own code.

A case is one output beside its reference, drawn from a seed of its own so that one case reproduces
alone: a dtype of ours that both benchmarks cast to f32 (fp4's packed bytes they cannot cast), a
shape (0-d and empty ones among them), an output that is the reference moved by noise on both
sides of the tolerance's bound, a few elements far off, NaN and infinities in either tensor or
matching -inf, and a tolerance drawn around the benchmark's defaults with its optional fields.

SOL-ExecBench is not on PyPI: its source is read where ``$KERNELINDEX_SOL_EXECBENCH_SRC`` points
(its ``src`` folder). FlashInfer-Bench is the installed package; its evaluator is picked by its own
registry and run as its benchmark runs it, on the CPU (its ``torch.cuda.synchronize`` calls are
made no-ops while it judges).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import random
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kernelindex.formats.definition import Definition, TensorSpec
from kernelindex.formats.dtypes import DTYPES
from kernelindex.formats.errors import FormatError
from kernelindex.formats.problem import flashinfer_bench_tolerance
from kernelindex.formats.workload import TOLERANCE_DEFAULTS, Tolerance, parse_case
from kernelindex.harness.compare import COMPARATORS
from kernelindex.harness.dtypes import name_of, torch_dtype

SOL_SRC_VARIABLE = "KERNELINDEX_SOL_EXECBENCH_SRC"
BENCHMARKS = ("sol_execbench", "flashinfer_bench")
DRAWN_DTYPES = tuple(name for name, d in DTYPES.items() if d.kind != "packed")
# FlashInfer-Bench definition names: its low-bit evaluator takes those holding moe_fp8_block_scale
FIB_NAMES = (
    "gemm_n4096_k4096",
    "fused_add_rmsnorm_h2048",
    "moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048",
    "gqa_paged_decode_moe_fp8_block_scale",
    "moe_fp8_blockscale_routing",
)
FIB_CONFIG_KEYS = {"atol": "max_atol", "rtol": "max_rtol", "required_matched_ratio": "required_matched_ratio"}
WORKLOAD_PATH = Path("judge_agreement.jsonl")


@dataclass
class Case:
    seed: int
    benchmark: str
    out: torch.Tensor
    ref: torch.Tensor
    tolerance: dict  # SOL: the workload's tolerance object; FIB: BenchmarkConfig's atol/rtol/required_matched_ratio
    definition: str = "judge"
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"seed {self.seed}: {self.benchmark}, out {name_of(self.out.dtype)}{tuple(self.out.shape)}, "
            f"ref {name_of(self.ref.dtype)}{tuple(self.ref.shape)}, tolerance {self.tolerance}, "
            f"definition {self.definition!r}, {', '.join(self.notes) or 'plain noise'}"
        )


@dataclass(frozen=True)
class Verdict:
    status: str
    matched_ratio: float | None = None  # where the judge reached its error statistics and says it


@dataclass(frozen=True)
class Outcome:
    case: Case
    ours: Verdict
    theirs: Verdict | None  # None: upstream's own code raised on the case (`raised` says what)
    raised: str = ""

    @property
    def agreed(self) -> bool:
        if self.theirs is None or self.ours.status != self.theirs.status:
            return False
        a, b = self.ours.matched_ratio, self.theirs.matched_ratio
        return a is None or b is None or abs(a - b) <= 1e-9

    def describe(self) -> str:
        theirs = self.theirs if self.theirs is not None else f"raised {self.raised}"
        return f"{self.case.describe()}; ours {self.ours}, upstream {theirs}"


def sol_source() -> tuple[Path | None, str]:
    """Where SOL-ExecBench's source lies, or why it cannot be read."""
    given = os.environ.get(SOL_SRC_VARIABLE)
    if not given:
        return None, f"${SOL_SRC_VARIABLE} is not set (point it at SOL-ExecBench's src folder)"
    path = Path(given)
    if not (path / "sol_execbench" / "core" / "bench" / "correctness.py").is_file():
        return None, f"${SOL_SRC_VARIABLE}={given} holds no sol_execbench/core/bench/correctness.py"
    return path, ""


@functools.cache
def _sol():
    path, reason = sol_source()
    if path is None:
        raise RuntimeError(reason)
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    from sol_execbench.core.bench import correctness
    from sol_execbench.core.data import workload

    return correctness, workload


def fib_missing() -> str:
    """Why FlashInfer-Bench cannot be imported, or empty."""
    try:
        import flashinfer_bench.bench.evaluators.registry  # noqa: F401
    except ImportError as exc:
        return f"flashinfer_bench is not importable: {exc}"
    return ""


# -- drawing -------------------------------------------------------------------------------------------


def _around(r: random.Random, value: float, decades: float = 1.5) -> float:
    return value * 10 ** r.uniform(-decades, decades)


def _ratio(r: random.Random, n: int) -> float:
    """A required matched ratio near the defaults, or one lying on a fraction of the element count."""
    if n and r.random() < 0.3:
        return 1 - r.randint(0, min(n, 4)) / n
    return r.choice([1.0, 1 - 10 ** r.uniform(-4, -1), 0.99, 0.95])


def draw_sol_tolerance(r: random.Random, n: int, valid: bool = True) -> dict:
    """A workload's tolerance object; with ``valid=False`` also values upstream or we refuse."""
    raw: dict = {}
    if r.random() < 0.7:
        raw["max_atol"] = r.choice([_around(r, 1e-2), _around(r, 1e-5), 0.0, 0, 1, 17])
    if r.random() < 0.7:
        raw["max_rtol"] = r.choice([_around(r, 1e-2), _around(r, 1e-5), 0.0, 0.05])
    if r.random() < 0.5:
        raw["required_matched_ratio"] = _ratio(r, n)
    if r.random() < 0.15:
        raw["required_match_ratio"] = _ratio(r, n)  # upstream's own misspelling: ignored there
    if r.random() < 0.3:
        raw["max_error_cap"] = r.choice([None, _around(r, 0.1, 2), 0.0, 1])
    if r.random() < 0.35:
        raw["allow_negative_inf"] = r.random() < 0.7
    if r.random() < 0.1:
        raw["atol"] = 0.5  # a key ToleranceSpec does not know
    if not valid and r.random() < 0.6:
        key = r.choice(["max_atol", "max_rtol", "required_matched_ratio", "max_error_cap", "allow_negative_inf"])
        raw[key] = r.choice([None, -0.01, -1, 1.5, 2, True, False, "0.01", "yes", [], {}, 2**60, 10**400, 1, 0])
    return raw


def draw_fib_config(r: random.Random, n: int) -> dict:
    """BenchmarkConfig's tolerance fields, as its CLI sets them (most often left at their defaults)."""
    config: dict = {}
    if r.random() < 0.35:
        config["atol"] = r.choice([_around(r, 1e-2), 1e-3, 1.0])
    if r.random() < 0.35:
        config["rtol"] = r.choice([_around(r, 1e-2), 1e-3, 1.0])
    if r.random() < 0.3:
        ratio = _ratio(r, n)
        config["required_matched_ratio"] = ratio if ratio > 0 else 1.0
    return config


def _shape(r: random.Random) -> tuple[int, ...]:
    return r.choice(
        [
            (),
            (0,),
            (r.randint(1, 6), 0),
            (r.randint(1, 40),),
            (r.randint(1, 400),),
            (r.randint(1, 24), r.randint(1, 48)),
        ]
    )


def _reference(r: random.Random, g: torch.Generator, dtype: str, shape: tuple[int, ...], notes: list[str]):
    kind, target = DTYPES[dtype].kind, torch_dtype(dtype)
    if kind == "bool":
        return torch.randint(0, 2, shape, generator=g).to(torch.bool)
    if kind == "int":
        low = -128 if dtype == "int8" else -1024
        return torch.randint(low, -low, shape, generator=g).to(target)
    scale = r.choice([1.0, 1.0, 10 ** r.uniform(-3, 3)])
    if r.random() < 0.06 and dtype in ("float32", "bfloat16", "float64"):
        scale = 1e-30 if r.random() < 0.7 or dtype != "float64" else 1e-300
        notes.append(f"tiny reference ({scale:g})")
    elif r.random() < 0.05 and dtype in ("float32", "float64"):
        scale = 3e37 if dtype == "float32" else 1e300
        notes.append(f"huge reference ({scale:g})")
    values = torch.randn(shape, generator=g, dtype=torch.float64) * scale
    if r.random() < 0.05:
        values = torch.zeros(shape, dtype=torch.float64)
        notes.append("reference all zeros")
    return values.to(target)


def _bound(ref: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    return atol + rtol * ref.to(torch.float64).abs()


def _cast(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_floating_point:
        return values.to(dtype)
    if dtype == torch.bool:
        return values != 0
    info = torch.iinfo(dtype)
    return values.round().clamp(info.min, info.max).to(dtype)


def _output(r: random.Random, g: torch.Generator, ref: torch.Tensor, atol: float, rtol: float, notes: list[str]):
    wide, n = ref.to(torch.float64), ref.numel()
    if ref.dtype == torch.bool:
        flip = torch.rand(ref.shape, generator=g) < r.choice([0.0, 0.0, 0.003, 0.02, 0.5])
        out = ref ^ flip
    else:
        k = 10 ** r.uniform(-1.5, 1.0)
        share = r.choice([1.0, 1.0, 0.5, 0.02])
        noise = torch.randn(ref.shape, generator=g, dtype=torch.float64) * _bound(ref, atol, rtol) * k
        noise = noise * (torch.rand(ref.shape, generator=g) < share)
        notes.append(f"noise {k:.3g}x the bound on {share:.0%}")
        out = wide + noise
        if n and r.random() < 0.3:
            far = torch.randint(0, n, (r.randint(1, 3),), generator=g)
            out.view(-1)[far] += 10 ** r.uniform(1, 6) * (1 + wide.view(-1)[far].abs())
            notes.append(f"{len(far)} far off")
        out = _cast(out, ref.dtype)
    if r.random() < 0.05:
        out = torch.zeros_like(ref)
        notes.append("output all zeros")
    return out


def _specials(r: random.Random, g: torch.Generator, out: torch.Tensor, ref: torch.Tensor, notes: list[str]):
    """NaN, +Inf or -Inf in the output, the reference or both at one place (matching -inf most often)."""
    if not (out.dtype.is_floating_point and out.numel()) or r.random() > 0.35:
        return out, ref
    out, ref = out.clone(), ref.clone()
    where = torch.randint(0, out.numel(), (r.randint(1, 2),), generator=g)
    value = r.choice([math.nan, math.inf, -math.inf, -math.inf])
    side = r.choice(["out", "ref", "both", "both"])
    for tensor in (out, ref) if side == "both" else (out,) if side == "out" else (ref,):
        tensor.view(-1)[where] = value
    notes.append(f"{value} in {side} at {where.tolist()}")
    return out, ref


def _mismatch(r: random.Random, out: torch.Tensor, notes: list[str]) -> torch.Tensor:
    roll = r.random()
    if roll < 0.02:
        notes.append("shape differs")
        return out.unsqueeze(0) if r.random() < 0.5 or not out.numel() else out.reshape(-1)[1:]
    if roll < 0.04:
        other = r.choice([d for d in DRAWN_DTYPES if torch_dtype(d) != out.dtype])
        notes.append(f"dtype differs ({other})")
        return out.to(torch.float32).to(torch_dtype(other))
    return out


def draw_case(seed: int, benchmark: str) -> Case:
    """One case of ``benchmark`` (`BENCHMARKS`), all of it from ``seed``."""
    r, g = random.Random(seed), torch.Generator().manual_seed(seed)
    notes: list[str] = []
    dtype = r.choice(DRAWN_DTYPES + ("float32", "float16", "bfloat16"))
    shape = _shape(r)
    n = math.prod(shape)
    definition = "judge"
    if benchmark == "sol_execbench":
        tolerance = draw_sol_tolerance(r, n)
        atol, rtol = tolerance.get("max_atol", 1e-2), tolerance.get("max_rtol", 1e-2)
    else:
        tolerance = draw_fib_config(r, n)
        atol, rtol = tolerance.get("atol", 1e-2), tolerance.get("rtol", 1e-2)
        definition = r.choice(FIB_NAMES)
    ref = _reference(r, g, dtype, shape, notes)
    out = _output(r, g, ref, atol, rtol, notes)
    out, ref = _specials(r, g, out, ref, notes)
    return Case(seed, benchmark, _mismatch(r, out, notes), ref, tolerance, definition, notes)


# -- verdicts -------------------------------------------------------------------------------------------


def _our_definition(name: str, ref: torch.Tensor) -> Definition:
    return Definition(name, {}, {}, {"out": _spec(ref)}, "")


def _spec(ref: torch.Tensor) -> TensorSpec:
    return TensorSpec("out", tuple(f"d{i}" for i in range(ref.dim())), name_of(ref.dtype))


def our_tolerance(case: Case) -> Tolerance:
    """The tolerance our harness judges the case by: read from the workload line (SOL), or FlashInfer-Bench's
    config defaults with the case's overrides of them (as its CLI's --atol, --rtol, --required-matched-ratio)."""
    definition = _our_definition(case.definition, case.ref)
    if case.benchmark == "sol_execbench":
        line = {"uuid": "judge", "axes": {}, "inputs": {}, "tolerance": case.tolerance}
        return parse_case(line, definition, WORKLOAD_PATH, 1).tolerance
    given = {FIB_CONFIG_KEYS[k]: v for k, v in case.tolerance.items()}
    return dataclasses.replace(flashinfer_bench_tolerance(definition), **given)


def ours(case: Case) -> Verdict:
    check = COMPARATORS[case.benchmark].check("out", _spec(case.ref), case.out, case.ref, our_tolerance(case))
    reached = check.status in ("PASSED", "INCORRECT_NUMERICAL") and not (check.has_nan or check.has_inf)
    return Verdict(check.status, check.matched_ratio if reached else None)


def sol_verdict(case: Case) -> Verdict:
    """SOL-ExecBench's eval driver on one output: shape, then dtype, then `compute_error_stats` under
    the tolerance its Workload model reads from the line."""
    correctness, workload = _sol()
    line = {"uuid": "judge", "axes": {}, "inputs": {}, "tolerance": case.tolerance}
    tolerance = workload.Workload(**line).tolerance
    if case.ref.shape != case.out.shape:
        return Verdict("INCORRECT_SHAPE")
    if case.ref.dtype != case.out.dtype:
        return Verdict("INCORRECT_DTYPE")
    _, exceeds = correctness.compute_error_stats(case.out, case.ref, tolerance)
    return Verdict("INCORRECT_NUMERICAL" if exceeds else "PASSED")


@contextlib.contextmanager
def _no_cuda_sync():
    synchronize = torch.cuda.synchronize
    torch.cuda.synchronize = lambda *args, **kwargs: None
    try:
        yield
    finally:
        torch.cuda.synchronize = synchronize


@functools.cache
def _fib_definition(name: str):
    from flashinfer_bench.data import Definition as FibDefinition

    return FibDefinition.model_validate(
        {
            "name": name,
            "op_type": "judge_agreement",
            "axes": {"n": {"type": "var"}},
            "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
            "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
            "reference": "def run(x):\n    return x\n",
        }
    )


class _Returns:
    """A value-returning solution (FlashInfer-Bench's Runnable, as far as its evaluator asks) giving one output."""

    metadata = types.SimpleNamespace(destination_passing_style=False)

    def __init__(self, out: torch.Tensor):
        self.out = out

    def __call__(self, *inputs):
        return self.out


def fib_verdict(case: Case) -> Verdict:
    """FlashInfer-Bench's evaluator for the definition (its registry picks it), one trial of one
    value-returning solution; the matched ratio from its `compute_error_stats` where the evaluator
    reaches it."""
    from flashinfer_bench.bench.config import BenchmarkConfig
    from flashinfer_bench.bench.evaluators.registry import resolve_evaluator
    from flashinfer_bench.bench.utils import compute_error_stats

    definition = _fib_definition(case.definition)
    config = BenchmarkConfig(**case.tolerance)
    with _no_cuda_sync():
        _, evaluation = resolve_evaluator(definition).check_correctness(
            definition, _Returns(case.out), [[]], [[case.ref]], config, None, "cpu"
        )
    status = "PASSED" if evaluation is None else evaluation.status.name
    finite = not (bool(torch.isinf(case.out).any()) or bool(torch.isnan(case.out).any()))
    reached = case.out.shape == case.ref.shape and case.out.dtype == case.ref.dtype and finite
    return Verdict(status, compute_error_stats(case.out, case.ref, config)[3] if reached else None)


UPSTREAM = {"sol_execbench": sol_verdict, "flashinfer_bench": fib_verdict}


def judge(case: Case) -> Outcome:
    """Both verdicts on one case; upstream's own code raising is kept apart from a disagreement."""
    mine = ours(case)
    try:
        theirs = UPSTREAM[case.benchmark](case)
    except Exception as exc:  # noqa: BLE001 - what upstream raised is the finding
        return Outcome(case, mine, None, f"{type(exc).__name__}: {exc}")
    return Outcome(case, mine, theirs)


def known_upstream_failure(outcome: Outcome) -> bool:
    """FlashInfer-Bench asks ``torch.isinf`` of an fp8 e4m3fn output, which torch does not implement for
    that dtype (it has no infinity): its evaluator raises on every such output, so it judges none."""
    return (
        outcome.theirs is None
        and outcome.case.benchmark == "flashinfer_bench"
        and outcome.case.out.dtype == torch.float8_e4m3fn
        and "isinf" in outcome.raised
    )


TOLERANCE_READINGS = ("both read it alike", "both refuse it", "only we refuse it")


@dataclass(frozen=True)
class Reading:
    raw: object
    kind: str  # one of TOLERANCE_READINGS, or what differs
    ours: object
    theirs: object

    def describe(self) -> str:
        theirs = " ".join(str(self.theirs).split())  # pydantic's errors run over several lines
        return f"tolerance {self.raw!r}: {self.kind}; ours {self.ours!r}, upstream {theirs[:300]}"


def _ours_only_refusal(raw: dict) -> bool:
    """What our reader refuses and ToleranceSpec's lax parsing takes (formats.workload._tolerance says why)."""
    for key, value in raw.items():
        if key not in TOLERANCE_DEFAULTS or value is None:
            continue
        if key == "allow_negative_inf":
            if not isinstance(value, bool):
                return True
        elif isinstance(value, (bool, str)) or (isinstance(value, (int, float)) and value < 0):
            return True
        elif isinstance(value, int) and value > 2**53:
            return True
        elif key == "required_matched_ratio" and isinstance(value, (int, float)) and value > 1:
            return True
    return False


def read_tolerance(raw: object) -> Reading:
    """A workload line's tolerance object read by our reader and by SOL-ExecBench's Workload model: alike,
    refused by both, refused by us only for a reason of ours (`_ours_only_refusal`), or a disagreement."""
    _, workload = _sol()
    line = {"uuid": "judge", "axes": {}, "inputs": {}, "tolerance": raw}
    definition = _our_definition("judge", torch.zeros(()))
    mine: object
    try:
        mine = parse_case(line, definition, WORKLOAD_PATH, 1).tolerance
    except FormatError as exc:
        mine = exc
    try:
        theirs: object = workload.Workload(**line).tolerance
    except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError, whatever its version
        theirs = exc
    if isinstance(theirs, Exception):
        kind = TOLERANCE_READINGS[1] if isinstance(mine, FormatError) else "we read what upstream refuses"
    elif isinstance(mine, FormatError):
        kind = TOLERANCE_READINGS[2] if isinstance(raw, dict) and _ours_only_refusal(raw) else "we refuse it"
    else:
        same = all(getattr(mine, k) == getattr(theirs, k) for k in TOLERANCE_DEFAULTS)
        kind = TOLERANCE_READINGS[0] if same else "read differently"
    return Reading(raw, kind, mine, theirs)
