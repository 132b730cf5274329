"""What the solution process notices about itself: replaced functions and process-wide switches.

Snapshots are taken before the solution is imported and compared after every batch. These run
in the solution's own process, so they decide nothing (the solution could rewrite them); what
they notice goes into the case's log for a reader. The parent's own checks (`judgement.py`)
decide the verdict.
"""

from __future__ import annotations

import threading
import time

WATCHED = (
    "time.perf_counter",
    "time.perf_counter_ns",
    "time.monotonic",
    "time.monotonic_ns",
    "time.time",
    "time.time_ns",
    "time.process_time",
    "threading.Thread.start",
    "threading.enumerate",
    "torch.Tensor",
    "torch.Tensor.clone",
    "torch.Tensor.copy_",
    "torch.Tensor.to",
    "torch.Tensor.cpu",
    "torch.Tensor.view",
    "torch.Tensor.__eq__",
    "torch.Tensor.equal",
    "torch.equal",
    "torch.allclose",
    "torch.isclose",
    "torch.save",
    "torch.load",
    "torch.randn",
    "torch.rand",
    "torch.randint",
    "torch.manual_seed",
    "torch.Generator",
    "torch.empty",
    "torch.full",
    "torch.zeros",
    "torch.no_grad",
    "torch.testing.assert_close",
    "torch.cuda.Event",
    "torch.cuda.Event.record",
    "torch.cuda.Event.elapsed_time",
    "torch.cuda.Event.synchronize",
    "torch.cuda.synchronize",
    "torch.cuda.current_stream",
    "torch.cuda.Stream",
)


def _resolve(path: str, modules: dict):
    head, *rest = path.split(".")
    value = modules[head]
    for part in rest:
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


class FunctionGuard:
    """Identity of the functions a timer or a check relies on."""

    def __init__(self, torch):
        self._modules = {"time": time, "threading": threading, "torch": torch}
        self._before = {path: _resolve(path, self._modules) for path in WATCHED}

    def changed(self) -> list[str]:
        return [f"replaced {path}" for path, obj in self._before.items() if _resolve(path, self._modules) is not obj]


def _switches(torch) -> dict:
    probes = {
        "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": lambda: (
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        ),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": lambda: (
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        ),
        "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
        "torch.backends.cudnn.benchmark": lambda: torch.backends.cudnn.benchmark,
        "torch.backends.cudnn.deterministic": lambda: torch.backends.cudnn.deterministic,
        "torch.backends.cudnn.enabled": lambda: torch.backends.cudnn.enabled,
        "torch.backends.mkldnn.enabled": lambda: torch.backends.mkldnn.enabled,
        "float32_matmul_precision": torch.get_float32_matmul_precision,
        "torch.backends.fp32_precision": lambda: torch.backends.fp32_precision,
        "torch.backends.cuda.matmul.fp32_precision": lambda: torch.backends.cuda.matmul.fp32_precision,
        "torch.backends.cudnn.fp32_precision": lambda: torch.backends.cudnn.fp32_precision,
        "torch.backends.mkldnn.fp32_precision": lambda: torch.backends.mkldnn.fp32_precision,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled,
        "deterministic_algorithms_warn_only": torch.is_deterministic_algorithms_warn_only_enabled,
        "default_dtype": torch.get_default_dtype,
        "default_device": getattr(torch, "get_default_device", lambda: "cpu"),
        "num_threads": torch.get_num_threads,
        "num_interop_threads": torch.get_num_interop_threads,
        "grad_enabled": torch.is_grad_enabled,
        "flash_sdp": torch.backends.cuda.flash_sdp_enabled,
        "mem_efficient_sdp": torch.backends.cuda.mem_efficient_sdp_enabled,
        "math_sdp": torch.backends.cuda.math_sdp_enabled,
    }
    values = {}
    for name, probe in probes.items():
        try:
            values[name] = str(probe())
        except Exception:  # a probe that does not exist in this build simply is not watched
            continue
    return values


class SwitchGuard:
    """Process-wide torch switches (TF32, determinism, default dtype, thread counts, ...)."""

    def __init__(self, torch):
        self._torch = torch
        self._before = _switches(torch)

    def changed(self) -> list[str]:
        now = _switches(self._torch)
        return [
            f"changed process-wide switch {k}: {v} -> {now.get(k)}" for k, v in self._before.items() if now.get(k) != v
        ]
