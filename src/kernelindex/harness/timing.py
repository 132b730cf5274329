"""Timers for one call: CUDA events with a cold L2 on a GPU, a monotonic clock on a CPU.

A timer binds the clock functions it uses when it is built, before any solution code is loaded,
so a solution that swaps `time.perf_counter_ns` or `torch.cuda.Event.elapsed_time` afterwards
changes nothing the harness measures (and is reported by the hack checks). Nothing from
torch.cuda is touched unless the device is a GPU.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator


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


PHASES = ("setup", "inputs", "calibration", "reference", "solution", "checking", "harness")


class PhaseClock:
    """Where a case's wall time went, by the parent's clock, each second charged to exactly one phase:
    a phase entered inside another pauses the outer one, so the phases add up to the whole case.
    setup: scratch, arenas, starting, opening, loading and ending the processes; inputs: making them
    and handing them over; calibration: empty batches; reference and solution: their batches;
    checking: comparing inputs and outputs; harness: the rest of the parent's own work."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self._stack = ["harness"]
        self._mark = time.perf_counter()

    def _charge(self) -> None:
        now = time.perf_counter()
        self.seconds[self._stack[-1]] += now - self._mark
        self._mark = now

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._charge()
        self._stack.append(name)
        try:
            yield
        finally:
            self._charge()
            self._stack.pop()

    def totals(self) -> dict[str, float]:
        """Seconds per phase so far (the current phase charged up to now)."""
        self._charge()
        return dict(self.seconds)
