"""The search answer's shape: one typed document for ``GET /api/v1/search``, the search page and
``kernelindex search --json``. Field names are camelCase as everywhere in the API; every run and
record carries its digest and a permalink, so a client can cite what it was shown."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

SCHEMA_VERSION = "kernelindex.search/v1"


class Links(BaseModel):
    self: str | None = Field(None, description="the page (permalink path) of this record")
    json_: str | None = Field(None, alias="json", description="its JSON twin under /api/v1/")

    model_config = {"populate_by_name": True}


class RankRow(BaseModel):
    rank: int
    tied: bool
    runId: str
    digest: str
    title: str
    value: float | None = Field(description="the primary metric, raw, in `unit`")
    unit: str | None
    display: str = Field(description="the value in human units, e.g. 317.9 µs")
    evidence: str | None = Field(description="reported, reproducible, verified or replicated")
    hardware: str | None = None
    links: Links


class GroupAnswer(BaseModel):
    comparisonKey: str
    metricKey: str
    direction: str
    hardware: str | None
    source: str | None
    size: int = Field(description="runs ranked in the group")
    bestByEvidence: dict[str, RankRow] = Field(
        description="the best-ranked run at each evidence level present (exactly that level)"
    )
    rows: list[RankRow] = Field(description="the group's rank table, best first (at most `rowsShown`)")
    rowsShown: int
    links: Links


class WorkloadAnswer(BaseModel):
    ids: list[str] = Field(description="the workload records of this one case (e.g. upstream's and our pack's)")
    digests: list[str]
    kind: str
    title: str
    axes: dict[str, Any]
    relation: str = Field(description="exact, below/above AXIS (bracketing), suite, or case (overview)")
    distance: float | None = None
    measured: bool
    groups: list[GroupAnswer]
    links: Links


class OperationRef(BaseModel):
    slug: str
    name: str | None
    family: str | None
    digest: str
    links: Links


class OperationAnswer(BaseModel):
    operation: OperationRef
    score: int = Field(description="how many query words named this operation")
    mode: str = Field(
        description="exact (a measured case has every pinned axis), bracketing (nearest measured "
        "cases on each side), or overview (no axis pinned: the best groups)"
    )
    pinned: dict[str, Any] = Field(description="pinned axes, resolved to this operation's axis names")
    unresolvedAxes: list[str]
    axisNames: list[str]
    notes: list[str]
    workloads: list[WorkloadAnswer]


class EntityMatch(BaseModel):
    kind: str
    id: str
    digest: str | None
    title: str
    href: str | None
    detail: str | None = None


class SearchAnswer(BaseModel):
    """What a query found: operations answered with rank tables or bracketing cases, then other records."""

    schema_: str = Field(SCHEMA_VERSION, alias="schema")
    query: dict[str, Any] = Field(description="the query as parsed: words, axes, filters, digests")
    relaxed: list[str] = Field(description="filters dropped because nothing matched with them (e.g. gpu)")
    notes: list[str]
    operations: list[OperationAnswer]
    otherOperations: list[OperationRef] = Field(description="further operations the words name, not answered here")
    matches: list[EntityMatch] = Field(description="runs, workloads, implementations and groups by digest or name")

    model_config = {"populate_by_name": True}

    def document(self) -> dict[str, Any]:
        """The JSON document (as the API serves it)."""
        return self.model_dump(mode="json", by_alias=True)
