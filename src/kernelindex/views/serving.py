"""Serving facts as exact models: a serving run, a model, the model listing and the serving resolver's answer,
for the pages, the JSON API and the plot alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from pydantic import Field

from kernelindex.ranking.evidence import evidence_level
from kernelindex.ranking.serving import (
    FrontierPoint,
    pareto_frontier,
    rank_serving_cohort,
    run_latency,
    run_throughput,
)
from kernelindex.records.serving_keys import SERVING_POLICY_VERSION, metric_direction
from kernelindex.store.reads import serving as reads
from kernelindex.views.common import Document, EvidenceLevel, ItemLinks, Number, ViewModel
from kernelindex.views.formatting import format_date, safe_url

if TYPE_CHECKING:
    from sqlalchemy import Connection


class Throughput(ViewModel):
    metric: str
    statistic: str
    value: float


class Latency(ViewModel):
    metric: str
    statistic: str
    value: Number
    state: str = Field(description="measured, or declared (an SLO bound the workload states)")


class ServingBrief(ViewModel):
    """One line about a serving run: what lists and tables show."""

    id: str
    digest: str
    title: str
    url: str
    permalink: str
    status: str
    retracted: bool
    gpu: str
    gpuCount: int
    topology: str
    scenario: str
    stack: str | None
    project: str | None
    configuration: str | None
    workload: str | None
    observedAt: str
    observed: str
    throughput: Throughput | None
    throughputPerGpu: float | None
    throughputPerGpuDisplay: str
    latency: Latency | None
    latencyDisplay: str


class CohortRow(ServingBrief):
    rank: int | None
    tied: bool
    value: float | None
    valueDisplay: str
    excluded: list[str]


class Cohort(ViewModel):
    """The ranked table of one cohort (all runs share its key)."""

    cohortKey: str
    policy: str
    metric: str
    statistic: str
    direction: str
    rows: list[CohortRow]


class CohortRank(ViewModel):
    rank: int | None
    of: int = Field(description="ranked runs in the cohort")
    tied: bool
    excluded: list[str]


class ModelRef(ViewModel):
    id: str | None
    slug: str | None
    name: str | None
    digest: str | None
    url: str


class ServingConfiguration(ViewModel):
    digest: str | None
    summary: str | None
    dtype: str | None
    quantization: str | None
    spec: Document | None


class ServingStack(ViewModel):
    name: str | None
    digest: str | None
    project: str | None
    spec: Document | None


class ServingWorkload(ViewModel):
    name: str | None
    slug: str | None
    digest: str | None
    spec: Document | None


class ServingMeasurement(ViewModel):
    metric: str
    statistic: str
    unit: str
    value: float
    sample_count: int | None
    display: str


class SloRow(ViewModel):
    metric: str
    statistic: str
    bound: str
    measured: str


class CohortParts(ViewModel):
    cohort: str
    protocol: str
    qualityPolicy: str
    metricSet: str
    topology: str


class ServingSource(ViewModel):
    slug: str | None
    name: str | None
    url: str | None
    license: str | None
    attribution: str | None


class Retraction(ViewModel):
    at: str
    reason: str | None


class ServingRun(ViewModel):
    """A serving run page and ``GET /api/v1/serving-runs/{id}``."""

    id: str
    digest: str
    title: str
    url: str
    permalink: str
    status: str
    retracted: bool
    gpu: str
    gpuCount: int
    topology: str
    scenario: str
    stack: ServingStack
    project: str | None
    configuration: ServingConfiguration
    workload: ServingWorkload
    observedAt: str
    observed: str
    throughput: Throughput | None
    throughputPerGpu: float | None
    throughputPerGpuDisplay: str
    latency: Latency | None
    latencyDisplay: str
    kind: str
    rank: CohortRank | None
    evidence: EvidenceLevel
    model: ModelRef
    measurements: list[ServingMeasurement]
    slo: list[SloRow]
    cohortParts: CohortParts
    harness: Document
    caveats: list[str]
    sourceNative: Document | None
    source: ServingSource
    sourceRefs: list[str]
    retraction: Retraction | None
    cohort: Cohort | None
    manifest: Document
    json_: str = Field(alias="json")


class ModelGpu(ViewModel):
    gpu: str
    runs: int
    best: ServingBrief | None
    resolve: str


class ModelView(ViewModel):
    """A model: the best known serving result per GPU product (``/models/{ident}`` and its JSON)."""

    kind: str
    id: str
    slug: str
    name: str
    digest: str
    spec: Document
    url: str
    json_: str = Field(alias="json")
    runs: int
    gpus: list[ModelGpu]
    operations: list[str]
    operationsNote: str


class ListedModel(ViewModel):
    """One model in ``GET /api/v1/models``: named and linked like every other listing's items."""

    id: str
    slug: str
    name: str
    digest: str
    runs: int
    gpus: list[str]
    links: ItemLinks


