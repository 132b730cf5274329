"""The kernel resolver (``POST /api/v1/resolve/kernel`` and ``/batch``, ``kernelindex resolve kernel``, the
MCP ``resolve_kernel`` and ``resolve_kernels`` tools): an operation, a shape, a dtype, a GPU and
constraints in; the fastest correct implementation of that exact case with its evidence level,
interval and source out, or the nearest measured cases when no measured case matches.

It asks the search answer (:func:`kernelindex.search.answer.answer_operation`) with a structured
query, so the resolver, the search box and the rank tables agree on cases, filters and ranks. Unlike
the search box it never drops a constraint: a licence or evidence floor that leaves nothing answers
"none" with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from kernelindex.records.refusal import Refusal, RefusalKind, ViewRefusal
from kernelindex.records.vocabulary import EvidenceLevel as Level
from kernelindex.search.answer import answer_operation, named_operations
from kernelindex.search.models import GroupAnswer, OperationAnswer, RankRow
from kernelindex.search.query import DTYPES, AxisPin, Query, normalize_architecture
from kernelindex.store.reads.lookup import LookupFailed, resolve_operation, resolve_run
from kernelindex.views.common import EvidenceLevel, Interval, ViewModel, today

if TYPE_CHECKING:
    from sqlalchemy import Connection

MAX_BATCH = 20
MAX_AXES = 16
AxisValue = Annotated[int | float | str, Field(union_mode="left_to_right")]
LevelName = Literal["reported", "reproducible", "verified", "replicated"]


class Constraints(ViewModel):
    license: str | None = Field(None, max_length=100, description="text the implementation's licence must contain")
    minEvidence: LevelName | None = Field(None, description="the weakest evidence level accepted")


class KernelQuery(ViewModel):
    operation: str = Field(min_length=1, max_length=200, description="operation slug, name, alias, id or digest")
    shape: dict[Annotated[str, Field(min_length=1, max_length=64)], AxisValue] = Field(
        default_factory=dict,
        max_length=MAX_AXES,
        description='workload axes, e.g. {"N": 300, "H": 4096}; one letter stands for the one axis it begins',
    )
    dtype: str | None = Field(None, max_length=40, description="e.g. bf16")
    gpu: str | None = Field(None, max_length=100, description="GPU product or architecture, e.g. B200, sm_90")
    constraints: Constraints = Field(default_factory=Constraints)


class KernelBatch(ViewModel):
    queries: list[KernelQuery] = Field(min_length=1, max_length=MAX_BATCH)


class OperationBrief(ViewModel):
    slug: str
    name: str | None
    digest: str


class Candidate(ViewModel):
    """A ranked run: what a rank table row says, plus the group it ranks in."""

    runId: str
    digest: str
    title: str
    rank: int
    value: float | None
    unit: str | None
    display: str
    evidence: str
    hardware: str | None
    source: str | None
    comparisonKey: str
    groupSize: int
    page: str
    permalink: str


class Winner(ViewModel):
    """The fastest correct run of the case, with why it is trusted and where it comes from."""

    runId: str
    digest: str
    title: str | None
    implementation: str | None
    project: str | None
    sourceRefs: list[str]
    source: str | None
    hardware: str | None
    rank: int | None
    groupSize: int
    comparisonKey: str | None
    value: float | None
    unit: str | None
    display: str
    interval: Interval | None
    evidence: EvidenceLevel
    page: str
    permalink: str
    citation: str


class NearCase(ViewModel):
    workloadIds: list[str]
    title: str
    axes: dict[str, AxisValue]
    relation: str = Field(description="below/above AXIS, or suite")
    distance: float | None
    best: Candidate | None


class KernelResolution(ViewModel):
    query: KernelQuery
    operation: OperationBrief
    match: Literal["exact", "nearest", "none"]
    best: Winner | None
    alternatives: list[Candidate] = Field(description="the best run of each other comparison group of the case")
    nearest: list[NearCase]
    notes: list[str]


class BatchItem(ViewModel):
    resolution: KernelResolution | None
    error: str | None = Field(description="why this query was refused (the others are still answered)")


class KernelBatchAnswer(ViewModel):
    results: list[BatchItem]


def _query(ask: KernelQuery) -> Query:
    dtypes: tuple[str, ...] = ()
    if ask.dtype:
        word = ask.dtype.strip().lower()
        dtypes = (DTYPES.get(word, word),)
    gpus: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()
    if ask.gpu:
        word = ask.gpu.strip().lower()
        arch = normalize_architecture(word)
        archs, gpus = ((arch,), ()) if arch else ((), (word,))
    return Query(
        text="",
        axes=tuple(AxisPin(name, value) for name, value in ask.shape.items()),
        dtypes=dtypes,
        gpus=gpus,
        architectures=archs,
        evidence=ask.constraints.minEvidence,
        license=ask.constraints.license,
    )


def _best_row(group: GroupAnswer, floor: Level) -> RankRow | None:
    return next((r for r in group.rows if Level(r.evidence or Level.REPORTED) >= floor), None) or next(
        (r for level, r in group.bestByEvidence.items() if Level(level) >= floor), None
    )


def _candidate(row: RankRow, group: GroupAnswer, base_url: str) -> Candidate:
    return Candidate(
        runId=row.runId,
        digest=row.digest,
        title=row.title,
        rank=row.rank,
        value=row.value,
        unit=row.unit,
        display=row.display,
        evidence=row.evidence or Level.REPORTED.value,
        hardware=row.hardware,
        source=group.source,
        comparisonKey=group.comparisonKey,
        groupSize=group.size,
        page=f"{base_url}/runs/{row.runId}",
        permalink=f"{base_url}/r/{row.digest}",
    )


def _winner(conn: Connection, run_id: str, base_url: str) -> Winner:
    from kernelindex.views.run import GroupRank, run_view

    view = run_view(conn, resolve_run(conn, run_id), base_url, today())
    ident, rank = view.identity, view.rank
    grouped = rank if isinstance(rank, GroupRank) else None
    return Winner(
        runId=view.id,
        digest=view.digest,
        title=view.title,
        implementation=ident.implementation.title,
        project=ident.project.slug if ident.project else None,
        sourceRefs=[r.url for r in ident.implementation.sourceRefs if r.url],
        source=ident.source.slug,
        hardware=view.environment.title,
        rank=rank.rank,
        groupSize=rank.groupSize,
        comparisonKey=ident.comparisonKey,
        value=view.primary.value,
        unit=view.primary.unit,
        display=view.primary.display,
        interval=grouped.interval if grouped else None,
        evidence=view.evidence,
        page=f"{base_url}/runs/{view.id}",
        permalink=view.citation.permalink,
        citation=view.citation.text,
    )


def _ranked(groups: list[GroupAnswer], floor: Level) -> list[tuple[RankRow, GroupAnswer]]:
    """Each group's best acceptable row, strongest evidence first, then the larger group."""
    found = [(row, g) for g in groups if (row := _best_row(g, floor)) is not None]
    found.sort(key=lambda pair: (-Level(pair[0].evidence or Level.REPORTED).rank, -pair[1].size))
    return found


