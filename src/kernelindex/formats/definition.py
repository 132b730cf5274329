"""definition.json of SOL-ExecBench and FlashInfer-Bench: axes, inputs, outputs, the reference.

Every problem is reported as a `FormatError` naming the file, the line and the field, so a user can
fix a problem folder without guessing. The loaded object keeps the raw JSON too: records and trace
lines are written from what the user gave, not from a re-serialisation of our view of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex.formats import axes as axis_math
from kernelindex.formats.dtypes import DTYPES
from kernelindex.formats.errors import FormatError
from kernelindex.formats.json_files import line_of, read_json


@dataclass(frozen=True)
class Axis:
    name: str
    type: str  # const | var | expr
    value: int | None = None
    expression: str | None = None


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[str, ...] | None  # None: a plain Python scalar; (): a 0-d tensor
    dtype: str
    description: str | None = None

    @property
    def is_scalar(self) -> bool:
        return self.shape is None


@dataclass(frozen=True)
class Definition:
    name: str
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec]
    reference: str
    op_type: str | None = None
    description: str | None = None
    constraints: tuple[str, ...] = ()
    custom_inputs_entrypoint: str | None = None
    flops: str | None = None  # optional: expression over axes, for T_SOL on any hardware
    bytes: str | None = None  # optional: expression over axes, bytes that must move
    raw: dict = field(default_factory=dict, compare=False, repr=False)
    path: str = ""

    def resolve_axes(self, given: dict[str, Any], where: str = "workload") -> dict[str, int]:
        """Values of every axis for one case: const, the case's var values, then expr axes. An axis
        the definition does not declare is passed over, as SOL-ExecBench's own loader does (the
        workload reader records a warning for it)."""
        values: dict[str, int] = {}
        for axis in self.axes.values():
            if axis.type == "const" and axis.value is not None:
                values[axis.name] = axis.value
            elif axis.type == "var":
                if axis.name not in given:
                    raise ValueError(f"{where}: no value for var axis {axis.name!r}")
                value = given[axis.name]
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValueError(f"{where}: axis {axis.name!r} must be an integer, got {value!r}")
                values[axis.name] = value
        pending = [a for a in self.axes.values() if a.type == "expr"]
        while pending:
            ready = [a for a in pending if axis_math.names_in(a.expression or "") <= set(values)]
            if not ready:
                raise ValueError(
                    f"{where}: expr axes {[a.name for a in pending]} depend on each other or on unknown axes"
                )
            for axis in ready:
                result = axis_math.evaluate(axis.expression or "", values)
                values[axis.name] = axis_math.as_integer(result, f"axis {axis.name!r} = {axis.expression}")
                pending.remove(axis)
        for constraint in self.constraints:
            if not axis_math.evaluate(constraint, values):
                raise ValueError(f"{where}: constraint {constraint!r} does not hold for axes {values}")
        return values

    def shape(self, spec: TensorSpec, axis_values: dict[str, int]) -> tuple[int, ...] | None:
        if spec.shape is None:
            return None
        return tuple(int(d) if d.isdigit() else axis_values[d] for d in spec.shape)


def _tensor_specs(raw: Any, path: Path, text: str, section: str) -> dict[str, TensorSpec]:
    if not isinstance(raw, dict) or not raw:
        raise FormatError(path, line_of(text, section), section, "must be a non-empty object of name → {shape, dtype}")
    specs = {}
    for name, entry in raw.items():
        where = f"{section}.{name}"
        line = line_of(text, name)
        if not isinstance(entry, dict):
            raise FormatError(path, line, where, "must be an object with shape and dtype")
        if not isinstance(entry.get("dtype"), str) or entry["dtype"] not in DTYPES:
            raise FormatError(
                path, line, f"{where}.dtype", f"unknown dtype {entry.get('dtype')!r}; one of {sorted(DTYPES)}"
            )
        if "shape" not in entry:
            raise FormatError(path, line, f"{where}.shape", "missing (use null for a scalar, [] for a 0-d tensor)")
        shape = entry["shape"]
        if shape is not None:
            if not isinstance(shape, list) or not all(isinstance(d, str) for d in shape):
                raise FormatError(
                    path, line, f"{where}.shape", "must be a list of axis names or digit strings, or null"
                )
            shape = tuple(shape)
        specs[name] = TensorSpec(name, shape, entry["dtype"], entry.get("description"))
    return specs


def _axes(raw: dict, path: Path, text: str) -> dict[str, Axis]:
    axes: dict[str, Axis] = {}
    if not isinstance(raw["axes"], dict):
        raise FormatError(path, line_of(text, "axes"), "axes", "must be an object of name → axis")
    for name, entry in raw["axes"].items():
        line, where = line_of(text, name), f"axes.{name}"
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind == "const":
            value = entry.get("value")
            if isinstance(value, bool) or not isinstance(value, int):
                raise FormatError(path, line, f"{where}.value", "a const axis needs an integer value")
            axes[name] = Axis(name, "const", value=value)
        elif kind == "var":
            axes[name] = Axis(name, "var")
        elif kind == "expr":
            expression = entry.get("expression")
            if not isinstance(expression, str):
                raise FormatError(path, line, f"{where}.expression", "an expr axis needs an expression string")
            try:
                unknown = axis_math.names_in(expression) - set(raw["axes"])
            except axis_math.ExpressionError as exc:
                raise FormatError(path, line, f"{where}.expression", str(exc)) from None
            if unknown:
                raise FormatError(path, line, f"{where}.expression", f"refers to unknown axes {sorted(unknown)}")
            axes[name] = Axis(name, "expr", expression=expression)
        else:
            raise FormatError(path, line, f"{where}.type", f"must be const, var or expr, got {kind!r}")
    return axes


def _check_figures(raw: dict, axes: dict[str, Axis], path: Path, text: str) -> None:
    """``flops`` and ``bytes``: expressions over the definition's axes."""
    for key in ("flops", "bytes"):
        if raw.get(key) is not None:
            try:
                unknown = axis_math.names_in(str(raw[key])) - set(axes)
            except axis_math.ExpressionError as exc:
                raise FormatError(path, line_of(text, key), key, str(exc)) from None
            if unknown:
                raise FormatError(path, line_of(text, key), key, f"refers to unknown axes {sorted(unknown)}")