class ModelListing(ViewModel):
    items: list[ListedModel]


class ResolvedModel(ViewModel):
    slug: str
    name: str
    digest: str
    url: str


class ResolveAxes(ViewModel):
    x: str
    y: str


class Candidate(ServingBrief):
    onFrontier: bool
    dominatedBy: str | None


class ExcludedRun(ServingBrief):
    reason: str


class Resolved(ViewModel):
    """The serving resolver's answer: the throughput-per-GPU vs latency frontier on one GPU."""

    model: ResolvedModel
    gpu: str
    inputLen: int | None
    outputLen: int | None
    axes: ResolveAxes
    frontier: list[Candidate]
    candidates: list[Candidate]
    excluded: list[ExcludedRun]
    plot: str
    page: str


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


def _evidence(run: Mapping[str, Any]) -> EvidenceLevel:
    """The evidence function kernel runs use, fed a serving run's facts (sources only report these)."""
    missing = [
        name
        for name, key in (("model", "model_id"), ("configuration", "configuration_id"), ("workload", "workload_id"))
        if not run.get(key)
    ]
    level, reasons = evidence_level(
        {
            "status": "passed" if run["status"] == "valid" else run["status"],
            "source_kind": run.get("source_kind"),
            "source": run.get("source_name") or run.get("source_slug"),
            "retracted_at": run.get("retracted_at"),
            "has_source": False,
            "full_identity": not missing,
            "missing_identity": missing,
            "has_raw_evidence": False,
        }
    )
    return EvidenceLevel(level=level, reasons=list(reasons))


def _primary(run: Mapping[str, Any]) -> tuple[str, str] | None:
    """The metric a cohort ranks on: its throughput if it measured one, else its first measurement."""
    found = run_throughput(run["measurements"])
    if found:
        return found[0], found[1]
    first = run["measurements"][0] if run["measurements"] else None
    return (first["metric"], first["statistic"]) if first else None


def _title(run: Mapping[str, Any]) -> str:
    title = run.get("title") or ((run.get("manifest") or {}).get("metadata") or {}).get("title")
    return title or f"{run.get('project_name') or 'unknown'} · {run.get('workload_name') or run['scenario']}"


