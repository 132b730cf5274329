"""Inputs of one call, reproducible from (case uuid, purpose, index) alone.

A random input is drawn as the problem's own benchmark draws it (`style`, the problem's format):
SOL-ExecBench and FlashInfer-Bench draw by dtype (normal floats, fp8 clipped to ±2, integers in
±1024, ±128 for int8), and SOL-ExecBench shapes some inputs by their name first (a variance is
positive, a norm weight is ones, attention weights are a softmax, an SSM decay is negative, ...):
a reference that takes the log or the square root of a variance must see one. Our own packs keep
our rules (indices below every axis, masks of 0 and 1, fan-in scaled weights).

Each input gets its own generator seeded from sha256(uuid, purpose, index, input name, nonce), so a
case's inputs do not depend on the cases run before it, on the order inputs are drawn, or on
any random numbers the solution draws. The nonce is a fresh secret of each evaluation (stored
with its records afterwards), so a solution cannot predict its inputs, yet anyone can regenerate
them later.
"""

from __future__ import annotations

import hashlib
import math
import random
import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernelindex.formats import blobs
from kernelindex.formats.definition import Definition, TensorSpec
from kernelindex.formats.dtypes import DTYPES
from kernelindex.formats.workload import WorkloadCase
from kernelindex.harness.dtypes import torch_dtype

_INDEX = re.compile(r"(^|_)(idx|index|indices|ids?|positions?)($|_)")
_MASK = re.compile(r"(^|_)mask($|_)")
_PROB = re.compile(r"(^|_)(probs?|probabilities)($|_)")
_WEIGHT = re.compile(r"(^|_)(weights?|w\d*)($|_)")


def seed_for(uuid: str, purpose: str, index: int, name: str = "", nonce: str = "") -> int:
    """A 63-bit seed; purpose is 'round', 'warmup' or 'timed'; `nonce` is the evaluation's secret."""
    key = f"{uuid}\x1f{purpose}\x1f{index}\x1f{name}" + (f"\x1f{nonce}" if nonce else "")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1)


def load_reference(definition: Definition, module_name: str = "_kernelindex_reference") -> types.ModuleType:
    """The definition's reference source as a module (it defines run and maybe the custom inputs)."""
    module = types.ModuleType(module_name)
    module.__file__ = f"<{definition.name} reference>"
    exec(compile(definition.reference, module.__file__, "exec"), module.__dict__)
    return module


def _random_tensor(torch, spec: TensorSpec, shape: tuple[int, ...], axis_values: dict, device: str, seed: int):
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    kind = DTYPES[spec.dtype].kind
    dtype = torch_dtype(spec.dtype)
    name = spec.name.lower()
    if kind == "packed":
        raw = torch.randint(0, 256, shape, generator=gen, device=device, dtype=torch.uint8)
        return raw.view(dtype)
    if kind == "bool":
        return torch.rand(shape, generator=gen, device=device) < 0.5
    if kind == "int":
        if _MASK.search(name):
            return torch.randint(0, 2, shape, generator=gen, device=device, dtype=dtype)
        if _INDEX.search(name):
            # Valid for indexing any dimension of the problem: below the smallest positive axis.
            bound = min((v for v in axis_values.values() if v > 0), default=1)
            return torch.randint(0, bound, shape, generator=gen, device=device, dtype=dtype)
        return torch.randint(-64, 64, shape, generator=gen, device=device, dtype=dtype)
    values = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    if _PROB.search(name):
        values = torch.softmax(values, dim=-1) if values.dim() else torch.sigmoid(values)
    elif _MASK.search(name):
        values = (values > 0).to(torch.float32)
    elif _WEIGHT.search(name) and len(shape) >= 2:
        values = values / math.sqrt(max(shape[-1], 1))  # fan-in scaling keeps products O(1)
    return values.to(dtype)


_NORM = ("_norm", "_layernorm", "layernorm")
_POSITIVE = ("rstd", "std", "variance", "var")
_WEIGHT_ENDINGS = ("_weight", "_weights", "_proj", "_projs", "_proj_weight", "_proj_weights", "_weight_matrix")
_BINARY_MASKS = ("x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask")
_BINARY_WORDS = ("binary", "{0, 1}", "0 or 1", "1.0 for valid", "0.0 for masked")
_ROPE = {"cos": "cos", "cos_cached": "cos", "rope_cos": "cos", "sin": "sin", "sin_cached": "sin", "rope_sin": "sin"}
_DECAY = {"A_log": (-5.0, -1.0), "A": (-1.0, -0.001), "g": (-5.0, 0.0)}  # A_cumsum: steps in [-0.1, 0), summed


