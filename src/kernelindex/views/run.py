"""One run as its page, ``GET /api/v1/runs/{id}``, ``kernelindex show`` and the MCP ``show_run`` tool
give it: the record, its rank, evidence and citation, plus measured correctness (per case for a
suite), per-tensor workload rows, the comparison profile, lifecycle notes and the source's terms.

:func:`run_view` reads everything first (:func:`_read`), then builds the model from what it read
(:func:`_build`), so the page's queries are all in one place and the building is pure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from kernelindex.ranking.cohort import REASON_TEXT, RankedGroup
from kernelindex.ranking.direction import direction_phrase
from kernelindex.ranking.reads import ranked_group
from kernelindex.records.canonical import metric_key
from kernelindex.records.citation import bibtex, citation_for
from kernelindex.records.vocabulary import STRICT_RULE_FLAG
from kernelindex.store.reads import runs
from kernelindex.store.reads.artifacts import artifact_by_digest
from kernelindex.store.reads.run_extras import case_runs_of_suite
from kernelindex.store.reads.run_facts import RunFacts, facts_of_run
from kernelindex.store.reads.runs import RunRecords, records_of
from kernelindex.store.reads.stacks import stack_label
from kernelindex.views.common import (
    Document,
    EvidenceLevel,
    Interval,
    NativeFigure,
    Number,
    ViewModel,
    group_url,
    interval_of,
    native_scores,
    source_native_display,
)
from kernelindex.views.evidence import EvidencePanel, evidence_panel
from kernelindex.views.formatting import format_date, format_value, safe_url, short_digest
from kernelindex.views.transparency_log import LogEntry, log_entry

if TYPE_CHECKING:
    from sqlalchemy import Connection, Row

STALE_DAYS = 365


# ---------------------------------------------------------------- the model


class Primary(ViewModel):
    metric: str | None
    statistic: str | None
    unit: str | None
    value: float | None
    display: str = Field(description="the value in a readable unit, e.g. 317.9 µs")
    key: str = Field(description="metric:statistic:unit, or none")
    direction: str


class GroupRank(ViewModel):
    """The run's place in its comparison group."""

    rank: int | None
    groupSize: int
    excluded: list[str]
    tied: bool
    comparisonKey: str
    groupUrl: str | None
    direction: str
    tieRule: str
    interval: Interval | None
    excludedText: list[str]
    leaderRunId: str | None


class PendingRank(ViewModel):
    """No group yet: the run's workload record is not in this index."""

    rank: None
    groupSize: int
    excluded: list[str]
    excludedText: list[str]


class SourceRef(ViewModel):
    url: str | None = Field(description="as the record states it")
    href: str | None = Field(description="the URL when it is plain http(s), else null: only this one is linked")


class ImplementationRef(ViewModel):
    id: str | None
    title: str | None
    digest: str | None
    authors: list[str]
    language: str | None
    sourceRefs: list[SourceRef]


class ProjectRef(ViewModel):
    name: str | None
    slug: str
    homepage: str | None


class RunWorkloadRef(ViewModel):
    id: str | None
    title: str | None
    digest: str | None


class RunOperation(ViewModel):
    slug: str
    name: str | None
    digest: str | None


class SourceIdentity(ViewModel):
    slug: str | None
    name: str | None
    kind: str | None


class Identity(ViewModel):
    """What the run is of, by record and digest: the parts of its comparison key."""

    implementation: ImplementationRef
    project: ProjectRef | None
    revision: str | None
    workload: RunWorkloadRef
    operation: RunOperation | None
    comparisonKey: str | None
    source: SourceIdentity
    externalId: str | None
    runDigest: str
    protocolDigest: str | None
    environmentDigest: str | None


class Measurement(ViewModel):
    metric: str
    statistic: str
    unit: str | None
    value: float
    display: str
    sampleCount: int | None


class Citation(ViewModel):
    permalink: str
    digest: str
    accessed: str
    bibtex: str
    text: str


class RunLinks(ViewModel):
    self: str
    json_: str = Field(alias="json")
    workload: str | None
    compareWithLeader: str | None


class SourceNative(ViewModel):
    """The source's own identity and figures for the run, as it states them."""

    source: str | None
    benchmark: str | None
    externalId: str | None
    metrics: Document
    display: list[NativeFigure]


class Correctness(ViewModel):
    workloadPolicy: Document | None
    reference: str | None
    comparator: str | None
    correctnessKey: str | None
    published: bool = Field(description="true when the workload states tolerances, not only a comparator")


