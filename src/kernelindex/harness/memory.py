"""What a case's buffers take on the host, planned before anything is allocated, so a case that cannot
fit is refused up front with the figures instead of meeting the OOM killer minutes into a run."""

from __future__ import annotations

import math

from kernelindex.harness.arena import Layout, _nbytes

GIB = 1 << 30
PROCESS_BYTES = 512 << 20  # one Python process with torch and the harness loaded (measured ~300 MiB), with room
PROCESSES = 3  # the parent, the reference's process and the solution's
# the parent's check of one output: both sides cast to f32, the error, its bound, masks and the relative
# error; measured 17 B/element for SOL-ExecBench's rule and 29 for our stricter one, which runs beside it
CHECK_BYTES_PER_ELEMENT = 32


class DoesNotFit(RuntimeError):
    """Some chosen case needs more host memory than this machine has available."""


def planned_bytes(layout: Layout, reference_arena_bytes: int) -> int:
    """Both arenas (the reference's is sized for the largest case), the parent's pristine copy of every
    slot's inputs, one call's outputs of working memory on each side, and the check of the largest output
    (SOL-ExecBench problem 087's 512 MiB gradient took the parent past 10 GiB when this was left out)."""
    inputs = sum(_nbytes(e.shape, e.dtype) for e in layout.inputs if not e.is_scalar)
    outputs = sum(_nbytes(e.shape, e.dtype) for e in layout.outputs if not e.is_scalar)
    check = CHECK_BYTES_PER_ELEMENT * max((math.prod(e.shape) for e in layout.outputs if not e.is_scalar), default=0)
    return reference_arena_bytes + layout.total_bytes + inputs * layout.slots + 2 * outputs + check


def peak_bytes(layouts: dict[str, Layout]) -> int:
    """The most any one of these cases plans, the reference's arena sized for the largest of them."""
    largest = max(layout.total_bytes for layout in layouts.values())
    return max(planned_bytes(layout, largest) for layout in layouts.values())


def task_bytes(layouts: dict[str, Layout], device: str) -> int:
    """Host memory one evaluation of these cases needs (what a Ray task asks for): its processes, and on a
    CPU run the buffers the plan counts (a GPU's arenas and copies live in the GPU's memory)."""
    buffers = 0 if device.startswith("cuda") else peak_bytes(layouts)
    return PROCESSES * PROCESS_BYTES + buffers


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


def check_fits(layouts: dict[str, Layout], reference_arena_bytes: int, available: int | None) -> None:
    """Raise DoesNotFit naming every case whose plan exceeds ``available`` bytes (None: not checked)."""
    if available is None:
        return
    over = {uuid: planned_bytes(layout, reference_arena_bytes) for uuid, layout in layouts.items()}
    over = {uuid: need for uuid, need in over.items() if need > available}
    if over:
        worst = max(over.values())
        shown = ", ".join(uuid[:8] for uuid in sorted(over)[:8]) + (", ..." if len(over) > 8 else "")
        raise DoesNotFit(
            f"{len(over)} case(s) ({shown}) need up to {worst / GIB:.1f} GiB of host memory for their buffers, "
            f"this machine has {available / GIB:.1f} GiB available; choose others with --cases, "
            "or fewer --rounds"
        )
