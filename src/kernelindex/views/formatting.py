"""How numbers, dates and links from records are written on pages (one place, so pages agree)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from markupsafe import Markup, escape

from kernelindex.records.units import (  # noqa: F401  (one place)
    NS_PER_UNIT,
    SCALES,
    format_bytes,
    format_duration,
    format_value,
)

SOL_METRIC = "sol_score"  # the source-stated metrics that are a run's SOL score and its speedup
SPEEDUP_METRICS = ("avg_speedup", "speedup_factor")  # SOL-ExecBench's name, then the trace format's (and ours)


def format_sol(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def format_speedup(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def format_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}×"


def format_hardware(hardware: dict | None) -> str:
    """An environment's hardware for people: ``8 × NVIDIA B200 (blackwell, 180.0 GiB memory, NVLink)``; the
    vendor only where the product does not already say it, the count only when more than one."""
    hw = hardware or {}
    product, vendor = str(hw.get("product") or ""), str(hw.get("vendor") or "")
    name = product if vendor.lower() in product.lower() else f"{vendor} {product}".strip()
    memory = hw.get("memoryBytes")
    details = [hw.get("architecture"), hw.get("formFactor"), memory and f"{format_bytes(memory)} memory"]
    shown = ", ".join(str(d) for d in [*details, hw.get("interconnect")] if d)
    text = f"{name} ({shown})" if shown else name
    count = hw.get("count")
    return f"{count} × {text}" if isinstance(count, int) and count > 1 else text


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
