"""KernelBench documents, read from their text: problem files and published baseline timings.

A KernelBench problem is one Python file: ``class Model(nn.Module)``, module-level sizes, and
``get_inputs()`` / ``get_init_inputs()``. Everything here works on the file's syntax tree and never
runs it: the sizes are the module-level assignments whose values are integer constant expressions
(``N = 2048 * 2``, ``depth, height, width = 24, 48, 48``, ``height = width = 128``), the level and
number come from the path (``level2/17_Conv2d_InstanceNorm_Divide.py``). Scaling rewrites those
assignments, and shape literals such as ``input_shape = (32768,)``, in the text, so that a CPU smoke
run of a GPU-sized problem is the same problem at other sizes.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any

SMALL = 8  # sizes up to this are kernel sizes, strides, groups...: never scaled
_FILE = re.compile(r"^(\d+)_(.+)\.py$")
_LEVEL = re.compile(r"^level(\d+)$")
_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
BASELINE_FIELDS = ("mean", "std", "min", "max", "num_trials")


class KernelBenchError(ValueError):
    """A KernelBench document this reader cannot take: says which file, where and why."""

    def __init__(self, file: str, line: int | None, reason: str):
        self.file, self.line, self.reason = file, line, reason
        super().__init__(f"{file}:{line}: {reason}" if line else f"{file}: {reason}")


@dataclass(frozen=True)
class Size:
    """One module-level integer size: its name, value, and whether it was written as a constant
    (a root, which scaling rewrites) or computed from other sizes (re-evaluated by the file itself)."""

    name: str
    value: int
    line: int
    root: bool


@dataclass(frozen=True)
class ProblemFile:
    path: str
    text: str
    level: int | None
    number: int | None
    title: str  # the file name without number and suffix, as upstream wrote it
    sizes: tuple[Size, ...]
    forward_args: tuple[str, ...]
    init_args: tuple[str, ...]
    docstring: str = ""
    scale: float = 1.0
    scaled_from: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return problem_name(self.level, self.number, self.title)

    @property
    def size_values(self) -> dict[str, int]:
        return {s.name: s.value for s in self.sizes}


def problem_name(level: int | None, number: int | None, title: str) -> str:
    """The operation name of a problem: kernelbench-l<level>-<number>-<title>, lower case, dashes."""
    words = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "problem"
    parts = ["kernelbench", f"l{level}" if level is not None else "lx", *([str(number)] if number is not None else [])]
    return "-".join([*parts, words])[:120]


def _constant(node: ast.AST, names: dict[str, int] | None) -> int | float | None:
    """The value of an arithmetic expression over literals (and, given ``names``, earlier sizes)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and names is not None and node.id in names:
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant(node.operand, names)
        return None if inner is None else -inner
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _constant(node.left, names), _constant(node.right, names)
        if left is None or right is None or (isinstance(node.op, ast.Pow) and abs(right) > 64):
            return None
        try:
            return _OPS[type(node.op)](left, right)
        except (ZeroDivisionError, OverflowError):
            return None
    return None


def _uses_names(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) for n in ast.walk(node))


def _targets(statement: ast.Assign) -> list[tuple[str, ast.AST]]:
    """(name, value) pairs of ``a = 1``, ``a = b = 1`` and ``a, b = 1, 2``; nothing for other shapes."""
    value = statement.value
    if all(isinstance(t, ast.Name) for t in statement.targets):
        return [(t.id, value) for t in statement.targets if isinstance(t, ast.Name)]
    if len(statement.targets) != 1:
        return []
    target = statement.targets[0]
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
        if all(isinstance(t, ast.Name) for t in target.elts):
            return [(t.id, v) for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name)]
    return []


def _shape_literal(statement: ast.Assign) -> tuple[str, list[int]] | None:
    """``input_shape = (32768,)``: one name bound to a tuple or list of integer constant expressions
    (a shape the file unpacks into its inputs), else None."""
    if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
        return None
    if not isinstance(statement.value, (ast.Tuple, ast.List)) or not statement.value.elts:
        return None
    values = [_constant(e, None) for e in statement.value.elts]
    if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        return None
    return statement.targets[0].id, [v for v in values if isinstance(v, int)]


