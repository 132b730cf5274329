"""Human units for measured values: ``317881 ns`` is written ``317.9 µs`` (pages, API displays and CLI agree)."""

from __future__ import annotations

import math

NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
SCALES = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def whole_ns(value: float, unit: str) -> int | None:
    """``value`` (in ``unit``) as whole nanoseconds; None when that is no finite 64-bit count
    (``1e300`` seconds), which an importer refuses by its field rather than crash on."""
    ns = value * NS_PER_UNIT[unit]
    if not (math.isfinite(ns) and abs(ns) < 2**63):
        return None
    return round(ns)


def _three_figures(x: float) -> str:
    """At least three significant figures and at least one decimal: 317.881 → 317.9, 7.702 → 7.70."""
    digits = len(str(int(abs(x)))) if abs(x) >= 1 else 0
    decimals = max(1, 3 - digits) if abs(x) >= 1 else 3
    return f"{x:.{decimals}f}"


def format_duration(value: float | None, unit: str | None = "ns") -> str:
    """A duration in the largest unit that keeps it ≥ 1: 317881 ns → ``317.9 µs``."""
    if value is None or unit not in NS_PER_UNIT or not math.isfinite(value):
        return "—" if value is None else f"{value:g} {unit or ''}".strip()
    ns = value * NS_PER_UNIT[unit]
    i = next((i for i, (scale, _) in enumerate(SCALES) if abs(ns) >= scale), len(SCALES) - 1)
    text = _three_figures(ns / SCALES[i][0])
    if abs(float(text)) >= 1000 and i > 0:  # 999.96 µs rounds up: write it as 1.00 ms
        i -= 1
        text = _three_figures(ns / SCALES[i][0])
    return f"{text} {SCALES[i][1]}"


def format_value(value: float | None, unit: str | None) -> str:
    """Any metric value with its unit; durations get a readable time unit."""
    if value is None:
        return "—"
    if unit in NS_PER_UNIT:
        return format_duration(value, unit)
    return f"{value:.4g} {unit or ''}".strip()


def format_bytes(n: int | float) -> str:
    """``25165824`` → ``24.0 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
