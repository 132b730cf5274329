"""The child process: runs either the solution or the reference, one JSON request at a time.

Started by `isolation.Worker` as `python -I -c BOOT`: isolated mode keeps the working directory,
PYTHONPATH and user site-packages off sys.path, and torch plus the whole harness are imported
before the solution's folder is appended to the END of sys.path, so a solution file named
`torch.py` or `kernelindex.py` shadows nothing. Requests and replies travel on two private pipes;
stdout and stderr are the case log. Tensors travel as files in the case's io folder.

A solution process never holds reference outputs: the reference process regenerates the
solution's inputs from their seeds after the solution process has finished and compares there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import sys
import threading
import traceback
import uuid as uuid_module
from pathlib import Path

import torch  # noqa: E402  (before any user code)

from kernelindex.harness import hacks
from kernelindex.harness.compare import compare_output
from kernelindex.harness.dtypes import torch_dtype
from kernelindex.harness.formats import Definition, load_definition, parse_case
from kernelindex.harness.inputs import load_reference, make_inputs
from kernelindex.harness.timing import make_timer

_save, _load, _clone, _enumerate = torch.save, torch.load, torch.Tensor.clone, threading.enumerate


class CaseFailure(Exception):
    def __init__(self, status: str, log: str):
        super().__init__(log)
        self.status, self.log = status, log


def _is_compile_error(exc: BaseException) -> bool:
    names = {f"{c.__module__}.{c.__name__}" for c in type(exc).__mro__}
    return any("CompilationError" in n or n.startswith("triton.compiler") or "BuildExtension" in n for n in names)


def _outputs_as_list(definition: Definition, result) -> list:
    names = list(definition.outputs)
    if isinstance(result, dict):
        return [result.get(n) for n in names]
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


def _allocate_outputs(definition: Definition, axis_values: dict, device: str) -> list:
    outs = []
    for spec in definition.outputs.values():
        if spec.is_scalar:
            raise CaseFailure("RUNTIME_ERROR", f"output {spec.name!r} is a scalar; destination passing needs tensors")
        shape = definition.shape(spec, axis_values)
        dtype = torch_dtype(spec.dtype)
        if dtype.is_floating_point:
            outs.append(torch.full(shape, float("nan"), dtype=dtype, device=device))  # untouched = wrong
        else:
            outs.append(torch.empty(shape, dtype=dtype, device=device))
    return outs


class SolutionRunner:
    def __init__(self, job: dict):
        self.job = job
        self.device = job["device"]
        self.definition = load_definition(job["definition_path"])
        self.timer = make_timer(self.device)
        self.functions = hacks.FunctionGuard(torch)
        self.switches = hacks.SwitchGuard(torch)
        self.baseline_threads = set(_enumerate())
        self.reference = None
        self.kept: dict[int, list] = {}
        self.previous_buffers = None

    def hack_reasons(self) -> list[str]:
        return self.functions.changed() + self.switches.changed()

    def load(self) -> None:
        scratch = self.job["scratch"]
        sys.path.append(scratch)  # last: installed modules win over same-named solution files
        try:
            if self.job["compiled"]:
                from torch.utils.cpp_extension import load

                options = self.job.get("compile_options") or {}
                sources = [str(Path(scratch) / p) for p in self.job["sources"] if p.endswith((".cu", ".cpp", ".cc", ".cxx"))]
                module = load(
                    name=f"kisol_{uuid_module.uuid4().hex[:12]}", sources=sources, build_directory=scratch,
                    extra_cflags=options.get("cflags") or [], extra_cuda_cflags=options.get("cuda_cflags") or [],
                    extra_ldflags=options.get("ld_flags") or [], verbose=False,
                )
            else:
                spec = importlib.util.spec_from_file_location(
                    f"kisol_{uuid_module.uuid4().hex[:12]}", str(Path(scratch) / self.job["entry_file"]))
                module = importlib.util.module_from_spec(spec)
                sys.modules[spec.name] = module
                spec.loader.exec_module(module)
            self.fn = getattr(module, self.job["entry_function"])
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            raise CaseFailure("COMPILE_ERROR", traceback.format_exc()) from None
        reasons = self.hack_reasons() + self._thread_reasons()
        if reasons:
            raise CaseFailure("REWARD_HACK", "while loading the solution: " + "; ".join(reasons))

    def _thread_reasons(self) -> list[str]:
        extra = [t for t in _enumerate() if t not in self.baseline_threads and t.is_alive()]
        return [f"left thread {t.name!r} running after the call returned" for t in extra]

    def call(self, case, purpose: str, index: int) -> tuple[int, list]:
        """One timed call with all checks; returns (elapsed ns, outputs as they were on return)."""
        inputs = make_inputs(self.definition, case, purpose, index, self.device, self.job["problem_root"], self.reference)
        args = list(inputs.values())
        inputs_before = [_clone(a) if isinstance(a, torch.Tensor) else a for a in args]
        dps = self.job["dps"]
        outs = _allocate_outputs(self.definition, self.axis_values, self.device) if dps else None
        threads_before = set(_enumerate())
        self.timer.flush()
        try:
            with torch.no_grad():
                self.timer.start()
                result = self.fn(*args, *outs) if dps else self.fn(*args)
                elapsed = self.timer.stop()
                produced = outs if dps else _outputs_as_list(self.definition, result)
                returned = [_clone(o) if isinstance(o, torch.Tensor) else o for o in produced]
                self.timer.barrier()
        except CaseFailure:
            raise
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            status = "COMPILE_ERROR" if _is_compile_error(exc) else "RUNTIME_ERROR"
            raise CaseFailure(status, f"{purpose} call {index}:\n{traceback.format_exc()}") from None
        for thread in [t for t in _enumerate() if t not in threads_before]:
            thread.join(self.thread_join_s)  # a barrier: whatever the threads still do lands before the checks
        reasons = []
        if len(produced) != len(self.definition.outputs):
            raise CaseFailure("INCORRECT_SHAPE", f"returned {len(produced)} outputs, expected {len(self.definition.outputs)}")
        for name, value in zip(self.definition.outputs, produced):
            reasons += [f"output {name!r}: {p}" for p in hacks.output_problems(torch, value, self.device)]
        if not reasons:
            for name, late, early in zip(self.definition.outputs, produced, returned):
                if isinstance(late, torch.Tensor) and not hacks.same_bits(torch, late, early):
                    reasons.append(f"output {name!r} changed after the call returned (work finished after the timer stopped)")
        for name, now, before in zip(inputs, args, inputs_before):
            if isinstance(now, torch.Tensor) and not hacks.same_bits(torch, now, before):
                reasons.append(f"wrote into input {name!r}")
        reasons += self._thread_reasons() + self.hack_reasons()
        if reasons:
            raise CaseFailure("REWARD_HACK", f"{purpose} call {index}: " + "; ".join(reasons))
        # Held until the next call has allocated its own: the allocator cannot hand the next call
        # the same addresses, so nothing keyed on pointers carries over between calls.
        self.previous_buffers = (args, outs)
        return elapsed(), returned

    def run(self, request: dict) -> dict:
        case = parse_case(request["case"], self.definition, Path("workload.jsonl"), 0)
        self.axis_values = self.definition.resolve_axes(case.axes)
        self.thread_join_s = request["thread_join_s"]
        if any(s.type == "custom" for s in case.inputs.values()):
            self.reference = load_reference(self.definition, f"_kiref_{uuid_module.uuid4().hex[:12]}")
        io_dir = Path(request["io_dir"])
        for r in range(request["rounds"]):
            _, outs = self.call(case, "round", r)
            _save([_cpu(o) for o in outs], io_dir / f"round-{r}.pt")
        for i in range(request["warmup"]):
            self.call(case, "warmup", i)
        samples, chance = [], random.SystemRandom()
        for i in range(request["iterations"]):
            elapsed, outs = self.call(case, "timed", i)
            samples.append(elapsed)
            size = max(1, sum(o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor)))
            slots = request["keep_bytes"] // size
            # Keep a uniform random subset of the timed results (all of them when memory allows);
            # the parent picks which of those to check only after timing is over.
            if len(self.kept) < slots:
                self.kept[i] = outs
            elif slots and chance.randrange(i + 1) < slots:
                del self.kept[chance.choice(list(self.kept))]
                self.kept[i] = outs
        return {"ok": True, "samples_ns": samples, "kept": sorted(self.kept)}

    def save_timed(self, request: dict) -> dict:
        io_dir = Path(request["io_dir"])
        for i in request["indices"]:
            _save([_cpu(o) for o in self.kept[i]], io_dir / f"timed-{i}.pt")
        return {"ok": True}


def _cpu(value):
    return value.detach().to("cpu") if isinstance(value, torch.Tensor) else value


class ReferenceRunner:
    """Computes reference outputs for the calls the solution made, compares, and times the reference."""

    def __init__(self, job: dict):
        self.device = job["device"]
        self.definition = load_definition(job["definition_path"])
        self.timer = make_timer(self.device)
        try:
            self.module = load_reference(self.definition)
            self.run_fn = self.module.run
        except Exception:
            self.error = traceback.format_exc()
        else:
            self.error = None

    def _reference(self, case, purpose: str, index: int, timed: bool = False):
        inputs = make_inputs(self.definition, case, purpose, index, self.device, self.problem_root, self.module)
        self.timer.flush()
        try:
            with torch.no_grad():
                self.timer.start()
                result = self.run_fn(*inputs.values())
                elapsed = self.timer.stop()
                self.timer.barrier()
        except Exception:
            raise CaseFailure("INVALID_REFERENCE", f"reference failed on {purpose} call {index}:\n{traceback.format_exc()}") from None
        outs = _outputs_as_list(self.definition, result)
        if len(outs) != len(self.definition.outputs):
            raise CaseFailure("INVALID_REFERENCE", f"reference returned {len(outs)} outputs, the definition has {len(self.definition.outputs)}")
        for (name, spec), out in zip(self.definition.outputs.items(), outs):
            if spec.is_scalar:
                continue
            shape = self.definition.shape(spec, self.axis_values)
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != shape or out.dtype != torch_dtype(spec.dtype):
                got = f"{tuple(out.shape)} {out.dtype}" if isinstance(out, torch.Tensor) else type(out).__name__
                raise CaseFailure("INVALID_REFERENCE", f"reference output {name!r} is {got}, the definition says {shape} {spec.dtype}")
        return (elapsed() if timed else None), outs

    def check(self, request: dict) -> dict:
        if self.error:
            raise CaseFailure("INVALID_REFERENCE", f"the reference does not load:\n{self.error}")
        self.problem_root = request["problem_root"]
        case = parse_case(request["case"], self.definition, Path("workload.jsonl"), 0)
        self.axis_values = self.definition.resolve_axes(case.axes)
        io_dir = Path(request["io_dir"])
        checks = {}
        for purpose, index in request["calls"]:
            _, ref = self._reference(case, purpose, index)
            path = io_dir / f"{purpose}-{index}.pt"
            try:
                outs = _load(path, map_location="cpu", weights_only=True)
            except Exception as exc:
                raise CaseFailure("RUNTIME_ERROR", f"solution outputs {path.name} unreadable: {exc}") from None
            checks[f"{purpose}-{index}"] = [
                compare_output(name, spec, out, r, case.tolerance).to_dict()
                for (name, spec), out, r in zip(self.definition.outputs.items(), outs, ref)
            ]
        for i in range(request["warmup"]):
            self._reference(case, "warmup", i)
        samples = [self._reference(case, "timed", i, timed=True)[0] for i in range(request["iterations"])]
        return {"ok": True, "checks": checks, "samples_ns": samples}


def _serve(role: str, requests, replies) -> None:
    runner = None
    for line in requests:
        request = json.loads(line)
        try:
            if request["op"] == "start":
                runner = SolutionRunner(request) if role == "solution" else ReferenceRunner(request)
                if role == "solution":
                    runner.load()
                reply = {"ok": True}
            else:
                reply = getattr(runner, request["op"])(request)
        except CaseFailure as failure:
            reply = {"ok": False, "status": failure.status, "log": failure.log}
        except Exception:
            reply = {"ok": False, "status": "RUNTIME_ERROR", "log": traceback.format_exc()}
        reply["token"] = request["token"]  # proves the reply came from here, not from solution code
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def _run(role: str, request_fd: int, reply_fd: int) -> None:
    with os.fdopen(request_fd, "r") as requests, os.fdopen(reply_fd, "w") as replies:
        _serve(role, requests, replies)


def main() -> None:
    if sys.argv[1] == "forkserver":
        from kernelindex.harness.forkserver import serve

        serve(int(sys.argv[2]), _run)
    else:
        _run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