def _sizes(tree: ast.Module) -> list[Size]:
    known: dict[str, int] = {}
    sizes: list[Size] = []
    for statement in tree.body:
        if not isinstance(statement, ast.Assign):
            continue
        for name, value in _targets(statement):
            result = _constant(value, known)
            if isinstance(result, bool) or not isinstance(result, int):
                known.pop(name, None)
                sizes = [s for s in sizes if s.name != name]
                continue
            known[name] = result
            sizes = [s for s in sizes if s.name != name]
            sizes.append(Size(name, result, statement.lineno, not _uses_names(value)))
    return sizes


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _method_args(cls: ast.ClassDef, name: str) -> tuple[str, ...] | None:
    method = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if method is None:
        return None
    return tuple(a.arg for a in method.args.args[1:])


def where_from(path: str) -> tuple[int | None, int | None, str]:
    """Level, number and title from a path such as ``KernelBench/level1/19_ReLU.py``."""
    parts = re.split(r"[\\/]", path)
    match = _FILE.match(parts[-1])
    number, title = (int(match.group(1)), match.group(2)) if match else (None, parts[-1].removesuffix(".py"))
    level = next((int(m.group(1)) for p in reversed(parts[:-1]) if (m := _LEVEL.match(p))), None)
    return level, number, title.strip("_") or title


def parse_problem(text: str, path: str) -> ProblemFile:
    """A problem file read from its syntax tree (never run); refuses what is not a KernelBench problem."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise KernelBenchError(path, exc.lineno, f"not valid Python: {exc.msg}") from None
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise KernelBenchError(
            path, None, "defines no class Model (a KernelBench problem holds class Model(nn.Module))"
        )
    for function in ("get_inputs", "get_init_inputs"):
        if _function(tree, function) is None:
            raise KernelBenchError(path, None, f"defines no module-level {function}()")
    forward = _method_args(model, "forward")
    if forward is None:
        raise KernelBenchError(path, model.lineno, "class Model has no forward method")
    level, number, title = where_from(path)
    return ProblemFile(
        path=path,
        text=text,
        level=level,
        number=number,
        title=title,
        sizes=tuple(_sizes(tree)),
        forward_args=forward,
        init_args=_method_args(model, "__init__") or (),
        docstring=(ast.get_docstring(model) or "").strip(),
    )


def scaled_size(value: int, factor: float) -> int:
    """A size times ``factor``. Sizes of SMALL or less stay, and none goes below SMALL (a kernel, pool
    window or depth still fits the scaled input); a power of two stays one (the nearest), so group and
    head counts still divide the channels they split; other multiples of 8 stay multiples of 8."""
    if value <= SMALL or factor == 1:
        return value
    target = value * factor
    if value & (value - 1) == 0:
        found = 1 << max(0, round(math.log2(target)))  # 64 * 0.01: 2**-1 rounds up to 1
    elif value % 8 == 0:
        found = round(target / 8) * 8
    else:
        found = round(target)
    return max(SMALL, found)


def _assignment(statement: ast.Assign, names: list[str], values: list[str]) -> str:
    """The text of an assignment binding ``names`` to ``values`` in the statement's own shape."""
    if len(statement.targets) > 1:  # a = b = 128
        return f"{' = '.join(names)} = {values[0]}"
    if isinstance(statement.value, (ast.Tuple, ast.List)) and isinstance(statement.targets[0], ast.Name):
        open_, close = ("[", "]") if isinstance(statement.value, ast.List) else ("(", ",)" if len(values) == 1 else ")")
        return f"{names[0]} = {open_}{', '.join(values)}{close}"
    return f"{', '.join(names)} = {', '.join(values)}"


def _offset(lines: list[str], line: int, column: int) -> int:
    """The character offset of a syntax tree position (1-based line, UTF-8 byte column) in the text."""
    return sum(len(text) for text in lines[: line - 1]) + len(lines[line - 1].encode()[:column].decode())