def _norm_parameter(name: str, kind: str) -> bool:
    """``norm_weight`` / ``norm_bias``, or ``<...norm><digits>_weight`` / ``_bias`` (ones and zeros upstream)."""
    if name == f"norm_{kind}":
        return True
    if not name.endswith(f"_{kind}"):
        return False
    prefix = name[: -len(kind) - 1]
    stripped = prefix.rstrip("0123456789")
    return prefix.endswith(_NORM) or bool(stripped) and stripped.endswith(("norm", "layernorm"))


def _positive(name: str) -> bool:
    base = name.rstrip("0123456789")
    return (
        name in _POSITIVE
        or name.endswith(("_rstd", "_std", "_variance", "_var"))
        or base in _POSITIVE
        or base.endswith(("_rstd", "_std", "_var"))
    )


def _weight_matrix(name: str, shape: tuple[int, ...]) -> bool:
    base = name.rstrip("0123456789")
    return len(shape) >= 2 and (
        name == "weight" or name.endswith(_WEIGHT_ENDINGS) or base == "weight" or base.endswith(_WEIGHT_ENDINGS)
    )


def _sol_shaped(torch, spec: TensorSpec, shape: tuple[int, ...], dtype, gen, device: str):
    """SOL-ExecBench's tensor for an input its name (or description) says something about, else None."""
    name, said = spec.name, (spec.description or "").lower()
    if _norm_parameter(name, "weight"):
        return torch.ones(shape, dtype=dtype, device=device)
    if _norm_parameter(name, "bias"):
        return torch.zeros(shape, dtype=dtype, device=device)
    square = len(shape) >= 2 and shape[-1] == shape[-2]
    if square and (name in ("attention_mask", "causal_mask") or ("attention mask" in said and "causal" in said)):
        above = torch.ones(shape[-1], shape[-1], device=device).triu(diagonal=1).bool()
        mask = torch.zeros(shape, dtype=dtype, device=device)
        mask[..., above] = torch.finfo(dtype).min
        return mask
    if name in _BINARY_MASKS or (name.endswith("_mask") and any(word in said for word in _BINARY_WORDS)):
        return torch.randint(0, 2, shape, generator=gen, device=device).to(dtype)
    normal = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    if name in _ROPE:
        angle = normal.clamp(-math.pi, math.pi)
        return (angle.cos() if _ROPE[name] == "cos" else angle.sin()).to(dtype)
    if _positive(name):
        return (normal.abs() + 0.1).to(dtype)
    if name == "A_cumsum":
        steps = torch.empty(shape, device=device, dtype=torch.float32).uniform_(-0.1, 0.0, generator=gen)
        return steps.cumsum(dim=-1).to(dtype)
    if name in _DECAY:
        low, high = _DECAY[name]
        return torch.empty(shape, device=device, dtype=torch.float32).uniform_(low, high, generator=gen).to(dtype)
    if name in ("attn_weights", "attention_weights", "routing_weights") or ("softmax" in said and "output" in said):
        return torch.softmax(normal, dim=-1).to(dtype)
    if _weight_matrix(name, shape):
        return (normal / math.sqrt(shape[-1])).to(dtype)
    return None


def _upstream_random_tensor(torch, definition: Definition, spec: TensorSpec, shape, device: str, seed: int, style: str):
    """A random input as SOL-ExecBench (``style`` "sol_execbench") or FlashInfer-Bench draws it.
    Packed fp4 stays random bytes (every code is a finite value) under both."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    kind, dtype = DTYPES[spec.dtype].kind, torch_dtype(spec.dtype)
    if kind == "packed":
        return torch.randint(0, 256, shape, generator=gen, device=device, dtype=torch.uint8).view(dtype)
    if kind == "bool":
        return torch.randint(0, 2, shape, generator=gen, device=device).bool()
    if kind == "int":
        bound = 128 if spec.dtype == "int8" else 1024
        return torch.randint(-bound, bound, shape, generator=gen, device=device, dtype=dtype)
    low_precision = spec.dtype.startswith("float8")
    if style == "sol_execbench" and not low_precision:
        shaped = _sol_shaped(torch, spec, shape, dtype, gen, device)
        if shaped is not None:
            return shaped
    values = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    if low_precision:
        values = values.clamp(-2.0, 2.0)
    if definition.raw.get("op_type") == "sampling" and spec.name == "probs":
        values = torch.softmax(values, dim=-1)  # both benchmarks: a sampling op's probs are a distribution
    return values.to(dtype)


def _custom_inputs(torch, fn, axes_and_scalars: dict, device: str, seed: int) -> dict:
    """The definition's generator called as upstream calls it (``fn(axes_and_scalars, torch.device)``,
    with torch's and Python's ``random`` generators seeded, as SOL-ExecBench's set_seed does), but
    seeded per call and with both generators' states restored afterwards."""
    where = torch.device(device)
    state = random.getstate()
    try:
        with torch.random.fork_rng(devices=[where] if where.type == "cuda" else []):
            torch.manual_seed(seed)
            random.seed(seed)
            made = fn(axes_and_scalars, where)
    finally:
        random.setstate(state)
    if not isinstance(made, dict):
        raise ValueError(f"the custom inputs function returned a {type(made).__name__}, not a dict of name → input")
    return made


