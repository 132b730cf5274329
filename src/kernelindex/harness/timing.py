"""Timers for one call: CUDA events with a cold L2 on a GPU, a monotonic clock on a CPU.

A timer binds the clock functions it uses when it is built, before any solution code is loaded,
so a solution that swaps `time.perf_counter_ns` or `torch.cuda.Event.elapsed_time` afterwards
changes nothing the harness measures (and is reported by the hack checks). Nothing from
torch.cuda is touched unless the device is a GPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class CpuTimer:
    name = "monotonic_clock"
    synchronization = "none"

    def __init__(self):
        self._clock = time.perf_counter_ns

    def flush(self) -> None:
        """Nothing to flush: CPU caches are left as the previous call's input generation left them."""

    def start(self) -> None:
        self._t0 = self._clock()

    def stop(self) -> Callable[[], int]:
        elapsed = self._clock() - self._t0
        return lambda: elapsed

    def barrier(self) -> None:
        """All CPU work is done when the call returns, except threads (joined by the caller)."""


class CudaEventTimer:
    name = "cuda_events"
    synchronization = "device_sync"

    def __init__(self, device: str):
        import torch

        self._torch = torch
        self._device = torch.device(device)
        self._event = torch.cuda.Event
        self._record = torch.cuda.Event.record
        self._elapsed = torch.cuda.Event.elapsed_time
        self._sync = torch.cuda.synchronize
        l2 = getattr(torch.cuda.get_device_properties(self._device), "L2_cache_size", 0) or (64 << 20)
        self._scratch = torch.empty(2 * l2, dtype=torch.uint8, device=self._device)

    def flush(self) -> None:
        self._scratch.zero_()  # twice the L2 size: nothing of the last call stays cached

    def start(self) -> None:
        self._start = self._event(enable_timing=True)
        self._record(self._start)

    def stop(self) -> Callable[[], int]:
        end = self._event(enable_timing=True)
        self._record(end)
        start, elapsed = self._start, self._elapsed
        return lambda: int(round(elapsed(start, end) * 1e6))

    def barrier(self) -> None:
        self._sync(self._device)  # waits for every stream, so side-stream work shows up as late


def make_timer(device: str):
    return CudaEventTimer(device) if device.startswith("cuda") else CpuTimer()
