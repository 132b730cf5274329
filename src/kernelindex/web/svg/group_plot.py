"""Server-made SVG of a ranked group: one row per run, a dot at its value, whiskers for its interval.

The rank sits in its own column at the left edge and labels are cut to the room left beside it, so
nothing is clipped; a linear value axis starts at zero (a 7% gap looks like 7%), and when values
span more than 20× the axis is logarithmic and says so. The scale note sits below the tick labels.

Built as text with every label escaped (labels come from records and are untrusted); no script,
no inline styles, so the page's content security policy can forbid both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

ROW = 16
LEFT = 250
RIGHT = 36
TOP = 10
AXIS = 44
WIDTH = 760
LABEL_CHARS = 32  # about 6.5 px a character at 11 px: fits between the rank column and LEFT


@dataclass(frozen=True)
class Point:
    label: str
    value: float
    low: float | None = None
    high: float | None = None
    rank: int | None = None


def _scale(lo: float, hi: float, log: bool) -> Callable[[float], float]:
    span_px = WIDTH - LEFT - RIGHT
    if log:
        a, b = math.log10(lo), math.log10(hi)
        return lambda v: LEFT + (math.log10(max(v, lo)) - a) / ((b - a) or 1.0) * span_px
    return lambda v: LEFT + (v - lo) / ((hi - lo) or 1.0) * span_px


def _nice_step(span: float) -> float:
    raw = span / 4 or 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        return [
            10**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) if lo <= 10**e <= hi
        ] or [lo, hi]
    step = _nice_step(hi - lo)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def group_svg(points: Sequence[Point], fmt: Callable[[float], str], caption: str) -> str:
    """The SVG markup for one group; ``fmt`` writes an axis value (e.g. ``317.9 µs``)."""
    if not points:
        return ""
    values = [v for p in points for v in (p.value, p.low, p.high) if v is not None and math.isfinite(v)]
    lo, hi = min(values), max(values)
    log = lo > 0 and hi / lo > 20
    if not log:
        pad = (hi - min(lo, 0.0)) * 0.05 or abs(hi) * 0.05 or 1.0
        lo, hi = (0.0 if lo >= 0 else lo - pad), hi + pad
    x = _scale(lo, hi, log)
    height = TOP + ROW * len(points) + AXIS
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" width="{WIDTH}" height="{height}"'
        f' viewBox="0 0 {WIDTH} {height}"><title>{escape(caption)}</title>'
    ]
    axis_y = TOP + ROW * len(points) + 4
    out.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#888"/>')
    for t in _ticks(lo, hi, log):
        tx = x(t)
        out.append(f'<line x1="{tx:.1f}" y1="{TOP}" x2="{tx:.1f}" y2="{axis_y}" stroke="#eee"/>')
        out.append(
            f'<text x="{tx:.1f}" y="{axis_y + 14}" font-size="10" text-anchor="middle" fill="#444">'
            f"{escape(fmt(t) if t else '0')}</text>"
        )
    for i, p in enumerate(points):
        cy = TOP + ROW * i + ROW / 2
        label = p.label if len(p.label) <= LABEL_CHARS else p.label[: LABEL_CHARS - 1] + "…"
        if p.rank is not None:
            out.append(f'<text x="4" y="{cy + 4:.1f}" font-size="11" fill="#666">#{p.rank}</text>')
        text = (
            f'<text x="{LEFT - 8}" y="{cy + 4:.1f}" font-size="11" text-anchor="end" fill="#222">'
            f"{escape(label)}<title>{escape(p.label)}</title></text>"
        )
        out.append(text)  # no links inside role="img" (axe: nested-interactive); the table below links each run
        if p.low is not None and p.high is not None:
            out.append(
                f'<line x1="{x(p.low):.1f}" y1="{cy:.1f}" x2="{x(p.high):.1f}" y2="{cy:.1f}"'
                ' stroke="#3465a4" stroke-width="2"/>'
            )
        out.append(
            f'<circle cx="{x(p.value):.1f}" cy="{cy:.1f}" r="4" fill="#3465a4">'
            f"<title>{escape(label)}: {escape(fmt(p.value))}</title></circle>"
        )
    out.append(
        f'<text x="{LEFT}" y="{height - 6}" font-size="10" fill="#666">'
        f"{'log scale (values span more than 20×)' if log else 'linear scale from zero'}</text></svg>"
    )
    return "".join(out)
