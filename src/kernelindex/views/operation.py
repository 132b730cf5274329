"""The operation page that ranks in place: a workload chooser sorted by axes, a comparison-group
chooser, the chosen group's implementations table, a sweep chart and the operation's semantics.

Our problem packs write their own workload records for the upstream cases (their correctness
policy differs, so their digests do too). A case is what a reader chooses, so records of one
operation with the same kind and the same axes are one entry here ("same case as"), listing every
record it stands for; a suite is matched by its cases' axes the same way. Nothing is listed twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from kernelindex.ranking.direction import metric_direction
from kernelindex.ranking.reads import ranked_groups
from kernelindex.records.canonical import metric_key
from kernelindex.records.families import shown_family
from kernelindex.records.refusal import RefusalKind, ViewRefusal
from kernelindex.records.units import format_value
from kernelindex.store.reads import catalog
from kernelindex.store.reads import operation_workloads as reads
from kernelindex.views.common import GROUP_ROWS_SHOWN, Document, ItemLinks, NextLink, Number, SelfLink, ViewModel
from kernelindex.views.origins import Origins
from kernelindex.views.rank import Group, groups_view

SWEEP_SERIES = 8


class OperationItem(ViewModel):
    slug: str
    name: str | None
    family: str | None = Field(description="the family shown (stated, else read off the slug and tags)")
    statedFamily: str | None
    digest: str
    tags: list[str]
    workloadCount: int | None
    links: ItemLinks


class ListedOperation(ViewModel):
    """:class:`OperationItem` in the order the operation listing has always given it."""

    slug: str
    name: str | None
    family: str | None = Field(description="the family shown (stated, else read off the slug and tags)")
    digest: str
    tags: list[str]
    workloadCount: int | None
    links: ItemLinks
    statedFamily: str | None


class OperationListing(ViewModel):
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: NextLink
    items: list[ListedOperation]


class CaseRecord(ViewModel):
    """One workload record a case (or suite) entry stands for."""

    id: str
    digest: str
    title: str | None
    origin: Literal["our pack", "upstream"]
    runCount: int
    href: str


class CaseEntry(ViewModel):
    """A case (or suite) as a reader chooses it: every record of it, merged."""

    kind: str
    axes: Document
    caseCount: int | None
    records: list[CaseRecord]
    runCount: int
    id: str
    ids: list[str]
    title: str | None
    links: SelfLink


class GroupChoice(ViewModel):
    comparisonKey: str
    label: str
    size: int
    chosen: bool
    href: str


class SweepPoint(ViewModel):
    x: Number
    value: float
    display: str


class SweepSeries(ViewModel):
    implementation: str
    points: list[SweepPoint]


class Sweep(ViewModel):
    """Best value per case size per implementation; the page draws it (``unit`` is for the chart only)."""

    axis: str
    hardware: str | None
    metricKey: str
    caption: str
    series: list[SweepSeries]
    unit: str | None = Field(exclude=True)


class Semantics(ViewModel):
    axes: Document | None
    inputs: list[Document] | None
    outputs: list[Document] | None
    semantics: Document | None


class Operation(ViewModel):
    """The operation page and ``GET /api/v1/operations/{slug}``: ``workload`` and ``group`` choose."""

    slug: str
    name: str | None
    family: str | None
    statedFamily: str | None
    digest: str
    tags: list[str]
    workloadCount: int | None
    links: ItemLinks
    title: str | None
    description: str | None
    aliases: list[str]
    workloads: list[CaseEntry]
    related: list[OperationItem]
    manifest: Document
    chosenWorkload: CaseEntry | None
    groups: list[GroupChoice]
    group: Group | None
    sweep: Sweep | None
    semantics: Semantics


def operation_items(conn: Connection, rows: Sequence[Any]) -> list[OperationItem]:
    """Operation rows as items, each with its workload count: one count for the listing, the home page,
    the operation page and its related operations alike."""
    counts = catalog.workload_counts(conn, [r.id for r in rows])
    return [
        OperationItem(
            slug=r.slug,
            name=r.name,
            family=shown_family(r.family, r.slug, r.tags),
            statedFamily=r.family,
            digest=r.semantic_digest,
            tags=r.tags or [],
            workloadCount=counts.get(r.id),
            links=ItemLinks(self=f"/operations/{r.slug}", json_=f"/api/v1/operations/{r.slug}"),
        )
        for r in rows
    ]


def list_operations(
    conn: Connection, after: int | None, limit: int, family: str | None
) -> tuple[list[ListedOperation], int | None]:
    rows, nxt = catalog.list_operations(conn, after, limit, family)
    return [ListedOperation(**dict(item)) for item in operation_items(conn, rows)], nxt


def operations_a_to_z(conn: Connection, offset: int, limit: int) -> tuple[list[ListedOperation], int | None]:
    """The home page's operations, by name A to Z (the order it states), and the next offset."""
    rows, nxt = catalog.operations_by_name(conn, offset, limit)
    return [ListedOperation(**dict(item)) for item in operation_items(conn, rows)], nxt


