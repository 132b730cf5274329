"""The sandboxed child process: runs the solution or the reference over slots of a parent's arena.

Started as `python -I -B -c BOOT child ROLE REQUEST_FD REPLY_FD` (inside bubblewrap) or forked
by the fork server when there is no sandbox. Isolated mode keeps the working directory,
PYTHONPATH and user site-packages off sys.path; torch and the harness are imported before the
solution's folder is appended to the END of sys.path, so a solution file named `torch.py` or
`kernelindex.py` shadows nothing.

Nothing this process says decides a verdict or becomes a published figure. The parent opens the
arena first (`open`), may time empty batches of this loop (`calibrate`, in the reference's
process only), then loads the code (`load`). Replies carry per-call timings (kept by the parent
as a labelled cross-check only), notes and, for a call that failed, which kind of failure it
was; the parent validates each reply against its schema (`replies.py`). Outputs are written into
the parent's buffers; the parent reads and compares them itself.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import threading
import traceback
import uuid as uuid_module
from pathlib import Path

import torch  # noqa: F401  (before any user code)

from kernelindex.formats.definition import load_definition
from kernelindex.formats.workload import parse_case
from kernelindex.harness import hacks
from kernelindex.harness.arena import Layout, open_arena
from kernelindex.harness.dtypes import torch_dtype
from kernelindex.harness.inputs import load_reference, make_inputs
from kernelindex.harness.timing import make_timer

_enumerate = threading.enumerate


class CallFailed(Exception):
    """A failed call; `kind` is one of compile, shape, dtype, runtime."""

    def __init__(self, kind: str, log: str):
        super().__init__(log)
        self.kind, self.log = kind, log


def _is_compile_error(exc: BaseException) -> bool:
    names = {f"{c.__module__}.{c.__name__}" for c in type(exc).__mro__}
    return any("CompilationError" in n or n.startswith("triton.compiler") or "BuildExtension" in n for n in names)


def _returned(names: list[str], result) -> list:
    if isinstance(result, dict):
        return [result.get(n) for n in names]
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


class Calls:
    """Runs one callable over arena slots, timing each call with a clock bound before user code loads."""

    def __init__(self, arena, device: str, dps: bool):
        self.arena, self.device, self.dps = arena, device, dps
        self.timer = make_timer(device)
        self.layouts: dict[str, Layout] = {}

    def layout(self, data: dict) -> Layout:
        key = json.dumps(data, sort_keys=True)
        if key not in self.layouts:
            self.layouts[key] = Layout.from_json(data)
        return self.layouts[key]

    def _store(self, layout: Layout, result, outs: list) -> None:
        got = _returned([e.name for e in layout.outputs], result)
        if len(got) != len(outs):
            raise CallFailed("shape", f"returned {len(got)} outputs, expected {len(outs)}")
        for entry, value, slot in zip(layout.outputs, got, outs):
            if type(value) is not torch.Tensor:
                what = f"{type(value).__module__}.{type(value).__qualname__}"
                raise CallFailed("runtime", f"output {entry.name!r} is a {what}, not a plain torch.Tensor")
            if tuple(value.shape) != tuple(slot.shape):
                raise CallFailed(
                    "shape", f"output {entry.name!r} has shape {tuple(value.shape)}, expected {tuple(slot.shape)}"
                )
            if value.dtype != slot.dtype:
                raise CallFailed("dtype", f"output {entry.name!r} is {value.dtype}, expected {slot.dtype}")
            slot.copy_(value)

    def batch(self, fn, layout: Layout, slots: list[int], timed: bool, scalars: dict | None = None) -> list[int]:
        """Every call's views are made before the first call, so the loop between calls is as short as
        it can be: the parent times the whole batch, and what it subtracts is this loop run empty.
        `scalars` holds, by slot number (a string, as JSON has it), the scalars a custom inputs
        function made for that slot."""
        given = scalars or {}
        views = [(layout.args(self.arena, slot, given.get(str(slot))), layout.outs(self.arena, slot)) for slot in slots]
        samples = []
        start, stop, flush, barrier = self.timer.start, self.timer.stop, self.timer.flush, self.timer.barrier
        with torch.no_grad():
            for slot, (args, outs) in zip(slots, views):
                flush()
                try:
                    start()
                    if self.dps:
                        fn(*args, *outs)
                    else:
                        self._store(layout, fn(*args), outs)  # the copy into the slot is part of the call
                    elapsed = stop()
                    barrier()
                except CallFailed:
                    raise
                except BaseException as exc:
                    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                        raise
                    kind = "compile" if _is_compile_error(exc) else "runtime"
                    raise CallFailed(kind, f"call in slot {slot}:\n{traceback.format_exc()}") from None
                if timed:
                    samples.append(elapsed())
        return samples


class SolutionProcess:
    def __init__(self, request: dict, arena):
        self.calls = Calls(arena, request["device"], request["dps"])
        self.functions = hacks.FunctionGuard(torch)
        self.switches = hacks.SwitchGuard(torch)
        self.threads = set(_enumerate())
        scratch = os.getcwd()
        sys.path.append(scratch)  # last: installed modules win over same-named solution files
        try:
            if request["compiled"]:
                from torch.utils.cpp_extension import load

                options = request.get("compile_options") or {}
                sources = [
                    str(Path(scratch) / p) for p in request["sources"] if p.endswith((".cu", ".cpp", ".cc", ".cxx"))
                ]
                module = load(
                    name=f"kisol_{uuid_module.uuid4().hex[:12]}",
                    sources=sources,
                    build_directory=scratch,
                    extra_cflags=options.get("cflags") or [],
                    extra_cuda_cflags=options.get("cuda_cflags") or [],
                    extra_ldflags=options.get("ld_flags") or [],
                    verbose=False,
                )
            else:
                spec = importlib.util.spec_from_file_location(
                    f"kisol_{uuid_module.uuid4().hex[:12]}", str(Path(scratch) / request["entry_file"])
                )
                if spec is None or spec.loader is None:
                    raise ImportError(f"cannot load {request['entry_file']!r} as a module")
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module
                spec.loader.exec_module(module)
            self.fn = getattr(module, request["entry_function"])
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise CallFailed("compile", traceback.format_exc()) from None

    def notes(self) -> list[str]:
        """What this process noticed about itself: log lines for a reader, never a verdict."""
        threads = [f"left thread {t.name!r} running" for t in _enumerate() if t not in self.threads and t.is_alive()]
        return self.functions.changed() + self.switches.changed() + threads

    def batch(self, request: dict) -> dict:
        layout = self.calls.layout(request["layout"])
        samples = self.calls.batch(self.fn, layout, request["slots"], request["timed"], request.get("scalars"))
        return {"samples": samples, "notes": self.notes()}


class ReferenceProcess:
    """Makes the inputs (the reference may define how) and runs the reference, from the pristine copy."""

    def __init__(self, request: dict, arena):
        self.calls = Calls(arena, request["device"], dps=False)
        self.definition = load_definition(request["definition_path"])
        self.problem_root = request["problem_root"]
        self.files = request.get("blobs") or {}  # each safetensors path's file in the snapshot (blobs.stage)
        self.style = request.get("format", "kernelindex")  # whose way of drawing random inputs (inputs.make_inputs)
        try:
            self.module = load_reference(self.definition)
            self.fn = self.module.run
        except Exception:
            raise CallFailed("compile", f"the reference does not load:\n{traceback.format_exc()}") from None

    def inputs(self, request: dict) -> dict:
        """Tensors go into the slots; a scalar the custom inputs function made goes back to the parent,
        which hands it to both sides with the batch that slot is in."""
        layout = self.calls.layout(request["layout"])
        case = parse_case(request["case"], self.definition, Path("workload.jsonl"), 0)
        custom_scalars = [
            n for n, s in self.definition.inputs.items() if s.is_scalar and case.inputs[n].type == "custom"
        ]
        scalars: dict[str, dict] = {}
        for slot, purpose, index in request["calls"]:
            made = make_inputs(
                self.definition,
                case,
                purpose,
                index,
                self.calls.device,
                self.problem_root,
                self.module,
                nonce=request["nonce"],
                files=self.files,
                style=self.style,
            )
            for name, view in layout.tensor_inputs(self.calls.arena, slot).items():
                value = made[name]
                if not isinstance(value, torch.Tensor) or tuple(value.shape) != tuple(view.shape):
                    raise CallFailed(
                        "shape",
                        f"input {name!r} was made as {getattr(value, 'shape', type(value))}, "
                        f"the definition says {tuple(view.shape)}",
                    )
                view.copy_(value.to(torch_dtype(layout_dtype(layout, name))))
            if custom_scalars:
                scalars[str(slot)] = {name: _scalar(name, made[name]) for name in custom_scalars}
        return {"scalars": scalars}

    def batch(self, request: dict) -> dict:
        layout = self.calls.layout(request["layout"])
        return {
            "samples": self.calls.batch(self.fn, layout, request["slots"], request["timed"], request.get("scalars")),
            "notes": [],
        }


def _scalar(name: str, value):
    """A Python scalar input as the custom inputs function made it: a bool, an int or a finite float."""
    if hasattr(value, "item") and not isinstance(value, torch.Tensor):  # a numpy scalar
        value = value.item()
    if isinstance(value, bool) or (isinstance(value, (int, float)) and math.isfinite(value)):
        return value
    raise CallFailed("shape", f"scalar input {name!r} was made as {value!r:.60}, not a bool, int or finite float")


def layout_dtype(layout: Layout, name: str) -> str:
    return next(e.dtype for e in layout.inputs if e.name == name)


def _empty(*args) -> None:
    """The empty call the parent's calibration times: the loop's own cost, with no kernel in it."""


class Worker:
    """One child's state: its arena (opened first), then the solution or reference loaded into it."""

    def __init__(self, role: str, arena_fd: int | None):
        self.role, self.arena_fd = role, arena_fd
        self.arena = None
        self.device = "cpu"
        self.process: SolutionProcess | ReferenceProcess | None = None

    def handle(self, request: dict) -> dict:
        op = request["op"]
        if op == "open":
            self.arena, self.device = open_arena(request["arena"], self.arena_fd), request["device"]
            return {}
        if op == "calibrate":  # asked of the reference's process only: no solution code runs where it is timed
            calls = Calls(self.arena, self.device, dps=True)
            return {
                "samples": calls.batch(_empty, calls.layout(request["layout"]), request["slots"], True),
                "notes": [],
            }
        if op == "load":
            kind = SolutionProcess if self.role == "solution" else ReferenceProcess
            self.process = kind({**request, "device": self.device}, self.arena)
            return {}
        return getattr(self.process, op)(request)


def serve(role: str, request_fd: int, reply_fd: int, arena_fd: int | None = None) -> None:
    """Answer requests until the parent closes the pipe. Every reply echoes the request's number."""
    worker = Worker(role, arena_fd)
    with os.fdopen(request_fd, "r") as requests, os.fdopen(reply_fd, "w") as replies:
        for line in requests:
            request = json.loads(line)
            try:
                reply = {"ok": True, **worker.handle(request)}
            except CallFailed as failure:
                reply = {"ok": False, "kind": failure.kind, "log": failure.log}
            except Exception:
                reply = {"ok": False, "kind": "runtime", "log": traceback.format_exc()}
            reply["seq"] = request["seq"]
            replies.write(json.dumps(reply) + "\n")
            replies.flush()


def main() -> None:
    if sys.argv[1] == "forkserver":
        from kernelindex.harness.forkserver import serve as serve_forks

        serve_forks(int(sys.argv[2]), serve)
    elif sys.argv[1] == "zygote":
        from kernelindex.harness.zygote import serve as serve_warm

        serve_warm(int(sys.argv[2]), serve)
    else:
        serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