def _brief(run: Mapping[str, Any], base_url: str) -> dict[str, Any]:
    """The fields of :class:`ServingBrief` (a serving run page gives some of them a fuller value)."""
    throughput = run_throughput(run["measurements"])
    per_gpu = throughput[2] / run["total_accelerators"] if throughput and run["total_accelerators"] else None
    workload = run.get("workload") or {}
    latency = run_latency(run["measurements"], (workload.get("spec") or {}).get("slo"))
    return {
        "id": run["id"],
        "digest": run["run_digest"],
        "title": _title(run),
        "url": f"{base_url}/serving-runs/{run['id']}",
        "permalink": f"{base_url}/r/{run['run_digest']}",
        "status": run["status"],
        "retracted": bool(run.get("retracted_at")),
        "gpu": run["accelerator_model"],
        "gpuCount": run["total_accelerators"],
        "topology": f"{run['accelerator_count']}×{run['node_count']}",
        "scenario": run["scenario"],
        "stack": run.get("stack_name"),
        "project": run.get("project_name"),
        "configuration": run.get("configuration_summary"),
        "workload": run.get("workload_name"),
        "observedAt": run["observed_at"],
        "observed": format_date(run["observed_at"]),
        "throughput": Throughput(metric=throughput[0], statistic=throughput[1], value=throughput[2])
        if throughput
        else None,
        "throughputPerGpu": per_gpu,
        "throughputPerGpuDisplay": _number(per_gpu),
        "latency": Latency(**vars(latency)) if latency else None,
        "latencyDisplay": f"{latency.metric} {latency.statistic} ≤ {_number(latency.value)} ms"
        + (" (declared SLO)" if latency.state == "declared" else "")
        if latency
        else "no latency bound",
    }


def run_brief(run: Mapping[str, Any], base_url: str = "") -> ServingBrief:
    return ServingBrief(**_brief(run, base_url))


def cohort_view(runs: Sequence[Mapping[str, Any]], base_url: str) -> Cohort | None:
    """The ranked table of one cohort (all runs share its key)."""
    if not runs:
        return None
    primary = _primary(runs[0])
    if primary is None:
        return None
    metric, statistic = primary
    briefs = {run["id"]: _brief(run, base_url) for run in runs}
    rows = [
        CohortRow(
            **briefs[entry.run_id],
            rank=entry.rank,
            tied=entry.tied,
            value=entry.value,
            valueDisplay=_number(entry.value),
            excluded=list(entry.reasons),
        )
        for entry in rank_serving_cohort(runs, metric, statistic)
    ]
    direction = metric_direction(metric)
    return Cohort(
        cohortKey=runs[0]["cohort_key"],
        policy=SERVING_POLICY_VERSION,
        metric=metric,
        statistic=statistic,
        direction={"max": "higher is better", "min": "lower is better"}.get(direction or "", "no known direction"),
        rows=rows,
    )


def _slo_rows(run: Mapping[str, Any]) -> list[SloRow]:
    """The percentiles that decide an SLO: declared bounds from the workload, measured values beside them."""
    spec = (run.get("workload") or {}).get("spec") or {}
    measured = {(m["metric"], m["statistic"]): m for m in run["measurements"]}
    rows = []
    for bound in spec.get("slo") or []:
        got = measured.get((bound["metric"], bound["statistic"]))
        rows.append(
            {
                "metric": bound["metric"],
                "statistic": bound["statistic"],
                "bound": f"{bound['operator']} {_number(bound['value'])} {bound['unit']}",
                "measured": f"{_number(got['value'])} {got['unit']}" if got else "not reported",
            }
        )
    for (metric, statistic), m in measured.items():
        if statistic.startswith("p") and not any(r["metric"] == metric and r["statistic"] == statistic for r in rows):
            rows.append(
                {
                    "metric": metric,
                    "statistic": statistic,
                    "bound": "—",
                    "measured": f"{_number(m['value'])} {m['unit']}",
                }
            )
    return [SloRow(**r) for r in rows]