class RunWorkload(ViewModel):
    id: str | None
    title: str | None
    kind: str | None
    shapeSummary: str | None
    dtypes: list[str] | None
    axes: Document | None
    caseCount: int | None
    aggregation: Document | None


class Protocol(ViewModel):
    title: str | None
    harness: Document
    harnessHref: str | None
    measurement: Document
    correctness: Document
    comparability: Document


class Environment(ViewModel):
    title: str | None
    hardware: Document
    software: Document
    stack: str | None
    settings: Document | None
    imageDigest: str | None


class Artifact(ViewModel):
    role: str
    digest: str | None
    kind: str | None
    mediaType: str | None
    sizeBytes: int | None
    uri: str | None
    href: str | None
    license: str | None


class Replication(ViewModel):
    runId: str
    status: str
    observedAt: str | None
    display: str


class MeasuredCheck(ViewModel):
    """What a correctness check measured, as the run (or case) states it."""

    comparator: str | None
    maxAbsoluteError: Number | None
    maxRelativeError: Number | None
    matchedRatio: Number | None


class CaseRun(ViewModel):
    runId: str
    workloadId: str | None
    case: str | None
    status: str
    display: str
    measured: MeasuredCheck | None


class MeasuredCorrectness(ViewModel):
    run: MeasuredCheck | None
    cases: list[CaseRun] = Field(description="a suite run's cases, each with its own check")


class TensorRow(ViewModel):
    name: str
    kind: Literal["tensor"]
    dtype: str | None
    shape: list[Any] | None = Field(description="sizes, or axis names")
    strides: list[int] | None
    alignmentBytes: int | None


class ScalarRow(ViewModel):
    name: str
    kind: Literal["scalar"]
    dtype: str | None
    shape: list[Any]
    strides: None
    value: Any = Field(description="the scalar as the workload states it")


class ProfilePart(ViewModel):
    part: str
    label: str | None
    digest: str | None


class LifecycleNote(ViewModel):
    kind: Literal["stale", "disputed"]
    text: str


class SourceTerms(ViewModel):
    name: str | None
    url: str | None
    href: str | None
    licence: str | None
    attribution: str | None


class StrictRule(ViewModel):
    """Where our stricter rule (exact integers, no outliers: ../shared/spec/harness.md) judged a checked call
    otherwise than the benchmark's own judge, whose verdict stands."""

    flag: str = Field(STRICT_RULE_FLAG, description="the flag such a run carries")
    flagged: bool = Field(
        description=f"{STRICT_RULE_FLAG}: the benchmark's judge passed it, ours refused an output; kept, not ranked"
    )
    disagreements: list[str] = Field(description="each call where the two rules differ, as the harness logged it")


class Run(ViewModel):
    """One run, in the order the JSON API has always given its fields."""

    id: str
    digest: str
    title: str
    status: str
    observedAt: str | None
    evidence: EvidenceLevel
    primary: Primary
    rank: GroupRank | PendingRank
    sol: float | None = Field(description="SOL score as the source states it")
    speedup: float | None = Field(description="speedup over the reference as the source states it")
    identity: Identity
    measurements: list[Measurement]
    citation: Citation
    links: RunLinks
    observedDate: str
    publishedAt: str | None
    evidenceDetail: EvidencePanel
    solDisplay: str
    speedupDisplay: str
    sourceNative: SourceNative | None
    correctness: Correctness
    workload: RunWorkload
    samples: int | None
    protocol: Protocol
    environment: Environment
    artifacts: list[Artifact]
    replications: list[Replication]
    notes: list[str]
    supersededBy: str | None
    supersedes: str | None
    manifest: Document
    measuredCorrectness: MeasuredCorrectness | None
    tensors: list[TensorRow | ScalarRow]
    comparisonProfile: list[ProfilePart]
    lifecycle: list[LifecycleNote]
    sourceTerms: SourceTerms | None
    log: LogEntry | None = Field(None, description="the run's leaf in the transparency log, and its proof")
    strictRule: StrictRule | None = Field(
        None, description="where our stricter rule disagreed with the benchmark's judge (a harness rerun only)"
    )


# ---------------------------------------------------------------- reads

MAX_DISAGREEMENTS_SHOWN = 64
DISAGREEMENT_CHARS = 500
RAW_SAMPLES_BYTES = 4 << 20  # a raw-samples artifact larger than this is not read for its notes