def scale_problem(problem: ProblemFile, factor: float) -> ProblemFile:
    """The same problem with every root size above SMALL scaled, and every element above SMALL of a
    module-level shape literal (``input_shape = (32768,)``); sizes computed from them follow, since the
    file computes them itself. The assignments are rewritten in the text."""
    if not (math.isfinite(factor) and 0 < factor <= 1):
        raise KernelBenchError(problem.path, None, f"scale must lie in (0, 1], got {factor}")
    if factor == 1:
        return problem
    tree = ast.parse(problem.text)
    lines = re.split(r"(?<=\n)", problem.text)  # at newlines only, as the syntax tree counts lines
    text = problem.text
    roots = {s.name for s in problem.sizes if s.root}
    before = problem.size_values
    shapes: dict[str, int] = {}
    for statement in reversed(tree.body):
        if not isinstance(statement, ast.Assign):
            continue
        pairs = _targets(statement)
        shape = _shape_literal(statement)
        if shape is not None:
            name, elements = shape
            new = _assignment(statement, [name], [str(scaled_size(v, factor)) for v in elements])
            shapes.update({f"{name}[{i}]": v for i, v in enumerate(elements) if scaled_size(v, factor) != v})
        elif pairs and any(name in roots for name, _ in pairs) and not any(_uses_names(v) for _, v in pairs):
            values = []
            for name, value in pairs:
                constant = _constant(value, None)
                if name in roots and isinstance(constant, int):
                    values.append(str(scaled_size(constant, factor)))
                else:
                    values.append(ast.unparse(value))
            new = _assignment(statement, [n for n, _ in pairs], values)
        else:
            continue
        # the statement's own span: another statement may share its line (``depth = 32; height = 128``)
        start = _offset(lines, statement.lineno, statement.col_offset)
        end = _offset(lines, statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
        text = text[:start] + new + text[end:]
    scaled = parse_problem(text, problem.path)
    changed = {n: v for n, v in before.items() if scaled.size_values.get(n) != v}
    return ProblemFile(**{**scaled.__dict__, "scale": factor, "scaled_from": {**changed, **shapes}})


@dataclass(frozen=True)
class Baseline:
    """One published baseline: a problem file's reference time on one machine, in milliseconds."""

    level: int
    file: str
    statistics: dict[str, float]  # mean, std, min, max (ms) and num_trials
    hardware: str
    device: str

    @property
    def number(self) -> int:
        number = where_from(self.file)[1]
        assert number is not None  # parse_baselines takes only files named N_Title.py
        return number

    @property
    def name(self) -> str:
        """The operation name the problem file itself gets (`ProblemFile.name`)."""
        return problem_name(self.level, self.number, where_from(self.file)[2])


def baseline_variant(file_name: str) -> str:
    """``torch`` (eager) or the torch.compile configuration a baseline file names."""
    stem = file_name.removesuffix(".json")
    if stem == "baseline_time_torch":
        return "torch"
    if stem.startswith("baseline_time_torch_compile_"):
        return "torch.compile " + stem.removeprefix("baseline_time_torch_compile_").replace("_", "-")
    raise KernelBenchError(
        file_name,
        None,
        "not a KernelBench baseline file (baseline_time_torch.json or baseline_time_torch_compile_*.json)",
    )


def parse_baselines(data: Any, path: str) -> list[Baseline]:
    """``{"level1": {"1_X.py": {mean, std, min, max, num_trials, hardware, device}}}`` (parsed JSON), every
    field checked."""
    if not isinstance(data, dict) or not data:
        raise KernelBenchError(path, 1, "must hold an object of level → problem file → timing")
    out = []
    for level_key, problems in data.items():
        match = _LEVEL.match(level_key)
        if not match:
            raise KernelBenchError(path, None, f"{level_key!r} is not a level (level1, level2, ...)")
        if not isinstance(problems, dict):
            raise KernelBenchError(path, None, f"{level_key} must be an object of problem file → timing")
        for file, entry in problems.items():
            where = f"{level_key}.{file}"
            if not isinstance(entry, dict) or not _FILE.match(file):
                raise KernelBenchError(path, None, f"{where} must be an object keyed by a file such as 1_Name.py")
            stats: dict[str, float] = {}
            for key in BASELINE_FIELDS:
                value = entry.get(key)
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    raise KernelBenchError(path, None, f"{where}.{key} must be a finite number, got {value!r:.40}")
                if value < 0 or (key in ("mean", "min", "max", "num_trials") and value <= 0):
                    raise KernelBenchError(path, None, f"{where}.{key} must be positive, got {value!r}")
                stats[key] = value
            if not stats["min"] <= stats["mean"] <= stats["max"]:
                raise KernelBenchError(path, None, f"{where}: mean {stats['mean']} is not between min and max")
            for key in ("hardware", "device"):
                if not isinstance(entry.get(key), str) or not entry[key].strip():
                    raise KernelBenchError(path, None, f"{where}.{key} must be a non-empty string")
            out.append(Baseline(int(match.group(1)), file, stats, entry["hardware"].strip(), entry["device"]))
    return out
