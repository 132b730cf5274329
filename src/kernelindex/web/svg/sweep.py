"""Server-made SVG sweep chart: best value per workload size, one line per implementation.

The value axis starts at zero on a linear scale; when values span more than 20×, both axes are
logarithmic and the chart says so in words under the axis, never overlapping the tick labels.
Labels come from records, so every one is escaped; no script, no inline styles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from markupsafe import Markup

from kernelindex.records.units import format_value
from kernelindex.views.operation import Sweep

WIDTH = 780
HEIGHT = 330
LEFT = 78
RIGHT = 200
TOP = 14
BOTTOM = 58
COLOURS = ("#2f5fa7", "#c0392b", "#27864a", "#8e44ad", "#d68910", "#17a2b8", "#6d4c41", "#7f8c8d")
LEGEND_CHARS = 28


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]  # (size, value), sorted by size


def _log_scale(lo: float, hi: float) -> bool:
    return lo > 0 and hi / lo > 20


def _mapper(lo: float, hi: float, log: bool, a: float, b: float) -> Callable[[float], float]:
    if log:
        la, lb = math.log10(lo), math.log10(hi)
        return lambda v: a + (math.log10(max(v, lo)) - la) / ((lb - la) or 1.0) * (b - a)
    return lambda v: a + (v - lo) / ((hi - lo) or 1.0) * (b - a)


def _nice_step(span: float) -> float:
    raw = span / 4 or 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        ticks = [10.0**e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
        return [t for t in ticks if lo <= t <= hi] or [lo, hi]
    step = _nice_step(hi - lo)
    return [lo + i * step for i in range(int((hi - lo) / step + 1e-9) + 1)]


def _range(values: list[float], log: bool) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if log:
        return 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    lo = min(lo, 0.0)
    step = _nice_step((hi - lo) or abs(hi) or 1.0)
    return lo, math.ceil(hi / step) * step if hi > 0 else hi + step


def sweep_svg(series: Sequence[Series], y_fmt: Callable[[float], str], x_name: str, caption: str) -> str:
    """The chart; empty text when nothing has two or more sizes to draw."""
    series = [s for s in series if s.points][: len(COLOURS)]
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points if math.isfinite(y)]
    if not xs or not ys or len(set(xs)) < 2:
        return ""
    x_log = _log_scale(min(xs), max(xs))
    y_log = _log_scale(min(ys), max(ys))
    x_lo, x_hi = (min(xs), max(xs)) if not x_log else (min(xs), max(xs))
    y_lo, y_hi = _range(ys, y_log)
    fx = _mapper(x_lo, x_hi, x_log, LEFT + 10, WIDTH - RIGHT - 10)
    fy = _mapper(y_lo, y_hi, y_log, HEIGHT - BOTTOM, TOP)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot sweep" role="img" width="{WIDTH}" height="{HEIGHT}"'
        f' viewBox="0 0 {WIDTH} {HEIGHT}"><title>{escape(caption)}</title>'
    ]
    base = HEIGHT - BOTTOM
    out.append(f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#888"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#888"/>')
    for t in _ticks(y_lo, y_hi, y_log):
        ty = fy(t)
        out.append(f'<line x1="{LEFT}" y1="{ty:.1f}" x2="{WIDTH - RIGHT}" y2="{ty:.1f}" stroke="#eee"/>')
        out.append(
            f'<text x="{LEFT - 6}" y="{ty + 3:.1f}" font-size="10" text-anchor="end" fill="#444">'
            f"{escape(y_fmt(t) if t else '0')}</text>"
        )
    sizes = sorted(set(xs))
    shown_sizes = sizes if len(sizes) <= 10 else sizes[:: math.ceil(len(sizes) / 10)]
    for x in shown_sizes:
        tx = fx(x)
        out.append(f'<line x1="{tx:.1f}" y1="{base}" x2="{tx:.1f}" y2="{base + 4}" stroke="#888"/>')
        out.append(
            f'<text x="{tx:.1f}" y="{base + 16}" font-size="10" text-anchor="middle" fill="#444">'
            f"{escape(f'{x:g}')}</text>"
        )
    scale = (
        "log–log scale"
        if x_log and y_log
        else "log size axis"
        if x_log
        else "log value axis"
        if y_log
        else "value axis from zero"
    )
    out.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{base + 34}" font-size="11" text-anchor="middle"'
        f' fill="#222">{escape(x_name)} ({scale})</text>'
    )
    for i, s in enumerate(series):
        colour = COLOURS[i]
        path = " ".join(f"{'M' if j == 0 else 'L'}{fx(x):.1f},{fy(y):.1f}" for j, (x, y) in enumerate(s.points))
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in s.points:
            out.append(
                f'<circle cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="3" fill="{colour}">'
                f"<title>{escape(s.label)}: {escape(x_name)}={x:g}, {escape(y_fmt(y))}</title></circle>"
            )
        label = s.label if len(s.label) <= LEGEND_CHARS else s.label[: LEGEND_CHARS - 1] + "…"
        ly = TOP + 8 + i * 18
        out.append(f'<rect x="{WIDTH - RIGHT + 12}" y="{ly - 7}" width="10" height="10" fill="{colour}"/>')
        out.append(
            f'<text x="{WIDTH - RIGHT + 28}" y="{ly + 2}" font-size="11" fill="#222">{escape(label)}'
            f"<title>{escape(s.label)}</title></text>"
        )
    out.append("</svg>")
    return "".join(out)


def sweep_markup(sweep: Sweep) -> Markup | None:
    """The chart of an operation's sweep."""
    series = [Series(s.implementation, tuple((p.x, p.value) for p in s.points)) for s in sweep.series]
    svg = sweep_svg(series, lambda v: format_value(v, sweep.unit), sweep.axis, sweep.caption)
    return Markup(svg) if svg else None
