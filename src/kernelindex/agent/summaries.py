"""The shapes of the original tools' answers (``show_run``, ``rank``, ``compare_runs``, ``runs``): views
cut down to what an agent needs to answer and cite, declared so each tool publishes its output schema."""

from __future__ import annotations

from typing import Any

from kernelindex.views.common import Document, EvidenceLevel, NativeFigure, ViewModel
from kernelindex.views.run import Primary, ProjectRef, RunOperation, RunWorkloadRef


class RankSummary(ViewModel):
    rank: int | None
    tied: bool
    groupSize: int
    comparisonKey: str | None
    notRankedBecause: list[str]
    group: str | None


class TitledDigest(ViewModel):
    title: str | None
    digest: str | None


class ImplementationSummary(ViewModel):
    title: str | None
    digest: str | None
    authors: list[str]
    language: str | None
    sources: list[str]
    project: ProjectRef | None
    revision: str | None


class RunSummary(ViewModel):
    runId: str
    digest: str
    permalink: str
    page: str | None
    title: str
    status: str
    evidence: EvidenceLevel
    rank: RankSummary
    primary: Primary
    sourceFigures: list[NativeFigure]
    hardware: Document
    environment: TitledDigest
    protocol: TitledDigest
    workload: RunWorkloadRef
    operation: RunOperation | None
    implementation: ImplementationSummary
    source: str | None
    observedAt: str | None
    notes: list[str]
    citation: str


class GroupRow(ViewModel):
    rank: int
    tied: bool
    runId: str
    digest: str
    permalink: str
    title: str | None
    value: float | None
    display: str
    interval: str | None
    evidence: str | None
    observedAt: str | None


class NotRanked(ViewModel):
    runId: str
    why: str | list[str] | None


class GroupSummary(ViewModel):
    comparisonKey: str
    page: str | None
    metric: str
    direction: str
    tieRule: str
    protocol: Any
    environment: Any
    size: int
    rows: list[GroupRow]
    notRanked: list[NotRanked]


class Groups(ViewModel):
    groups: list[GroupSummary]


class ComparedSide(ViewModel):
    runId: str
    digest: str
    permalink: str
    title: str | None
    value: str
    evidence: str
    comparisonKey: str | None


class CompareSummary(ViewModel):
    a: ComparedSide
    b: ComparedSide
    comparable: bool
    differingParts: list[str]
    ratio: float | None
    ratioDefinition: str
    statement: str | None
    page: str | None


class ListedRun(ViewModel):
    runId: str
    digest: str
    permalink: str
    title: str | None
    operation: str | None
    hardware: str | None
    status: str
    value: str
    evidence: str | None


class RunsSummary(ViewModel):
    runs: list[ListedRun]