def _disagreements(conn: Connection, artifacts: Sequence[Row]) -> list[str]:
    """The calls where the two rules differ, from the run's raw-samples artifact (a case's own list, or
    each case's of a suite, prefixed by its uuid); none where the artifact holds none or is not ours."""
    raw = next((a for a in artifacts if a.role == "rawSamples" and (a.size_bytes or 0) <= RAW_SAMPLES_BYTES), None)
    stored = artifact_by_digest(conn, raw.content_digest) if raw is not None else None
    try:
        data = json.loads(stored.content) if stored is not None and stored.content is not None else {}
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    found = [("", data.get("disagreements"))]
    found += [
        (f"{c.get('case', '')[:8]} ", c.get("disagreements")) for c in data.get("cases") or [] if isinstance(c, dict)
    ]
    lines = [
        prefix + line for prefix, given in found if isinstance(given, list) for line in given if isinstance(line, str)
    ]
    return [line[:DISAGREEMENT_CHARS] for line in lines[:MAX_DISAGREEMENTS_SHOWN]]


def _strict_rule(reads: RunReads, metrics: dict[str, Any]) -> StrictRule | None:
    flagged = bool(metrics.get(f"flag_{STRICT_RULE_FLAG}"))
    if not flagged and not reads.disagreements:
        return None
    return StrictRule(flagged=flagged, disagreements=list(reads.disagreements))


@dataclass(frozen=True)
class RunReads:
    """Everything the run view reads, read once."""

    records: RunRecords
    group: RankedGroup | None
    measurements: Sequence[Row]
    artifacts: Sequence[Row]
    source_artifact: Row | None
    replications: Sequence[Row]
    facts: RunFacts
    evidence: EvidencePanel
    suite_cases: Sequence[Row]
    disagreements: Sequence[str]


def _source_digest(records: RunRecords) -> str | None:
    impl = records.implementation
    spec = (impl.manifest or {}).get("spec", {}) if impl is not None else {}
    return (spec.get("source") or {}).get("contentDigest")


def _read(conn: Connection, row: Any, base_url: str, today: date) -> RunReads:
    records = records_of(conn, row)
    group = ranked_group(conn, row.comparison_key) if row.comparison_key else None
    measurements = runs.measurements_of(conn, row.id)
    artifacts = runs.artifacts_of(conn, row.id)
    source_digest = _source_digest(records)
    linked = {a.content_digest for a in artifacts}
    source_artifact = (
        runs.artifact_by_digest(conn, source_digest) if source_digest and source_digest not in linked else None
    )
    replications = runs.replications_of(conn, row)
    facts = facts_of_run(conn, row.id)
    evidence = evidence_panel(conn, row, base_url, today, facts)
    wl = records.workload
    suite = wl is not None and wl.kind == "WorkloadSuite" and wl.operation_id
    cases = case_runs_of_suite(conn, row, wl.operation_id) if suite and wl is not None else []
    disagreements = _disagreements(conn, artifacts)
    return RunReads(
        records, group, measurements, artifacts, source_artifact, replications, facts, evidence, cases, disagreements
    )


def run_view(conn: Connection, row: Any, base_url: str, today: date) -> Run:
    """The run ``row`` (from the resolver) as every reader shows it."""
    reads, entry = _read(conn, row, base_url, today), log_entry(conn, row.run_digest, base_url)
    return _build(row, reads, base_url, today).model_copy(update={"log": entry})


# ---------------------------------------------------------------- building


def _source_refs(items: Sequence[dict] | None) -> list[SourceRef]:
    return [SourceRef(url=(ref or {}).get("url"), href=safe_url((ref or {}).get("url"))) for ref in items or []]


def _authors(metadata: dict | None) -> list[str]:
    return [a.get("name") or a.get("github") or "" for a in (metadata or {}).get("authors") or []]


def _measured(correctness: dict[str, Any] | None) -> MeasuredCheck | None:
    if not isinstance(correctness, dict) or not correctness:
        return None
    return MeasuredCheck(
        comparator=correctness.get("comparator"),
        maxAbsoluteError=correctness.get("maximumAbsoluteError"),
        maxRelativeError=correctness.get("maximumRelativeError"),
        matchedRatio=correctness.get("matchedRatio"),
    )


