"""What a case's buffers take on the host, planned before anything is allocated, so an evaluation fits
the machine (fewer slots per case, the checked rounds streamed through them a few at a time) or is
refused up front with the figures, instead of meeting the OOM killer minutes into a run."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace

from kernelindex.harness.arena import Layout, _nbytes

GIB = 1 << 30
PROCESS_BYTES = 512 << 20  # one Python process with torch and the harness loaded (measured ~300 MiB), with room
PROCESSES = 3  # the parent, the reference's process and the solution's


class DoesNotFit(RuntimeError):
    """Some chosen case needs more host memory than this machine (or a task's grant) has, even at the
    fewest slots the plan allows."""


def _tensor_bytes(entries) -> int:
    return sum(_nbytes(e.shape, e.dtype) for e in entries if not e.is_scalar)


def compare_bytes(layout: Layout) -> int:
    """What the parent's comparison of the largest output holds at once: both sides upcast, the error, the
    relative error, their temporaries and masks, and a float64 copy of the match mask (compare.py): about
    ten elements of the working precision (float64 for a float64 output, else float32) per element
    (measured: 17 B/element for SOL-ExecBench's rule, 29 for our stricter one beside it; SOL-ExecBench
    problem 087's 512 MiB gradient took the parent past 10 GiB when this was left out)."""
    largest = max((e for e in layout.outputs if not e.is_scalar), key=lambda e: _nbytes(e.shape, e.dtype), default=None)
    if largest is None:
        return 0
    count = _nbytes(largest.shape, largest.dtype) // _nbytes((), largest.dtype)
    return 10 * count * (8 if largest.dtype == "float64" else 4)


def planned_bytes(layout: Layout, reference_arena_bytes: int, floor: int = 0) -> int:
    """Both arenas (the reference's is sized for the largest case; the solution's for its slots, or for
    ``floor`` bytes where more: a sampling case's tiled call), the parent's pristine copy of every slot's
    inputs, one call's outputs of working memory on each side, and the parent's comparison."""
    inputs, outputs = _tensor_bytes(layout.inputs), _tensor_bytes(layout.outputs)
    arena = max(layout.total_bytes, floor)
    return reference_arena_bytes + arena + inputs * layout.slots + 2 * outputs + compare_bytes(layout)


def task_bytes(plan: Plan, device: str) -> int:
    """Host memory one evaluation of the plan's cases needs (what a Ray task asks for): its processes, and on
    a CPU run the buffers the plan counts at its peak (a GPU's arenas and copies live in the GPU's memory)."""
    buffers = 0 if device.startswith("cuda") else plan.peak
    return PROCESSES * PROCESS_BYTES + buffers


def release_freed() -> None:
    """Give the C heap's free pages back to the kernel (glibc's malloc_trim; elsewhere nothing). Once glibc
    has raised its mmap threshold, a failing output's full comparison (`compare_bytes`: ~20 MiB for a 2 MiB
    output) and each case's copies come from the heap, and the holes they leave stay resident: without this
    a many-solution call of 042 held ~30 MiB more after its first failing candidate than one eval does."""
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)


def available_bytes() -> int | None:
    """MemAvailable of /proc/meminfo (None where there is none to read)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def buffer_budget(available: int | None, granted: int | None) -> int | None:
    """Bytes the buffers may take: what the machine has available less the two children this process
    has yet to start, and within a grant (a Ray task's memory, which counts all three processes)."""
    limits = []
    if available is not None:
        limits.append(available - (PROCESSES - 1) * PROCESS_BYTES)
    if granted is not None:
        limits.append(granted - PROCESSES * PROCESS_BYTES)
    return max(0, min(limits)) if limits else None


@dataclass(frozen=True)
class Plan:
    """Each case's fitted layout, the reference's arena (sized for the largest of them), the budget they
    were fitted to (None: not checked) and the least bytes of each case's solution arena (`floors`: a
    FlashInfer-Bench sampling case's tiled call, which its slots may not cover)."""

    layouts: dict[str, Layout]
    wanted: dict[str, int]  # the slots each case would have had with memory to spare
    budget: int | None
    floors: dict[str, int] = field(default_factory=dict)  # a solution arena's least bytes beyond its slots

    @property
    def reference_bytes(self) -> int:
        return max(layout.total_bytes for layout in self.layouts.values())

    def arena_bytes(self, uuid: str) -> int:
        """The case's solution arena: its slots, or its floor where larger."""
        return max(self.layouts[uuid].total_bytes, self.floors.get(uuid, 0))

    def need(self, uuid: str) -> int:
        return planned_bytes(self.layouts[uuid], self.reference_bytes, self.floors.get(uuid, 0))

    @property
    def peak(self) -> int:
        return max(self.need(uuid) for uuid in self.layouts)

    @property
    def fitted(self) -> list[str]:
        """The cases given fewer slots than they wanted."""
        return [uuid for uuid, layout in self.layouts.items() if layout.slots < self.wanted[uuid]]


def fit(
    wanted: dict[str, Layout],
    least: int,
    budget: int | None,
    arena_cap: int | None = None,
    floors: dict[str, int] | None = None,
) -> Plan:
    """Fewer slots, one at a time, to whichever case among those over ``budget`` has the largest arena (the
    largest also sizes the reference's arena, so it is always among them), never below ``least``; no arena
    above ``arena_cap`` (a child's memory cap less its own needs); each solution arena at least its case's
    floor (``floors``, by uuid). Raises DoesNotFit, with the figures, when a case is over at ``least`` slots."""
    slots = {uuid: layout.slots for uuid, layout in wanted.items()}
    layouts, floors = dict(wanted), floors or {}
    while True:
        plan = Plan(layouts, {u: layout.slots for u, layout in wanted.items()}, budget, floors)
        over = [u for u in layouts if budget is not None and plan.need(u) > budget]
        over += [u for u in layouts if arena_cap is not None and plan.arena_bytes(u) > arena_cap]
        if not over:
            return plan
        largest = max(layouts, key=lambda u: (layouts[u].total_bytes, u))
        shrink = [u for u in {*over, largest} if slots[u] > least]
        if not shrink:
            raise DoesNotFit(_refusal(plan, over, least, budget, arena_cap))
        pick = max(shrink, key=lambda u: (layouts[u].total_bytes, u))
        slots[pick] -= 1
        layouts[pick] = replace(layouts[pick], slots=slots[pick])


def _refusal(plan: Plan, over: list[str], least: int, budget: int | None, cap: int | None) -> str:
    """Name the cases that cannot fit even alone (their own arena the reference's), else say they cannot together."""
    layouts, floors = plan.layouts, plan.floors
    if cap is not None and any(plan.arena_bytes(u) > cap for u in over):
        worst = max(plan.arena_bytes(u) for u in over)
        return (
            f"a case needs an arena of {worst / GIB:.1f} GiB even at {least} slot(s), over the {cap / GIB:.1f} GiB "
            "a process may map under its memory cap; raise --memory-mb"
        )
    assert budget is not None
    alone = {u: planned_bytes(layouts[u], layouts[u].total_bytes, floors.get(u, 0)) for u in layouts}
    alone = {u: need for u, need in alone.items() if need > budget}
    named = sorted(alone or set(over))
    shown = ", ".join(u[:8] for u in named[:8]) + (", ..." if len(named) > 8 else "")
    worst = max(alone.values()) if alone else max(plan.need(u) for u in over)
    together = "" if alone else " beside the reference's arena the largest case sizes"
    return (
        f"{len(named)} case(s) ({shown}) need {worst / GIB:.1f} GiB of host memory for their buffers{together} even "
        f"at {least} slot(s), this machine has {budget / GIB:.1f} GiB for them; leave them out with --cases"
    )
