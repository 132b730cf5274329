"""A KernelBench problem file and ModelNew file as the problem and solution the runner already runs.

The problem's text becomes a definition whose reference builds ``Model(*get_init_inputs())`` once,
with the generator seeded as KernelBench seeds it (42 before the init inputs, 42 again before the
model), and whose custom-inputs function is ``get_inputs()`` called under the harness's per-call
seed; one workload case holds the module-level sizes. Python scalars that ``get_inputs()`` returns
beside its tensors (ints, floats, bools) become scalar inputs whose values the workload case holds, so
both sides get them by value, as KernelBench passes them to forward, and another value is another case. The solution becomes a Python-side solution
whose entry builds ``ModelNew`` the same way, so parameters made by ``nn`` layers agree. Nothing
is bypassed: both run sandboxed, the parent times and checks every call.

The problem is probed in a child process (`kernelbench_probe`, meta device) for its shapes, so a
problem too large for the machine is refused, with the memory it needs, before anything runs.
"""

from __future__ import annotations

import ast
import hashlib
import json
import keyword
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kernelindex.formats.errors import FormatError
from kernelindex.formats.kernelbench import (
    KernelBenchError,
    ProblemFile,
    parse_problem,
    problem_name,
    scale_problem,
    where_from,
)
from kernelindex.formats.problem import Problem, load_problem
from kernelindex.formats.solution import Solution, load_solution
from kernelindex.harness import kernelbench_judge as judge
from kernelindex.harness.dtypes import DTYPES

SEED = 42
PROBE_TIMEOUT_S = 300.0
ENTRY = "kernelbench_entry.py"
PROBLEM_COPY = "kernelbench_problem.py"
SOLUTION_COPY = "model_new.py"
INPUTS_FUNCTION = "_kernelbench_inputs"
# the probe is run from this file's own folder, never found on sys.path: the same code as the parent's,
# whichever kernelindex the interpreter has installed (it imports nothing of kernelindex)
PROBE = Path(__file__).with_name("kernelbench_probe.py")
_RUN_PROBE = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"

_REFERENCE_TAIL = """

# --- added by kernelindex: the harness's entry points over the KernelBench problem above ---
_kernelbench_model = None


def {inputs_fn}(axes, device):
    values = get_inputs()  # scalars (None here) are the workload's, passed by value
    return {{name: value.to(device) for name, value in zip({names!r}, values) if name is not None}}


def run({args}):
    global _kernelbench_model
    if _kernelbench_model is None:
        import torch as _torch

        _torch.manual_seed({seed})
        _init = get_init_inputs()
        _torch.manual_seed({seed})
        _kernelbench_model = Model(*_init).to({first}.device)
    return _kernelbench_model({args})
"""

_ENTRY = '''"""Written by kernelindex: builds ModelNew as KernelBench does (seed 42, init inputs, seed 42)."""

import importlib.util
import pathlib

import torch

_HERE = pathlib.Path(__file__).resolve().parent


def _load(name):
    spec = importlib.util.spec_from_file_location(name, _HERE / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_problem = _load({problem!r})
_solution = _load({solution!r})
_model = None


def run(*inputs):
    global _model
    if _model is None:
        torch.manual_seed({seed})
        init = _problem.get_init_inputs()
        torch.manual_seed({seed})
        _model = _solution.ModelNew(*init).to(next(x for x in inputs if isinstance(x, torch.Tensor)).device)
    return _model(*inputs)
'''


@dataclass
class Prepared:
    """What the runner takes, written into ``folder``, plus what was learnt on the way."""

    file: ProblemFile
    problem: Problem
    solution: Solution
    probe: dict
    precision: str
    needed_bytes: int


class TooLarge(ValueError):
    """The problem's sizes need more memory than the machine has."""


class ModelFailed(FormatError):
    """``Model`` (or its inputs) failed at the file's sizes, on the meta device and on the CPU."""


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError(path, None, None, "file not found") from None
    except (UnicodeDecodeError, IsADirectoryError) as exc:
        raise FormatError(path, None, None, f"not a readable UTF-8 file ({exc})") from None


def read_problem(path: str | Path, scale: float = 1.0) -> ProblemFile:
    path = Path(path)
    try:
        return scale_problem(parse_problem(_read(path), str(path)), scale)
    except KernelBenchError as exc:
        raise FormatError(path, exc.line, None, exc.reason) from None