def _tensors(wl_spec: dict[str, Any]) -> list[TensorRow | ScalarRow]:
    rows: list[TensorRow | ScalarRow] = [
        TensorRow(
            name=name,
            kind="tensor",
            dtype=t.get("dtype"),
            shape=t.get("shape"),
            strides=t.get("strides"),
            alignmentBytes=t.get("alignmentBytes"),
        )
        for name, t in sorted((wl_spec.get("tensors") or {}).items())
        if isinstance(t, dict)
    ]
    rows += [
        ScalarRow(name=name, kind="scalar", dtype=s.get("dtype"), shape=[], strides=None, value=s.get("value"))
        for name, s in sorted((wl_spec.get("scalars") or {}).items())
        if isinstance(s, dict)
    ]
    return rows


def _age_days(observed: str | None, today: date) -> int | None:
    try:
        return (today - date.fromisoformat((observed or "")[:10])).days
    except ValueError:
        return None


def _lifecycle(observed: list[str | None], evidence: EvidencePanel, today: date) -> list[LifecycleNote]:
    notes = []
    age = _age_days(max(o or "" for o in observed), today)
    if age is not None and age > STALE_DAYS:
        text = f"stale: not re-observed for {age} days (more than {STALE_DAYS}); the software may have moved on"
        notes.append(LifecycleNote(kind="stale", text=text))
    open_requests = [c for c in evidence.corrections if c.status == "open"]
    if open_requests:
        n = len(open_requests)
        notes.append(
            LifecycleNote(kind="disputed", text=f"disputed: {n} open correction request{'' if n == 1 else 's'}")
        )
    return notes


def rank_summary(
    group: RankedGroup | None, run_id: str, unit: str | None, workload_id: str | None
) -> GroupRank | PendingRank:
    if group is None:
        return PendingRank(
            rank=None,
            groupSize=0,
            excluded=["pending_workload"],
            excludedText=["its workload record is not in this index yet, so it has no comparison group"],
        )
    entry = group.entry(run_id)
    excl = group.exclusion(run_id)
    leader = group.leader
    return GroupRank(
        rank=entry.rank if entry else None,
        tied=bool(entry and entry.tied),
        groupSize=group.size,
        comparisonKey=group.comparison_key,
        groupUrl=group_url(workload_id, group.comparison_key),
        direction=group.direction_text,
        tieRule=group.tie_rule,
        interval=interval_of(entry, unit),
        excluded=list(excl.reasons) if excl else [],
        excludedText=[REASON_TEXT[r] for r in excl.reasons] if excl else [],
        leaderRunId=leader.run.run_id if leader else None,
    )


def _artifacts(spec: dict[str, Any], reads: RunReads, impl_spec: dict[str, Any]) -> list[Artifact]:
    """Linked artifacts, then evidence the run states but nothing stored, then the implementation's source."""
    stated = spec.get("evidence") or {}
    stated_uris = {ref.get("digest"): ref.get("uri") for ref in stated.values() if isinstance(ref, dict)}
    rows = []
    for link in reads.artifacts:
        uri = link.uri or stated_uris.get(link.content_digest)
        rows.append(
            Artifact(
                role=link.role,
                digest=link.content_digest,
                kind=link.kind,
                mediaType=link.media_type,
                sizeBytes=link.size_bytes,
                uri=uri,
                href=safe_url(uri) or f"/artifacts/{link.content_digest}",
                license=link.license,
            )
        )
    known = {a.digest for a in rows}
    for role, ref in sorted(stated.items()):
        if isinstance(ref, dict) and ref.get("digest") not in known:
            rows.append(
                Artifact(
                    role=role,
                    digest=ref.get("digest"),
                    kind=None,
                    mediaType=None,
                    sizeBytes=None,
                    uri=ref.get("uri"),
                    href=safe_url(ref.get("uri")),
                    license=None,
                )
            )
    source_art = impl_spec.get("source") or {}
    if source_art.get("contentDigest") and source_art["contentDigest"] not in known:
        art = reads.source_artifact
        rows.append(
            Artifact(
                role="implementation source",
                digest=source_art["contentDigest"],
                kind="source",
                mediaType=art.media_type if art is not None else None,
                sizeBytes=source_art.get("sizeBytes"),
                uri=art.uri if art is not None else None,
                href=(safe_url(art.uri) or f"/artifacts/{art.content_digest}") if art is not None else None,
                license=art.license if art is not None else None,
            )
        )
    return rows


