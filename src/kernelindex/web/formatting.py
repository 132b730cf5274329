"""How numbers, dates and links from records are written on pages (one place, so pages agree)."""

from __future__ import annotations

import math
import re
from urllib.parse import urlsplit

from markupsafe import Markup, escape

NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
SCALES = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


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


def format_sol(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def format_speedup(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def format_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}×"


def format_date(iso: str | None) -> str:
    """``2026-05-27T05:56:21.957Z`` → ``2026-05-27``; the full stamp goes in a title attribute."""
    return iso[:10] if iso else "—"


def short_digest(digest: str | None, n: int = 12) -> str:
    if not digest:
        return "—"
    algo, _, hexpart = digest.partition(":")
    return f"{algo}:{hexpart[:n]}…" if hexpart else digest[:n]


def safe_url(url: object) -> str | None:
    """A record's URL only when it is plain http(s); anything else (javascript:, data:) is dropped."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return url.strip()


BREAK_AFTER = re.compile(r"([_/·.-])")


def breakable(text: object) -> Markup:
    """Escaped text with a line-break opportunity after ``_ / · . -``, so a long slug can wrap
    between its parts instead of widening its table (or breaking mid-word)."""
    if text is None:
        return Markup("")
    return Markup(BREAK_AFTER.sub(r"\1<wbr>", str(escape(text))))