def serving_run_view(conn: Connection, run: Mapping[str, Any], base_url: str) -> ServingRun:
    spec = run["manifest"]["spec"]
    cohort = cohort_view(reads.cohort_runs(conn, run["cohort_key"]), base_url)
    rows = cohort.rows if cohort else []
    mine = next((row for row in rows if row.id == run["id"]), None)
    policy = run.get("source_policy") or {}
    data = {
        **_brief(run, base_url),
        "kind": "ServingRun",
        "rank": CohortRank(
            rank=mine.rank, of=sum(r.rank is not None for r in rows), tied=mine.tied, excluded=mine.excluded
        )
        if mine
        else None,
        "evidence": _evidence(run),
        "model": {
            "id": run.get("model_id"),
            "slug": run.get("model_slug"),
            "name": run.get("model_name"),
            "digest": run.get("model_digest"),
            "url": f"{base_url}/models/{run.get('model_slug')}",
        },
        "configuration": {
            "digest": run.get("configuration_digest"),
            "summary": run.get("configuration_summary"),
            "dtype": run.get("dtype"),
            "quantization": run.get("quantization"),
            "spec": (run.get("configuration") or {}).get("spec"),
        },
        "stack": {
            "name": run.get("stack_name"),
            "digest": run.get("stack_digest"),
            "project": run.get("project_name"),
            "spec": (run.get("stack") or {}).get("spec"),
        },
        "workload": {
            "name": run.get("workload_name"),
            "slug": run.get("workload_slug"),
            "digest": run.get("workload_digest"),
            "spec": (run.get("workload") or {}).get("spec"),
        },
        "measurements": [{**m, "display": f"{_number(m['value'])} {m['unit']}"} for m in run["measurements"]],
        "slo": _slo_rows(run),
        "cohortParts": {
            "cohort": run["cohort_key"],
            "protocol": run["protocol_key"],
            "qualityPolicy": run["quality_policy"],
            "metricSet": run["metric_set_key"],
            "topology": f"{run.get('accelerator_vendor') or 'unknown'} · "
            f"{run['accelerator_model']} · {run['accelerator_count']}×{run['node_count']}",
        },
        "harness": spec["harness"],
        "caveats": spec.get("caveats") or [],
        "sourceNative": spec.get("sourceNative"),
        "source": {
            "slug": run.get("source_slug"),
            "name": run.get("source_name"),
            "url": safe_url(policy.get("url")),
            "license": policy.get("license"),
            "attribution": policy.get("attribution"),
        },
        "sourceRefs": [
            safe_url(ref.get("url"))
            for ref in (run["manifest"].get("metadata") or {}).get("sourceRefs", [])
            if safe_url(ref.get("url"))
        ],
        "retraction": {"at": run["retracted_at"], "reason": run.get("retraction_reason")}
        if run.get("retracted_at")
        else None,
        "cohort": cohort,
        "manifest": run["manifest"],
        "json": f"{base_url}/api/v1/serving-runs/{run['id']}",
    }
    return ServingRun.model_validate(data)


def _resolve_url(base_url: str, model_slug: str, gpu: str) -> str:
    return f"{base_url}/serving/resolve?{urlencode({'model': model_slug, 'gpu': gpu})}"


def list_models(conn: Connection) -> ModelListing:
    """Models with serving results (``/models`` and ``GET /api/v1/models``)."""
    return ModelListing(
        items=[
            ListedModel(
                id=m["id"],
                slug=m["slug"],
                name=m["name"],
                digest=m["model_digest"],
                runs=m["runs"],
                gpus=m["gpus"],
                links=ItemLinks(self=f"/models/{m['slug']}", json_=f"/api/v1/models/{m['slug']}"),
            )
            for m in reads.list_models(conn)
        ]
    )