def _case_runs(reads: RunReads) -> list[CaseRun]:
    cases, seen = [], set()
    for case in reads.suite_cases:
        if case.workload_id in seen:
            continue
        seen.add(case.workload_id)
        cases.append(
            CaseRun(
                runId=case.id,
                workloadId=case.workload_id,
                case=case.name or case.shape_summary,
                status=case.status,
                display=format_value(case.primary_value, case.primary_unit),
                measured=_measured(case.correctness),
            )
        )
    return cases


def _build(row: Any, reads: RunReads, base_url: str, today: date) -> Run:
    manifest = row.manifest or {}
    run_rec = manifest.get("run") or {}
    spec = run_rec.get("spec") or {}
    meta = run_rec.get("metadata") or {}
    protocol_rec = manifest.get("protocol") or {}
    env_rec = manifest.get("environment") or {}
    records = reads.records
    source, impl, project = records.source, records.implementation, records.project
    workload, operation = records.workload, records.operation
    rank = rank_summary(reads.group, row.id, row.primary_unit, row.workload_id)
    native = spec.get("sourceNative") or {}
    impl_meta = (impl.manifest or {}).get("metadata", {}) if impl is not None else {}
    impl_spec = (impl.manifest or {}).get("spec", {}) if impl is not None else {}
    wl_manifest = (workload.manifest if workload is not None else None) or {}
    wl_spec = wl_manifest.get("spec") or {}
    wl_correctness = wl_spec.get("correctness")
    proto_spec = protocol_rec.get("spec") or {}
    env_spec = env_rec.get("spec") or {}

    replications = [
        Replication(
            runId=r.id,
            status=r.status,
            observedAt=r.observed_at,
            display=format_value(r.primary_value, r.primary_unit),
        )
        for r in reads.replications
    ]
    notes = [meta["description"]] if meta.get("description") else []
    notes += [f"label {name}: {value}" for name, value in sorted((meta.get("labels") or {}).items())]
    facts = reads.facts
    if facts.retraction is not None:
        notes.append(f"retracted {facts.retraction.at}: {facts.retraction.reason or 'no reason given'}")

    evidence = reads.evidence
    citation = citation_for(run_rec, row.run_digest, base_url, today)
    wl_title = (wl_manifest.get("metadata") or {}).get("title") or (workload.name if workload is not None else None)
    leader_id = rank.leaderRunId if isinstance(rank, GroupRank) else None
    scores = native_scores(native.get("metrics"))
    primary = Primary(
        metric=row.primary_metric,
        statistic=row.primary_statistic,
        unit=row.primary_unit,
        value=row.primary_value,
        display=format_value(row.primary_value, row.primary_unit),
        key=metric_key(row.primary_metric, row.primary_statistic, row.primary_unit),
        direction=direction_phrase(row.primary_metric, row.primary_unit),
    )
    identity = Identity(
        implementation=ImplementationRef(
            id=impl.id if impl is not None else None,
            title=impl.title if impl is not None else None,
            digest=row.implementation_digest,
            authors=_authors(impl_meta),
            language=impl.language if impl is not None else None,
            sourceRefs=_source_refs(impl_meta.get("sourceRefs")),
        ),
        project=ProjectRef(
            name=project.name, slug=project.slug, homepage=safe_url((project.export_row or {}).get("canonicalUrl"))
        )
        if project is not None
        else None,
        revision=(impl_spec.get("projectRevision") or {}).get("version")
        or (impl.export_row or {}).get("sourceRevision")
        if impl is not None
        else None,
        workload=RunWorkloadRef(id=row.workload_id, title=wl_title, digest=row.workload_digest),
        operation=RunOperation(slug=operation.slug, name=operation.name, digest=operation.semantic_digest)
        if operation is not None
        else None,
        comparisonKey=row.comparison_key,
        source=SourceIdentity(slug=source.slug, name=source.name, kind=source.kind)
        if source is not None
        else SourceIdentity(slug=row.source_slug, name=row.source_slug, kind=None),
        externalId=native.get("externalId"),
        runDigest=row.run_digest,
        protocolDigest=row.protocol_key,
        environmentDigest=row.environment_key,
    )
    protocol = Protocol(
        title=(protocol_rec.get("metadata") or {}).get("title"),
        harness=proto_spec.get("harness") or {},
        harnessHref=safe_url((proto_spec.get("harness") or {}).get("repository")),
        measurement=proto_spec.get("measurement") or {},
        correctness=proto_spec.get("correctness") or {},
        comparability=proto_spec.get("comparability") or {},
    )
    environment = Environment(
        title=(env_rec.get("metadata") or {}).get("title"),
        hardware=env_spec.get("hardware") or {},
        software=env_spec.get("software") or {},
        stack=stack_label(env_spec.get("software")),
        settings=env_spec.get("settings"),
        imageDigest=env_spec.get("imageDigest"),
    )
    measured, cases = _measured(spec.get("correctness")), _case_runs(reads)
    strict_rule = _strict_rule(reads, native.get("metrics") or {})
    policy = (source.policy if source is not None else None) or {}
    return Run(
        id=row.id,
        digest=row.run_digest,
        title=meta.get("title") or meta.get("name") or short_digest(row.run_digest),
        status=row.status,
        observedAt=row.observed_at,
        observedDate=format_date(row.observed_at),
        publishedAt=row.published_at,
        evidence=EvidenceLevel(level=evidence.level, reasons=evidence.reasons),
        evidenceDetail=evidence,
        primary=primary,
        rank=rank,
        sol=scores["sol"],
        solDisplay=scores["solDisplay"],
        speedup=scores["speedup"],
        speedupDisplay=scores["speedupDisplay"],
        sourceNative=SourceNative(
            source=native.get("source"),
            benchmark=native.get("benchmark"),
            externalId=native.get("externalId"),
            metrics=native.get("metrics") or {},
            display=source_native_display(native),
        )
        if native
        else None,
        identity=identity,
        correctness=Correctness(
            workloadPolicy=wl_correctness,
            reference=(proto_spec.get("correctness") or {}).get("reference"),
            comparator=(proto_spec.get("correctness") or {}).get("comparator"),
            correctnessKey=row.correctness_key,
            published=bool(wl_correctness and set(wl_correctness) - {"comparator"}),
        ),
        workload=RunWorkload(
            id=row.workload_id,
            title=wl_title,
            kind=workload.kind if workload is not None else None,
            shapeSummary=workload.shape_summary if workload is not None else None,
            dtypes=workload.dtypes if workload is not None else None,
            axes=wl_spec.get("axes"),
            caseCount=len(wl_spec.get("cases") or []) or None,
            aggregation=wl_spec.get("aggregation"),
        ),
        measurements=[
            Measurement(
                metric=m.metric,
                statistic=m.statistic,
                unit=m.unit,
                value=m.value,
                display=format_value(m.value, m.unit),
                sampleCount=m.sample_count,
            )
            for m in reads.measurements
        ],
        samples=(spec.get("timing") or {}).get("samples"),
        protocol=protocol,
        environment=environment,
        artifacts=_artifacts(spec, reads, impl_spec),
        replications=replications,
        notes=notes,
        supersededBy=facts.superseded_by,
        supersedes=row.supersedes_id,
        manifest=manifest,
        citation=Citation(
            permalink=citation.permalink,
            digest=row.run_digest,
            accessed=today.isoformat(),
            bibtex=bibtex(citation),
            text=f"{citation.title}. {citation.publisher}, {citation.permalink} "
            f"(digest {row.run_digest}), accessed {today.isoformat()}.",
        ),
        links=RunLinks(
            self=f"/runs/{row.id}",
            json_=f"/api/v1/runs/{row.id}",
            workload=f"/workloads/{row.workload_id}" if row.workload_id else None,
            compareWithLeader=f"/compare?a={row.id}&b={leader_id}" if leader_id and leader_id != row.id else None,
        ),
        measuredCorrectness=MeasuredCorrectness(run=measured, cases=cases) if measured or cases else None,
        tensors=_tensors(wl_spec),
        comparisonProfile=[
            ProfilePart(
                part="operation",
                label=identity.operation.name if identity.operation else None,
                digest=row.operation_digest,
            ),
            ProfilePart(part="workload", label=wl_title, digest=row.workload_digest),
            ProfilePart(part="protocol", label=protocol.title, digest=row.protocol_key),
            ProfilePart(part="environment", label=environment.title, digest=row.environment_key),
            ProfilePart(part="correctness", label=None, digest=row.correctness_key),
            ProfilePart(part="metric", label=primary.direction, digest=primary.key),
        ],
        lifecycle=_lifecycle([row.observed_at] + [r.observedAt for r in replications], evidence, today),
        strictRule=strict_rule,
        sourceTerms=SourceTerms(
            name=identity.source.name,  # the source's name, else the slug the run names
            url=policy.get("url"),
            href=safe_url(policy.get("url")),
            licence=policy.get("license"),
            attribution=policy.get("attribution"),
        )
        if source is not None or identity.source.slug
        else None,
    )
