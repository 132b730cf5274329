"""Pieces every view shares: evidence levels in bulk, intervals, a source's own figures, group URLs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from kernelindex.ranking.cohort import RankedEntry
from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.views.formatting import SOL_METRIC, SPEEDUP_METRICS, format_sol, format_speedup, format_value

if TYPE_CHECKING:
    from sqlalchemy import Connection

GROUP_ROWS_SHOWN = 50

Document = dict[str, Any]
"""A stored record's own JSON (or a part of it), as the record states it: its shape is the record
kind's (:mod:`kernelindex.records`), not the view's."""

Number = int | float
"""A number as a record states it: an integer stays an integer (no ``1`` shown as ``1.0``)."""


class ViewModel(BaseModel):
    """Every view is an exact model: no field a view does not declare, in the order readers see them."""

    # a field named like a BaseModel method (``json``) is declared as ``json_`` with its alias
    model_config = ConfigDict(
        extra="forbid", serialize_by_alias=True, validate_by_name=True, validate_by_alias=True, defer_build=True
    )


class SelfLink(ViewModel):
    self: str


class ItemLinks(ViewModel):
    """A listed item's page and its JSON twin."""

    self: str
    json_: str = Field(alias="json")


class NextLink(ViewModel):
    next: str | None = Field(description="the next page's URL, or null on the last page")


class EvidenceLevel(ViewModel):
    level: str = Field(description="reported, reproducible, verified or replicated")
    reasons: list[str]


class Interval(ViewModel):
    """A rank's bootstrap interval of the primary statistic."""

    low: float
    high: float
    estimate: float
    statistic: str
    confidence: float
    method: str
    resamples: int
    seed: int
    sampleCount: int
    display: str


class NativeFigure(ViewModel):
    """One figure as the source states it (SOL score, speedup, cases faster, ...)."""

    label: str
    text: str
    metric: str


def today() -> date:
    """The date a citation says it was accessed: today in UTC, for the site, the CLI and the MCP tools alike."""
    return datetime.now(UTC).date()


def evidence_levels(conn: Connection, digests: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Evidence level and reasons of many runs at once, from the one evidence function."""
    found = evidence_for_runs(conn, [d for d in digests if d])
    return {d: {"level": e.level, "reasons": list(e.reasons)} for d, e in found.items()}


def interval_of(entry: RankedEntry | None, unit: str | None) -> Interval | None:
    if not entry or not entry.interval:
        return None
    data = entry.interval.as_dict()
    return Interval(**data, display=f"{format_value(data['low'], unit)} – {format_value(data['high'], unit)}")


def source_native_display(native: dict[str, Any] | None) -> list[NativeFigure]:
    """The source's own figures as the source states them (SOL score, speedup, cases faster); each
    names the ``metric`` it shows, so a reader that already shows :func:`native_scores` can skip those."""
    if not native:
        return []
    m = native.get("metrics") or {}
    out = []
    if SOL_METRIC in m:
        out.append(NativeFigure(label="SOL score", text=format_sol(m[SOL_METRIC]), metric=SOL_METRIC))
    if "avg_speedup" in m:
        text = format_speedup(m["avg_speedup"])
        out.append(NativeFigure(label="Speedup over the reference", text=text, metric="avg_speedup"))
    if "fast_1_count" in m and "fast_1_total" in m:
        text = f"{m['fast_1_count']}/{m['fast_1_total']} cases faster"
        out.append(NativeFigure(label="Cases faster than the baseline", text=text, metric="fast_1_count"))
    if "latency_ms" in m:
        out.append(
            NativeFigure(label="Reported latency", text=format_value(m["latency_ms"], "ms"), metric="latency_ms")
        )
    known = {SOL_METRIC, "avg_speedup", "fast_1_count", "fast_1_total", "latency_ms"}
    for name, value in sorted(m.items()):
        if name not in known:
            unit = "s" if name.endswith("_s") else None
            text = format_value(value, unit) if isinstance(value, (int, float)) else str(value)
            out.append(NativeFigure(label=name, text=text, metric=name))
    return out


def native_scores(metrics: dict[str, Any] | None) -> dict[str, Any]:
    """SOL score and speedup of a run as its source states them (columns of every ranking table, and
    the run view's ``sol`` and ``speedup``): the one place that decides which stated metric they are."""
    m = metrics if isinstance(metrics, dict) else {}
    sol = m.get(SOL_METRIC)
    speedup = next((m[name] for name in SPEEDUP_METRICS if name in m), None)
    sol = sol if isinstance(sol, (int, float)) else None
    speedup = speedup if isinstance(speedup, (int, float)) else None
    return {"sol": sol, "solDisplay": format_sol(sol), "speedup": speedup, "speedupDisplay": format_speedup(speedup)}


def group_url(workload_id: str | None, key: str | None) -> str | None:
    if not key:
        return None
    anchor = "g-" + key.removeprefix("sha256:")[:16]
    return f"/workloads/{workload_id}#{anchor}" if workload_id else f"/rankings/{key}"