def load_definition(path: str | Path) -> Definition:
    path = Path(path)
    raw, text = read_json(path)
    for key in ("name", "axes", "inputs", "outputs", "reference"):
        if key not in raw:
            raise FormatError(path, None, key, "required field is missing")
    if not isinstance(raw["name"], str) or not raw["name"].strip():
        raise FormatError(path, line_of(text, "name"), "name", "must be a non-empty string")
    for key in ("op_type", "description"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise FormatError(path, line_of(text, key), key, "must be a string")
    axes = _axes(raw, path, text)
    inputs = _tensor_specs(raw["inputs"], path, text, "inputs")
    outputs = _tensor_specs(raw["outputs"], path, text, "outputs")
    for spec in [*inputs.values(), *outputs.values()]:
        for dim in spec.shape or ():
            if not dim.isdigit() and dim not in axes:
                raise FormatError(path, line_of(text, spec.name), f"{spec.name}.shape", f"unknown axis {dim!r}")
    if not isinstance(raw["reference"], str) or "def run" not in raw["reference"]:
        raise FormatError(path, line_of(text, "reference"), "reference", "must be Python source defining run(...)")
    constraints = raw.get("constraints") or []
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise FormatError(path, line_of(text, "constraints"), "constraints", "must be a list of expressions")
    entry = raw.get("custom_inputs_entrypoint")
    if entry is not None and f"def {entry}" not in raw["reference"]:
        raise FormatError(
            path,
            line_of(text, "custom_inputs_entrypoint"),
            "custom_inputs_entrypoint",
            f"reference defines no function {entry!r}",
        )
    _check_figures(raw, axes, path, text)
    return Definition(
        name=raw["name"],
        axes=axes,
        inputs=inputs,
        outputs=outputs,
        reference=raw["reference"],
        op_type=raw.get("op_type"),
        description=raw.get("description"),
        constraints=tuple(constraints),
        custom_inputs_entrypoint=entry,
        flops=raw.get("flops"),
        bytes=raw.get("bytes"),
        raw=raw,
        path=str(path),
    )