def _operation_id(conn: Connection, text: str) -> str:
    """The operation ``text`` names: by the resolver (id, digest, slug, name, alias), else by the one
    operation its words name as the search box reads them (``042``, ``moe_token_scatter_bwd``)."""
    try:
        return resolve_operation(conn, text).id
    except LookupFailed as exc:
        if exc.kind is RefusalKind.AMBIGUOUS:
            raise
        named = named_operations(conn, text)
        if len(named) == 1:
            return named[0][0]
        if named:
            shown = ", ".join(slug for _, slug in named[:5]) + (", …" if len(named) > 5 else "")
            raise ViewRefusal(
                RefusalKind.AMBIGUOUS,
                "ambiguous-name",
                f"{text!r} names {len(named)} operations ({shown}); give one slug",
                candidates=len(named),
            ) from None
        raise ViewRefusal(
            RefusalKind.NOT_FOUND,
            "not-found",
            f"no operation is named {text!r} (by id, digest, slug, name, alias or the words of its name)",
            resource="operation",
        ) from exc


def resolve_kernel(conn: Connection, ask: KernelQuery, base_url: str) -> KernelResolution:
    """The answer to one query; refuses an operation the index does not hold."""
    answer: OperationAnswer | None = answer_operation(conn, _operation_id(conn, ask.operation), _query(ask))
    if answer is None:
        raise ViewRefusal(
            RefusalKind.NOT_FOUND, "not-found", f"operation {ask.operation!r} has no workloads in this index"
        )
    floor = Level(ask.constraints.minEvidence or Level.REPORTED)
    notes = list(answer.notes)
    operation = OperationBrief(slug=answer.operation.slug, name=answer.operation.name, digest=answer.operation.digest)
    exact = [w for w in answer.workloads if w.relation in ("exact", "case") and w.groups]
    if exact:
        ranked = _ranked([g for w in exact for g in w.groups], floor)
        if ranked:
            (row, _), rest = ranked[0], ranked[1:]
            if len({w.ids[0] for w in exact}) > 1:
                notes.append(f"{len(exact)} measured cases match the given axes; pin more axes to choose one")
            return KernelResolution(
                query=ask,
                operation=operation,
                match="exact",
                best=_winner(conn, row.runId, base_url),
                alternatives=[_candidate(r, g, base_url) for r, g in rest],
                nearest=[],
                notes=notes,
            )
    nearest = []
    for w in answer.workloads:
        if w.relation in ("exact", "case"):
            continue
        ranked = _ranked(w.groups, floor)
        nearest.append(
            NearCase(
                workloadIds=w.ids,
                title=w.title,
                axes=w.axes,
                relation=w.relation,
                distance=w.distance,
                best=_candidate(*ranked[0], base_url) if ranked else None,
            )
        )
    match: Literal["nearest", "none"] = "nearest" if any(c.best for c in nearest) else "none"
    if match == "none" and not notes:
        notes.append("no measured case of this operation meets the constraints")
    return KernelResolution(
        query=ask, operation=operation, match=match, best=None, alternatives=[], nearest=nearest, notes=notes
    )


def resolve_kernels(conn: Connection, batch: KernelBatch, base_url: str) -> KernelBatchAnswer:
    """Every query of ``batch`` answered in order; one that is refused carries its reason, the rest stand."""
    results = []
    for ask in batch.queries:
        try:
            results.append(BatchItem(resolution=resolve_kernel(conn, ask, base_url), error=None))
        except Refusal as exc:
            results.append(BatchItem(resolution=None, error=exc.message))
    return KernelBatchAnswer(results=results)
