"""Typed response models of the JSON API's entity, ledger, compare and index routes.

They give the OpenAPI document (and so /docs/api and a typed client) real field names and types.
Views build plain dicts; FastAPI validates them against these models on the way out.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GpuRef(Model):
    model: str | None
    slug: str
    links: dict[str, str]


class NamedRef(Model):
    slug: str
    name: str | None
    links: dict[str, str]


class Install(Model):
    kind: str | None
    command: str
    variant: str | None


class SourceLink(Model):
    label: str
    url: str | None = Field(description="as the record states it")
    href: str | None = Field(description="the URL when it is plain http(s), else null: only this one is linked")


class SourceFile(Model):
    name: str | None
    digest: str | None
    sizeBytes: int | None


class BestRun(Model):
    gpu: GpuRef
    rank: int
    tied: bool
    groupSize: int
    runId: str
    digest: str
    value: float | None
    display: str
    evidence: str | None
    workloadId: str | None
    comparisonKey: str
    links: dict[str, str]


class Implementation(Model):
    id: str
    slug: str
    digest: str
    title: str
    language: str | None
    authors: list[str]
    project: NamedRef | None
    operation: NamedRef | None
    install: Install | None
    licence: str | None
    deployable: bool
    deployableReason: str
    sourceAvailable: bool
    sourceFile: SourceFile | None
    sourceLinks: list[SourceLink]
    support: dict[str, Any]
    revision: str | None
    runCount: int
    bestRunPerGpu: list[BestRun]
    bestRank: int | None
    evidenceLevels: dict[str, int]
    bestEvidence: str | None
    links: dict[str, str]


class ProjectImplementation(Model):
    slug: str
    title: str
    digest: str
    language: str | None
    runCount: int
    licence: str | None
    links: dict[str, str]


class RecordHeld(Model):
    comparisonKey: str
    runId: str
    groupSize: int
    tied: bool
    implementation: str
    gpu: GpuRef
    display: str
    workloadId: str | None
    operation: str | None
    workload: str | None
    links: dict[str, str]


class LeaderChange(Model):
    comparisonKey: str | None
    at: str
    runId: str | None
    previousRunId: str | None


class Project(Model):
    id: str
    slug: str
    name: str | None
    homepage: str | None
    implementations: list[ProjectImplementation]
    runCount: int
    recordsHeld: list[RecordHeld]
    recentWindowDays: int
    gained: list[LeaderChange]
    lost: list[LeaderChange]
    links: dict[str, str]


class GpuSummary(Model):
    model: str | None
    slug: str
    vendor: str | None
    architectures: list[str]
    runCount: int
    links: dict[str, str]


class Architecture(Model):
    name: str
    gpus: list[str]


class CoverageCell(Model):
    any: int = Field(description="runs of this operation on this GPU")
    verified: int = Field(description="of those, runs at evidence level verified or replicated")


class CoverageRow(Model):
    slug: str
    name: str | None
    cells: dict[str, CoverageCell] = Field(description="GPU slug -> counts; a GPU absent here has no run")


class Coverage(Model):
    gpus: list[str]
    operations: list[CoverageRow]
    legend: str


class GpuIndex(Model):
    gpus: list[GpuSummary]
    architectures: list[Architecture]
    coverage: Coverage
    links: dict[str, str]


class GpuProduct(Model):
    model: str
    vendor: str | None
    architectures: list[str]
    runCount: int


class GpuBestRun(Model):
    operation: dict[str, str | None] | None
    workload: str | None
    workloadId: str | None
    implementation: dict[str, str | None] | None
    runId: str
    digest: str | None
    groupSize: int
    tied: bool
    value: float | None
    display: str
    evidence: str | None
    comparisonKey: str
    links: dict[str, str]


class Gpu(Model):
    model: str | None
    slug: str
    products: list[GpuProduct]
    architectures: list[str]
    runCount: int
    groupCount: int
    verifiedRunCount: int
    bestRuns: list[GpuBestRun]
    bestRunsShown: int
    links: dict[str, str]


class LedgerRun(Model):
    id: str
    digest: str | None
    permalink: str | None = Field(description="a URL that names the run by digest, forever")


class LedgerEntry(Model):
    id: str = Field(description="stable: the same change always has the same id (use it to drop repeats)")
    kind: str = Field(description="new_run, new_leader, correction, retraction or correction_request")
    kindTitle: str
    at: str = Field(description="UTC ISO 8601 time of the change")
    title: str
    summary: str
    operation: dict[str, str | None] | None
    run: LedgerRun | None
    detail: dict[str, Any]
    links: dict[str, str | None]


class LedgerPage(Model):
    items: list[LedgerEntry]
    since: str | None = Field(description="the normalised UTC floor applied (inclusive), or null")
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: dict[str, str | None]


class ApiIndex(Model):
    name: str
    version: str
    docs: str
    openapi: str
    collections: dict[str, str]
    entities: dict[str, str]
    feeds: dict[str, str]
