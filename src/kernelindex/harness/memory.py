"""What a case's buffers take on the host, planned before anything is allocated, so a case that cannot
fit is refused up front with the figures instead of meeting the OOM killer minutes into a run."""

from __future__ import annotations

from kernelindex.harness.arena import Layout, _nbytes

GIB = 1 << 30


class DoesNotFit(RuntimeError):
    """Some chosen case needs more host memory than this machine has available."""


def planned_bytes(layout: Layout, reference_arena_bytes: int) -> int:
    """Both arenas (the reference's is sized for the largest case), the parent's pristine copy of every
    slot's inputs, and one call's outputs of working memory on each side."""
    inputs = sum(_nbytes(e.shape, e.dtype) for e in layout.inputs if not e.is_scalar)
    outputs = sum(_nbytes(e.shape, e.dtype) for e in layout.outputs if not e.is_scalar)
    return reference_arena_bytes + layout.total_bytes + inputs * layout.slots + 2 * outputs


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