def model_view(conn: Connection, model: Mapping[str, Any], base_url: str) -> ModelView:
    """A model: the best known serving result per GPU product, and what the catalog links it to."""
    runs = reads.model_runs(conn, model["id"])
    best: dict[str, ServingBrief] = {}
    counts: dict[str, int] = {}
    for run in runs:
        counts[run["accelerator_model"]] = counts.get(run["accelerator_model"], 0) + 1
        if run["status"] != "valid" or run.get("retracted_at"):
            continue
        brief = run_brief(run, base_url)
        current = best.get(run["accelerator_model"])
        if brief.throughputPerGpu is not None and (
            current is None or current.throughputPerGpu is None or brief.throughputPerGpu > current.throughputPerGpu
        ):
            best[run["accelerator_model"]] = brief
    gpus = [
        ModelGpu(gpu=gpu, runs=counts[gpu], best=best.get(gpu), resolve=_resolve_url(base_url, model["slug"], gpu))
        for gpu in sorted(counts, key=lambda g: -((best[g].throughputPerGpu or 0) if g in best else -1))
    ]
    spec = (model.get("manifest") or {}).get("spec") or {}
    return ModelView(
        kind="ModelRevision",
        id=model["id"],
        slug=model["slug"],
        name=model["name"],
        digest=model["model_digest"],
        spec=spec,
        url=f"{base_url}/models/{model['slug']}",
        json_=f"{base_url}/api/v1/models/{model['slug']}",
        runs=len(runs),
        gpus=gpus,
        # the catalog records no link from a model to the kernel operations it runs; say so, don't guess
        operations=[],
        operationsNote="this catalog records no link from this model to kernel operations",
    )


def resolve_view(
    conn: Connection,
    model: Mapping[str, Any],
    gpu: str,
    runs: Sequence[Mapping[str, Any]],
    input_len: int | None,
    output_len: int | None,
    base_url: str,
) -> Resolved:
    """Which stack and configuration serve ``model`` best on ``gpu``: the throughput-per-GPU vs latency
    frontier over the runs given (already filtered), each point with its digest and permalink."""
    briefs = {run["id"]: _brief(run, base_url) for run in runs}
    points = []
    excluded = []
    for run in runs:
        brief = briefs[run["id"]]
        if run["status"] != "valid" or run.get("retracted_at") or brief["throughputPerGpu"] is None:
            reason = (
                "retracted"
                if run.get("retracted_at")
                else (f"status {run['status']}" if run["status"] != "valid" else "no throughput reported")
            )
            excluded.append(ExcludedRun(**brief, reason=reason))
            continue
        latency = run_latency(run["measurements"], ((run.get("workload") or {}).get("spec") or {}).get("slo"))
        points.append(FrontierPoint(run["id"], brief["throughputPerGpu"], latency))
    ordered = pareto_frontier(points)
    candidates = [
        Candidate(
            **briefs[p.run_id],
            onFrontier=p.on_frontier,
            dominatedBy=briefs[p.dominated_by]["id"] if p.dominated_by else None,
        )
        for p in ordered
    ]
    query = {"model": model["slug"], "gpu": gpu}
    query.update({k: v for k, v in (("input_len", input_len), ("output_len", output_len)) if v is not None})
    return Resolved(
        model=ResolvedModel(
            slug=model["slug"],
            name=model["name"],
            digest=model["model_digest"],
            url=f"{base_url}/models/{model['slug']}",
        ),
        gpu=gpu,
        inputLen=input_len,
        outputLen=output_len,
        axes=ResolveAxes(
            x="latency (ms): measured p99, else the workload's declared p99 SLO bound; offline runs have none",
            y="throughput per GPU (output tokens/s divided by the accelerators used)",
        ),
        frontier=[c for c in candidates if c.onFrontier],
        candidates=candidates,
        excluded=excluded,
        plot=f"{base_url}/serving/resolve.svg?{urlencode(query)}",
        page=f"{base_url}/serving/resolve?{urlencode(query)}",
    )


def fits_lengths(run: Mapping[str, Any], input_len: int | None, output_len: int | None) -> bool:
    """Whether a run's workload admits the asked prompt/output lengths; a workload that declares no
    token distribution admits any (the answer says so)."""
    tokens = (((run.get("workload") or {}).get("spec") or {}).get("tokens")) or {}
    for asked, key in ((input_len, "prompt"), (output_len, "output")):
        declared = tokens.get(key)
        if asked is None or not declared:
            continue
        if declared.get("maximum") is not None and asked > declared["maximum"]:
            return False
    return True