def probe(file: ProblemFile, timeout_s: float = PROBE_TIMEOUT_S) -> dict:
    """Shapes and dtypes of the problem's inputs and outputs, and its parameters' bytes, from a child."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["CUDA_VISIBLE_DEVICES"] = ""  # the probe needs no GPU and takes none
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", _RUN_PROBE, str(PROBE)],
            input=file.text,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            cwd="/",
        )
    except subprocess.TimeoutExpired:
        raise FormatError(file.path, None, None, f"probing its shapes took over {timeout_s:g} s") from None
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        tail = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise FormatError(file.path, None, None, f"probing its shapes failed: {tail[0][:300]}") from None
    if "error" in answer:
        scaled = f" at its sizes scaled by {file.scale:g}" if file.scale != 1 else ""
        raise ModelFailed(file.path, None, None, f"running Model{scaled} on the meta device failed: {answer['error']}")
    for side in ("inputs", "outputs"):
        for entry in answer[side]:
            if entry["dtype"] not in DTYPES:
                raise FormatError(file.path, None, side, f"dtype {entry['dtype']} is not one the harness handles")
    if not any("scalar" not in entry for entry in answer["inputs"]):
        raise FormatError(file.path, None, "get_inputs", "returns no tensors")
    return answer


def probe_scaled(path: str | Path, scale: float) -> tuple[ProblemFile, dict]:
    """The problem at ``scale`` and its probe answer or, where Model fails at those sizes, at the first of
    scale·2, scale·4, ... (up to 1) where it runs. A file can tie sizes it never computes from each
    other (upstream's LayerNorm(out_channels) over a width that equals it only at upstream's sizes),
    which no rounding rule keeps; a coarser scale still makes a smoke run, recorded as its own workload."""
    while True:
        file = read_problem(path, scale)
        try:
            return file, probe(file)
        except ModelFailed:
            if scale >= 1:
                raise
            scale = min(1.0, scale * 2)


def needed_bytes(answer: dict, rounds: int, batch: int) -> int:
    """Memory an evaluation needs, roughly: each side's arena holds every checked and timed call's
    inputs and outputs, the parent a pristine copy of the inputs; both models hold their parameters
    and make activations about the size of an output."""
    inputs = sum(e["bytes"] for e in answer["inputs"])
    outputs = sum(e["bytes"] for e in answer["outputs"])
    slots = rounds + batch
    return 2 * slots * (inputs + outputs) + slots * inputs + 2 * answer["parameter_bytes"] + 4 * outputs


def available_bytes(device: str) -> int:
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"--device {device}, but this machine has no usable GPU")
        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    with open("/proc/meminfo", encoding="ascii") as f:
        info = dict(line.split(":", 1) for line in f)
    return int(info["MemAvailable"].split()[0]) * 1024


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.2f} GiB"


def _identifier(name: str, taken: set[str]) -> str:
    """A record identifier (lower case, ``[a-z][a-z0-9_]*``) for an upstream name, unique among ``taken``."""
    base = re.sub(r"[^a-z0-9_]", "_", name.lower()).strip("_") or "x"
    base = base if base[0].isalpha() and not keyword.iskeyword(base) else f"x_{base}"
    found, n = base, 2
    while found in taken:
        found, n = f"{base}_{n}", n + 1
    taken.add(found)
    return found


def _names(file: ProblemFile, count: int, taken: set[str]) -> list[str]:
    """Input names: forward's parameters (as identifiers) when there is one per input, else input_<i>."""
    names = list(file.forward_args) if len(file.forward_args) == count else [f"input_{i}" for i in range(count)]
    return [_identifier(n, taken) for n in names]


def _shape(tensor: str, shape: list[int], sizes: dict[str, int], extra: dict[str, int]) -> list[str]:
    """Each dimension named by the first module-level size of that value, else an axis of its own."""
    dims = []
    for i, value in enumerate(shape):
        name = next((n for n, v in sizes.items() if v == value), None)
        if name is None:
            name = f"{tensor}_dim{i}"
            extra[name] = value  # input and output names are unique identifiers already
        dims.append(name)
    return dims