def make_inputs(
    definition: Definition,
    case: WorkloadCase,
    purpose: str,
    index: int,
    device: str,
    problem_root: str | Path,
    reference: types.ModuleType | None = None,
    nonce: str = "",
    files: Mapping[str, str] | None = None,
    style: str = "kernelindex",
) -> dict[str, Any]:
    """The inputs of one call, in the definition's order (unpredictable without the evaluation's nonce).
    ``style``: the problem's format, whose benchmark's way of drawing random inputs is used. ``files`` maps a safetensors input's path to its file under ``problem_root`` (`blobs.stage`); a path
    it lacks is looked for in the problem folder."""
    import torch

    axis_values = definition.resolve_axes(case.axes, f"case {case.uuid}")
    scalars = {n: s.value for n, s in case.inputs.items() if s.type == "scalar"}
    custom = {}
    if any(s.type == "custom" for s in case.inputs.values()):
        if reference is None:
            reference = load_reference(definition)
        entry = definition.custom_inputs_entrypoint
        if entry is None:
            raise ValueError("a custom input, but the definition names no custom_inputs_entrypoint")
        # every axis the workload gives, those the definition does not declare too: upstream's generator
        # gets them all (SOL-ExecBench problem 126 reads its `is_joint_block` this way)
        raw_axes = case.raw.get("axes")
        workload_axes: dict = raw_axes if isinstance(raw_axes, dict) else {}
        custom = _custom_inputs(
            torch,
            getattr(reference, entry),
            {**workload_axes, **axis_values, **scalars},
            device,
            seed_for(case.uuid, purpose, index, "<custom>", nonce),
        )
    result = {}
    for name, spec in definition.inputs.items():
        given = case.inputs[name]
        shape = definition.shape(spec, axis_values) or ()  # a scalar has none
        if given.type == "scalar":
            value = given.value
            if spec.is_scalar:
                result[name] = value
            elif isinstance(value, list):
                result[name] = torch.tensor(value, dtype=torch_dtype(spec.dtype), device=device).reshape(shape)
            else:  # one value fills the whole tensor (e.g. a [1] flag)
                result[name] = torch.full(shape, value, dtype=torch_dtype(spec.dtype), device=device)
        elif given.type == "custom":
            if name not in custom:
                raise ValueError(f"custom inputs function {definition.custom_inputs_entrypoint} made no {name!r}")
            value = custom[name]
            result[name] = value.to(device) if isinstance(value, torch.Tensor) else value
        elif given.type == "safetensors":
            from safetensors.torch import load_file

            if given.path is None or given.tensor_key is None:
                raise ValueError(f"safetensors input {name!r} names no path or tensor_key")
            if files is not None and given.path in files:
                file = Path(problem_root) / files[given.path]
            else:
                file = blobs.locate(given.path, Path(problem_root), None, case.uuid, name)
            tensors = load_file(str(file), device=str(device))
            if given.tensor_key not in tensors:
                raise ValueError(f"safetensors input {name!r}: {given.path!r} holds no tensor {given.tensor_key!r}")
            result[name] = tensors[given.tensor_key]
        elif style in ("sol_execbench", "flashinfer_bench"):
            seed = seed_for(case.uuid, purpose, index, name, nonce)
            result[name] = _upstream_random_tensor(torch, definition, spec, shape, device, seed, style)
        else:
            result[name] = _random_tensor(
                torch, spec, shape, axis_values, device, seed_for(case.uuid, purpose, index, name, nonce)
            )
    return result
