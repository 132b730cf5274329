"""Server-made SVG of a serving resolver answer: throughput per GPU against latency, frontier joined.

Text only from escaped labels; no script, no inline style (the site's CSP forbids both). Runs with
no latency bound (offline) sit in a column of their own at the right, marked "no bound". Both
axes start at zero so a small gap looks small.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 760, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 110, 16, 44


def _ticks(hi: float, n: int = 5) -> list[float]:
    if hi <= 0:
        return [0.0]
    raw = hi / n
    magnitude = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(int(hi / step) + 1)]


def _label(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.3g}"


def frontier_svg(candidates: Sequence[dict[str, Any]], caption: str) -> str:
    """The plot for :func:`kernelindex.views.serving.resolve_view`'s ``candidates``."""
    if not candidates:
        return ""
    bounded = [c for c in candidates if c["latency"]]
    max_x = max((c["latency"]["value"] for c in bounded), default=1.0) * 1.08
    max_y = max(c["throughputPerGpu"] for c in candidates) * 1.1
    plot_right = WIDTH - RIGHT
    unbounded_x = plot_right + 50
    xticks, yticks = _ticks(max_x), _ticks(max_y)
    max_x, max_y = max(max_x, xticks[-1]), max(max_y, yticks[-1])

    def px(c: dict[str, Any]) -> float:
        if not c["latency"]:
            return unbounded_x
        return LEFT + c["latency"]["value"] / max_x * (plot_right - LEFT)

    def py(value: float) -> float:
        return HEIGHT - BOTTOM - value / max_y * (HEIGHT - BOTTOM - TOP)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}"><title>{escape(caption)}</title>'
    ]
    base = HEIGHT - BOTTOM
    out.append(f'<line x1="{LEFT}" y1="{base}" x2="{plot_right}" y2="{base}" stroke="#888"/>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#888"/>')
    for tick in xticks:
        x = LEFT + tick / max_x * (plot_right - LEFT)
        out.append(
            f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{base}" stroke="#eee"/>'
            f'<text x="{x:.1f}" y="{base + 14}" font-size="10" text-anchor="middle" fill="#444">'
            f"{_label(tick)}</text>"
        )
    for tick in yticks:
        y = py(tick)
        out.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{plot_right}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{LEFT - 6}" y="{y + 3:.1f}" font-size="10" text-anchor="end" fill="#444">'
            f"{_label(tick)}</text>"
        )
    out.append(
        f'<text x="{unbounded_x}" y="{base + 14}" font-size="10" text-anchor="middle" fill="#444">no bound</text>'
    )
    out.append(
        f'<text x="{(LEFT + plot_right) / 2:.0f}" y="{HEIGHT - 6}" font-size="11" text-anchor="middle" '
        'fill="#222">p99 latency, ms (measured, else the declared SLO bound)</text>'
    )
    out.append(
        f'<text x="12" y="{(TOP + base) / 2:.0f}" font-size="11" text-anchor="middle" fill="#222" '
        f'transform="rotate(-90 12 {(TOP + base) / 2:.0f})">output tokens/s per GPU</text>'
    )
    frontier = sorted((c for c in candidates if c["onFrontier"]), key=px)
    if len(frontier) > 1:
        path = " ".join(f"{px(c):.1f},{py(c['throughputPerGpu']):.1f}" for c in frontier)
        out.append(f'<polyline points="{path}" fill="none" stroke="#c4a000" stroke-width="2"/>')
    for c in sorted(candidates, key=lambda c: c["onFrontier"]):  # frontier points drawn last, on top
        colour = "#c4a000" if c["onFrontier"] else "#3465a4"
        text = f"{c['title']}: {_label(c['throughputPerGpu'])} tokens/s per GPU, {c['latencyDisplay']}"
        out.append(  # no link inside role="img" (axe: nested-interactive); the candidates table links each run
            f'<circle cx="{px(c):.1f}" cy="{py(c["throughputPerGpu"]):.1f}" '
            f'r="{5 if c["onFrontier"] else 3.5}" fill="{colour}"><title>{escape(text)}</title></circle>'
        )
    out.append("</svg>")
    return "".join(out)