def _solution_file(path: Path) -> str:
    text = _read(path)
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise FormatError(path, exc.lineno, None, f"not valid Python: {exc.msg}") from None
    defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef)} | {
        t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
    }
    if "ModelNew" not in defined:
        raise FormatError(path, None, None, "defines no class ModelNew (a KernelBench solution holds ModelNew)")
    return text


def prepare(
    problem_path: str | Path,
    solution_path: str | Path,
    folder: str | Path,
    *,
    scale: float = 1.0,
    device: str = "cpu",
    rounds: int = judge.TRIALS,
    batch: int = 5,
    check_memory: bool = True,
    probed: dict | None = None,
) -> Prepared:
    """Write the internal problem folder and solution into ``folder``; refuse a problem that does not fit.
    ``probed``: the `probe` answer of an earlier `prepare` of this problem at this scale, for a second
    solution of it (probing starts a Python with torch: seconds). The scale used is ``file.scale``: more
    than ``scale`` where Model fails at the sizes ``scale`` gives (`probe_scaled`)."""
    solution_text = _solution_file(Path(solution_path))
    file, answer = probe_scaled(problem_path, scale) if probed is None else (read_problem(problem_path, scale), probed)
    need = needed_bytes(answer, rounds, batch)
    if check_memory:
        have = available_bytes(device)
        if need > have:
            hint = "" if device.startswith("cuda") else "; try --scale 0.1 for a CPU smoke run"
            raise TooLarge(
                f"{problem_path}: needs about {_gib(need)} ({_gib(sum(e['bytes'] for e in answer['inputs']))} of "
                f"inputs and {_gib(sum(e['bytes'] for e in answer['outputs']))} of outputs per call, "
                f"{_gib(answer['parameter_bytes'])} of parameters, {rounds + batch} calls on each side), "
                f"{device} has {_gib(have)} available{hint}"
            )
    folder = Path(folder)
    problem_dir, solution_dir = folder / "problem", folder / "solution"
    problem_dir.mkdir(parents=True)
    solution_dir.mkdir(parents=True)
    taken: set[str] = set()
    sizes = {_identifier(n, taken): v for n, v in file.size_values.items()}
    input_names = _names(file, len(answer["inputs"]), taken)
    output_names = ["output"] if len(answer["outputs"]) == 1 else [f"output_{i}" for i in range(len(answer["outputs"]))]
    extra: dict[str, int] = {}
    scalars = {n: e["scalar"] for n, e in zip(input_names, answer["inputs"]) if "scalar" in e}
    inputs = {
        n: {"shape": None, "dtype": e["dtype"]}
        if n in scalars
        else {"shape": _shape(n, e["shape"], sizes, extra), "dtype": e["dtype"]}
        for n, e in zip(input_names, answer["inputs"])
    }
    outputs = {
        n: {"shape": _shape(n, e["shape"], sizes, extra), "dtype": e["dtype"]}
        for n, e in zip(output_names, answer["outputs"])
    }
    floats = [e["dtype"] for e in answer["outputs"] if DTYPES[e["dtype"]].kind == "float"]
    precision = floats[0] if floats and floats[0] in judge.TOLERANCES else judge.DEFAULT_PRECISION
    tensors = [n for n in input_names if n not in scalars]
    reference = file.text + _REFERENCE_TAIL.format(
        inputs_fn=INPUTS_FUNCTION,
        names=[n if n in tensors else None for n in input_names],
        args=", ".join(input_names),
        first=tensors[0],
        seed=SEED,
    )
    axes = {**sizes, **extra}
    definition = {
        "name": file.name,
        "op_type": f"kernelbench_level{file.level}" if file.level is not None else "kernelbench",
        "description": (file.docstring or f"KernelBench {file.title}")[:2000],
        "axes": {name: {"type": "var"} for name in axes},
        "inputs": inputs,
        "outputs": outputs,
        "reference": reference,
        "custom_inputs_entrypoint": INPUTS_FUNCTION,
    }
    tolerance = judge.tolerance_for(precision)
    # a scalar input is part of the workload: another value, another case (tensor-only keys as before)
    case_key = json.dumps(
        {"problem": file.name, "axes": axes, **({"scalars": scalars} if scalars else {})}, sort_keys=True
    )
    uuid = hashlib.sha256(case_key.encode()).hexdigest()[:32]
    case = {
        "uuid": uuid,
        "axes": axes,
        "inputs": {
            name: {"type": "scalar", "value": scalars[name]} if name in scalars else {"type": "custom"}
            for name in input_names
        },
        "tolerance": {
            "max_atol": tolerance.max_atol,
            "max_rtol": tolerance.max_rtol,
            "required_matched_ratio": tolerance.required_matched_ratio,
        },
    }
    (problem_dir / "definition.json").write_text(json.dumps(definition, indent=1), encoding="utf-8")
    (problem_dir / "workload.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    (solution_dir / SOLUTION_COPY).write_text(solution_text, encoding="utf-8")
    (solution_dir / PROBLEM_COPY).write_text(file.text, encoding="utf-8")
    (solution_dir / ENTRY).write_text(
        _ENTRY.format(problem=PROBLEM_COPY.removesuffix(".py"), solution=SOLUTION_COPY.removesuffix(".py"), seed=SEED),
        encoding="utf-8",
    )
    stem = Path(solution_path).stem
    solution = {
        "name": f"{file.name}-{stem}"[:120],
        "definition": file.name,
        "description": f"KernelBench ModelNew from {Path(solution_path).name}",
        "sources": [{"path": p} for p in (ENTRY, SOLUTION_COPY, PROBLEM_COPY)],
        "spec": {
            "languages": ["triton" if "triton" in solution_text else "pytorch"],
            "entry_point": f"{ENTRY}::run",
            "destination_passing_style": False,
        },
    }
    (solution_dir / "solution.json").write_text(json.dumps(solution, indent=1), encoding="utf-8")
    return Prepared(
        file, load_problem(problem_dir), load_solution(solution_dir / "solution.json"), answer, precision, need
    )


def problem_folder(problem_path: str | Path, folder: str | Path, *, scale: float = 1.0) -> Path:
    """Only the internal problem folder (for imports as problem packs): the reference stands in as ModelNew."""
    path = Path(problem_path)
    stand_in = Path(folder) / "reference_as_model_new.py"
    Path(folder).mkdir(parents=True, exist_ok=True)
    stand_in.write_text(_read(path) + "\n\nModelNew = Model\n", encoding="utf-8")
    prepare(path, stand_in, Path(folder) / "pack", scale=scale, check_memory=False)
    return Path(folder) / "pack" / "problem"


def is_problem_folder(path: Path) -> bool:
    """A folder of KernelBench problem files (``KernelBench/level1``): numbered ``.py`` files, no definition.json."""
    return path.is_dir() and not (path / "definition.json").exists() and any(path.glob("[0-9]*_*.py"))


def problem_files(root: str | Path) -> list[Path]:
    """The problem files of a level folder, or of every level folder under a KernelBench/ folder."""
    root = Path(root)
    folders = [root] if is_problem_folder(root) else sorted(p for p in root.glob("level*") if is_problem_folder(p))
    return [path for folder in folders for path in sorted(folder.glob("[0-9]*_*.py"))]


def folder_records(folder: str | Path) -> list[dict]:
    """Problem-pack records (OperationSpec, WorkloadCase, WorkloadSuite) of every problem file in a
    KernelBench level folder, at the sizes the files give."""
    return [record for records in records_by_name(folder).values() for record in records]


def records_by_name(root: str | Path, names: set[str] | None = None) -> dict[str, list[dict]]:
    """Operation name -> the problem-pack records of that problem file (as `folder_records` makes them),
    for the files of `problem_files(root)`; given ``names``, only of those (each file is probed in a
    child process: seconds apiece)."""
    from kernelindex.formats.records import problem_records

    out: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="kernelindex-kernelbench-") as scratch:
        for number, path in enumerate(problem_files(root)):
            name = problem_name(*where_from(str(path)))
            if names is None or name in names:
                out[name] = problem_records(problem_folder(path, Path(scratch) / str(number)))
    return out


def pack_records(path: str | Path) -> list[dict]:
    """The records of a problem folder, ours or KernelBench's (the reader `kernelindex import` is given)."""
    from kernelindex.formats.records import problem_records

    return folder_records(path) if is_problem_folder(Path(path)) else problem_records(path)