def _case_key(w: dict[str, Any]) -> str:
    if w["kind"] == "WorkloadCase":
        return "case:" + json.dumps(sorted(w["axes"].items()), default=str)
    cases = sorted(json.dumps(sorted(c.items()), default=str) for c in w["caseAxes"])
    return "suite:" + json.dumps(cases)


def _axes_text(axes: dict[str, Any], names: list[str]) -> str:
    ordered = [n for n in names if n in axes] + sorted(n for n in axes if n not in names)
    return ", ".join(f"{n}={axes[n]}" for n in ordered)


def _sort_key(entry: dict[str, Any], names: list[str]) -> tuple:
    axes = entry["axes"]
    values = tuple(
        (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))
        for v in (axes.get(n) for n in names)
        if v is not None
    )
    return (entry["kind"] == "WorkloadCase", values, entry["title"])


def merged_workloads(rows: list[dict[str, Any]], axis_names: list[str], origins: Origins) -> list[dict[str, Any]]:
    """One entry per case (or suite), holding every record of it; sorted suites first, then by axes."""
    merged: dict[str, dict[str, Any]] = {}
    ours = origins.pack_workload_digests
    for w in rows:
        entry = merged.setdefault(
            _case_key(w),
            {
                "kind": w["kind"],
                "axes": w["axes"],
                "caseCount": len(w["caseAxes"]) or None,
                "records": [],
                "runCount": 0,
            },
        )
        entry["records"].append(
            {
                "id": w["id"],
                "digest": w["digest"],
                "title": w["title"],
                "origin": "our pack" if w["digest"] in ours else "upstream",
                "runCount": w["runCount"],
                "href": f"/workloads/{w['id']}",
            }
        )
        entry["runCount"] += w["runCount"]
    varying = [
        n
        for n in axis_names or sorted({a for e in merged.values() for a in e["axes"]})
        if len({str(e["axes"].get(n)) for e in merged.values() if e["kind"] == "WorkloadCase"}) > 1
    ]
    out = []
    for entry in merged.values():
        entry["records"].sort(key=lambda r: (r["origin"] != "upstream", -r["runCount"]))
        first = entry["records"][0]
        entry["id"] = first["id"]
        entry["ids"] = [r["id"] for r in entry["records"]]
        shown = {n: v for n, v in entry["axes"].items() if n in varying} or entry["axes"]
        entry["title"] = (
            (_axes_text(shown, axis_names) or first["title"])
            if entry["kind"] == "WorkloadCase"
            else f"suite of {entry['caseCount'] or 0} cases"
        )
        out.append(entry)
    out.sort(key=lambda e: _sort_key(e, axis_names))
    return out


def _label(group: Group) -> str:
    env, proto = group.environment, group.protocol
    hardware = (env.hardware or env.title if env else None) or "unknown hardware"
    return f"{hardware} · {(proto.title if proto else None) or 'unknown protocol'}"


def _sweep(conn: Connection, cases: list[dict[str, Any]], axis_names: list[str], group: Group | None) -> Sweep | None:
    """Best value per case size per implementation, on one hardware and metric (the chosen group's when
    it is a case's, else the most measured)."""
    member_of = {i: e for e in cases for i in e["ids"]}
    rows = reads.case_measurements(conn, list(member_of))
    if not rows:
        return None
    raw = Counter(r.measured for r in rows)
    pair_of = {t: (t[0], metric_key(*t[1:])) for t in raw}  # metric keys of the few distinct combinations
    pairs: dict[tuple, int] = defaultdict(int)
    for t, n in raw.items():
        pairs[pair_of[t]] += n
    wanted = None
    if group is not None:
        wanted = (group.environment.hardware if group.environment else None, group.metricKey)
    if wanted not in pairs:
        wanted = max(pairs, key=lambda p: pairs[p])
    if len(pairs) > 1:
        rows = [r for r in rows if pair_of[r.measured] == wanted]
    measured = {r.workload_id for r in rows}
    spread = {
        n: len({str(member_of[w]["axes"].get(n)) for w in measured}) for n in axis_names if "seed" not in n.lower()
    }  # a random seed is not a size to sweep over
    variable = [n for n in spread if spread[n] > 1]
    if not variable:
        return None
    x_axis = max(variable, key=lambda n: spread[n])
    _, metric, _, unit = rows[0].measured
    lower = metric_direction(metric, unit) == "lower"
    best: dict[str, dict[float, float]] = defaultdict(dict)
    for r in rows:
        x = member_of[r.workload_id]["axes"].get(x_axis)
        if not isinstance(x, (int, float)):
            continue
        name = r.title or r.slug or r.implementation_digest[:19]
        value = r.low if lower else r.high
        old = best[name].get(x)
        if old is None or (value < old if lower else value > old):
            best[name][x] = value
    ranked = sorted(best.items(), key=lambda kv: (-len(kv[1]), min(kv[1].values()) if lower else -max(kv[1].values())))
    series = [(name, sorted(points.items())) for name, points in ranked[:SWEEP_SERIES]]
    hardware, key = wanted
    caption = f"best {key} per {x_axis} on {hardware or 'unknown hardware'}, one line per implementation" + (
        f" (the {SWEEP_SERIES} covering most cases of {len(ranked)})" if len(ranked) > SWEEP_SERIES else ""
    )
    return Sweep(
        axis=x_axis,
        hardware=hardware,
        metricKey=key,
        caption=caption,
        series=[
            SweepSeries(
                implementation=name,
                points=[SweepPoint(x=x, value=y, display=format_value(y, unit)) for x, y in points],
            )
            for name, points in series
        ],
        unit=unit,
    )


def _not_chosen(parameter: str, value: str, resource: str, detail: str) -> ViewRefusal:
    """404 for a ``workload=`` or ``group=`` the operation has none of, naming the parameter and its value."""
    return ViewRefusal(
        RefusalKind.NOT_FOUND, "not-found", f"{parameter}={value!r}: {detail}", resource=resource, parameter=parameter
    )


def operation_view(
    conn: Connection, row: Any, origins: Origins, workload: str | None = None, group: str | None = None
) -> Operation:
    """The operation ``row`` (from the resolver); the busiest workload and group are the default choice.
    A ``workload`` or ``group`` asked for that the operation lacks is refused (404), never swapped for
    the default: the page would show another case's ranking as the one asked for."""
    manifest = row.manifest or {}
    spec = manifest.get("spec") or {}
    related = catalog.operations_by_id(conn, catalog.related_operation_ids(conn, row.id))
    item, *related_items = operation_items(conn, [row, *related])
    axis_names = list((spec.get("axes") or {}).keys())
    entries = merged_workloads(reads.workload_rows(conn, [row.id]), axis_names, origins)
    for e in entries:
        e["links"] = {"self": f"/operations/{item.slug}?workload={e['id']}"}
    if workload:
        chosen = next(
            (e for e in entries if workload in e["ids"] or workload in [r["digest"] for r in e["records"]]), None
        )
        if chosen is None:
            raise _not_chosen("workload", workload, "workload", f"operation {item.slug!r} has no such workload")
    else:
        chosen = max(entries, key=lambda e: e["runCount"], default=None)
    groups: list[Group] = []
    if chosen is not None and chosen["runCount"]:
        groups = groups_view(conn, ranked_groups(conn, reads.group_keys(conn, chosen["ids"])), GROUP_ROWS_SHOWN)
    chosen_group = groups[0] if groups else None
    if group:
        chosen_group = next((g for g in groups if g.comparisonKey == group), None)
        if chosen_group is None:
            raise _not_chosen(
                "group", group, "comparison group", f"the chosen workload of {item.slug!r} has no such comparison group"
            )
    chooser = [
        GroupChoice(
            comparisonKey=g.comparisonKey,
            label=_label(g),
            size=g.size,
            chosen=g is chosen_group,
            href=f"/operations/{item.slug}?workload={chosen['id']}&group={g.comparisonKey}",
        )
        for g in groups
        if chosen is not None
    ]
    cases = [e for e in entries if e["kind"] == "WorkloadCase" and e["runCount"]]
    sweep = _sweep(conn, cases, axis_names, chosen_group if chosen and chosen["kind"] == "WorkloadCase" else None)
    return Operation(
        **dict(item),
        title=(manifest.get("metadata") or {}).get("title"),
        description=(manifest.get("metadata") or {}).get("description"),
        aliases=catalog.aliases_of(conn, row.id),
        workloads=[CaseEntry.model_validate(e) for e in entries],
        related=related_items,
        manifest=manifest,
        chosenWorkload=CaseEntry.model_validate(chosen) if chosen is not None else None,
        groups=chooser,
        group=chosen_group,
        sweep=sweep,
        semantics=Semantics(
            axes=spec.get("axes"),
            inputs=spec.get("inputs"),
            outputs=spec.get("outputs"),
            semantics=spec.get("semantics"),
        ),
    )
