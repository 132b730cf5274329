"""One run as its page, ``GET /api/v1/runs/{id}``, ``kernelindex show`` and the MCP ``show_run`` tool
give it: the record, its rank, evidence and citation, plus measured correctness (per case for a
suite), per-tensor workload rows, the comparison profile, lifecycle notes and the source's terms."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from kernelindex.ranking.cohort import REASON_TEXT, RankedGroup
from kernelindex.ranking.direction import direction_phrase
from kernelindex.ranking.reads import ranked_group
from kernelindex.records.canonical import metric_key
from kernelindex.records.citation import bibtex, citation_for
from kernelindex.store.reads import runs
from kernelindex.store.reads.run_extras import case_runs_of_suite
from kernelindex.store.reads.run_facts import facts_of_run
from kernelindex.store.reads.runs import RunRecords, records_of
from kernelindex.store.reads.stacks import stack_label
from kernelindex.views.common import group_url, interval_dict, native_scores, source_native_display
from kernelindex.views.evidence import evidence_panel
from kernelindex.views.formatting import format_date, format_value, safe_url, short_digest

if TYPE_CHECKING:
    from sqlalchemy import Connection

STALE_DAYS = 365


def _links(items: Sequence[dict] | None) -> list[dict[str, str | None]]:
    return [{"url": (ref or {}).get("url"), "href": safe_url((ref or {}).get("url"))} for ref in items or []]


def _authors(metadata: dict | None) -> list[str]:
    return [a.get("name") or a.get("github") or "" for a in (metadata or {}).get("authors") or []]


def _measured(correctness: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(correctness, dict) or not correctness:
        return None
    return {
        "comparator": correctness.get("comparator"),
        "maxAbsoluteError": correctness.get("maximumAbsoluteError"),
        "maxRelativeError": correctness.get("maximumRelativeError"),
        "matchedRatio": correctness.get("matchedRatio"),
    }


def _tensors(wl_spec: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [
        {
            "name": name,
            "kind": "tensor",
            "dtype": t.get("dtype"),
            "shape": t.get("shape"),
            "strides": t.get("strides"),
            "alignmentBytes": t.get("alignmentBytes"),
        }
        for name, t in sorted((wl_spec.get("tensors") or {}).items())
        if isinstance(t, dict)
    ]
    rows += [
        {"name": name, "kind": "scalar", "dtype": s.get("dtype"), "shape": [], "strides": None, "value": s.get("value")}
        for name, s in sorted((wl_spec.get("scalars") or {}).items())
        if isinstance(s, dict)
    ]
    return rows


def _age_days(observed: str | None, today: date) -> int | None:
    try:
        return (today - date.fromisoformat((observed or "")[:10])).days
    except ValueError:
        return None


def run_extras(
    conn: Connection, row, view: dict[str, Any], today: date, records: RunRecords | None = None
) -> dict[str, Any]:
    """The extras of ``view`` (``records``: the run's :func:`records_of`, when read already)."""
    records = records or records_of(conn, row)
    spec = ((row.manifest or {}).get("run") or {}).get("spec") or {}
    measured = _measured(spec.get("correctness"))
    cases = []
    wl = records.workload
    if wl is not None and wl.kind == "WorkloadSuite" and wl.operation_id:
        seen = set()
        for case in case_runs_of_suite(conn, row, wl.operation_id):
            if case.workload_id in seen:
                continue
            seen.add(case.workload_id)
            cases.append(
                {
                    "runId": case.id,
                    "workloadId": case.workload_id,
                    "case": case.name or case.shape_summary,
                    "status": case.status,
                    "display": format_value(case.primary_value, case.primary_unit),
                    "measured": _measured(case.correctness),
                }
            )
    wl_spec = ((wl.manifest if wl is not None else None) or {}).get("spec") or {}
    open_requests = [c for c in view["evidenceDetail"]["corrections"] if c["status"] == "open"]
    newest = max([view["observedAt"] or ""] + [r["observedAt"] or "" for r in view["replications"]])
    age = _age_days(newest, today)
    lifecycle = []
    if age is not None and age > STALE_DAYS:
        lifecycle.append(
            {
                "kind": "stale",
                "text": f"stale: not re-observed for {age} days "
                f"(more than {STALE_DAYS}); the software may have moved on",
            }
        )
    if open_requests:
        lifecycle.append(
            {
                "kind": "disputed",
                "text": f"disputed: {len(open_requests)} open correction "
                f"request{'' if len(open_requests) == 1 else 's'}",
            }
        )
    ident = view["identity"]
    source = records.source
    policy = (source.policy if source is not None else None) or {}
    return {
        "measuredCorrectness": {"run": measured, "cases": cases} if measured or cases else None,
        "tensors": _tensors(wl_spec),
        "comparisonProfile": [
            {"part": "operation", "label": (ident["operation"] or {}).get("name"), "digest": row.operation_digest},
            {"part": "workload", "label": ident["workload"]["title"], "digest": row.workload_digest},
            {"part": "protocol", "label": view["protocol"]["title"], "digest": row.protocol_key},
            {"part": "environment", "label": view["environment"]["title"], "digest": row.environment_key},
            {"part": "correctness", "label": None, "digest": row.correctness_key},
            {"part": "metric", "label": view["primary"]["direction"], "digest": view["primary"]["key"]},
        ],
        "lifecycle": lifecycle,
        "sourceTerms": {
            "name": ident["source"]["name"],  # the source's name, else the slug the run names
            "url": policy.get("url"),
            "href": safe_url(policy.get("url")),
            "licence": policy.get("license"),
            "attribution": policy.get("attribution"),
        }
        if source is not None or ident["source"]["slug"]
        else None,
    }


def full_run_view(conn: Connection, row, base_url: str, today: date) -> dict[str, Any]:
    """A run as its page, ``GET /api/v1/runs/{id}`` and ``kernelindex show --json`` give it: the
    run view with these extras, from this one function."""
    records = records_of(conn, row)  # read once for both
    view = run_view(conn, row, base_url, today, records)
    view.update(run_extras(conn, row, view, today, records))
    return view


def rank_summary(group: RankedGroup | None, run_id: str, unit: str | None, workload_id: str | None) -> dict[str, Any]:
    if group is None:
        return {
            "rank": None,
            "groupSize": 0,
            "excluded": ["pending_workload"],
            "excludedText": ["its workload record is not in this index yet, so it has no comparison group"],
        }
    entry = group.entry(run_id)
    excl = group.exclusion(run_id)
    leader = group.leader
    return {
        "rank": entry.rank if entry else None,
        "tied": bool(entry and entry.tied),
        "groupSize": group.size,
        "comparisonKey": group.comparison_key,
        "groupUrl": group_url(workload_id, group.comparison_key),
        "direction": group.direction_text,
        "tieRule": group.tie_rule,
        "interval": interval_dict(entry, unit),
        "excluded": list(excl.reasons) if excl else [],
        "excludedText": [REASON_TEXT[r] for r in excl.reasons] if excl else [],
        "leaderRunId": leader.run.run_id if leader else None,
    }


def run_view(
    conn: Connection, row, base_url: str, today: date, records: runs.RunRecords | None = None
) -> dict[str, Any]:
    """The run as its page and JSON show it (``records``: the run's :func:`runs.records_of`, when read already)."""
    manifest = row.manifest or {}
    run_rec = manifest.get("run") or {}
    spec = run_rec.get("spec") or {}
    meta = run_rec.get("metadata") or {}
    protocol_rec = manifest.get("protocol") or {}
    env_rec = manifest.get("environment") or {}
    records = records or runs.records_of(conn, row)
    source, impl, project = records.source, records.implementation, records.project
    workload, operation = records.workload, records.operation
    group = ranked_group(conn, row.comparison_key) if row.comparison_key else None
    rank = rank_summary(group, row.id, row.primary_unit, row.workload_id)
    native = spec.get("sourceNative") or {}
    impl_meta = (impl.manifest or {}).get("metadata", {}) if impl is not None else {}
    impl_spec = (impl.manifest or {}).get("spec", {}) if impl is not None else {}
    wl_manifest = workload.manifest if workload is not None else {}
    wl_spec = (wl_manifest or {}).get("spec") or {}
    wl_correctness = wl_spec.get("correctness")
    proto_spec = protocol_rec.get("spec") or {}
    env_spec = env_rec.get("spec") or {}

    measurement_rows = [
        {
            "metric": m.metric,
            "statistic": m.statistic,
            "unit": m.unit,
            "value": m.value,
            "display": format_value(m.value, m.unit),
            "sampleCount": m.sample_count,
        }
        for m in runs.measurements_of(conn, row.id)
    ]

    artifact_rows = []
    stated_uris = {
        ref.get("digest"): ref.get("uri") for ref in (spec.get("evidence") or {}).values() if isinstance(ref, dict)
    }
    for link in runs.artifacts_of(conn, row.id):
        uri = link.uri or stated_uris.get(link.content_digest)
        artifact_rows.append(
            {
                "role": link.role,
                "digest": link.content_digest,
                "kind": link.kind,
                "mediaType": link.media_type,
                "sizeBytes": link.size_bytes,
                "uri": uri,
                "href": safe_url(uri) or f"/artifacts/{link.content_digest}",
                "license": link.license,
            }
        )
    known = {a["digest"] for a in artifact_rows}
    for role, ref in sorted((spec.get("evidence") or {}).items()):
        if isinstance(ref, dict) and ref.get("digest") not in known:
            artifact_rows.append(
                {
                    "role": role,
                    "digest": ref.get("digest"),
                    "kind": None,
                    "mediaType": None,
                    "sizeBytes": None,
                    "uri": ref.get("uri"),
                    "href": safe_url(ref.get("uri")),
                    "license": None,
                }
            )
    source_art = impl_spec.get("source") or {}
    if source_art.get("contentDigest") and source_art["contentDigest"] not in known:
        art = runs.artifact_by_digest(conn, source_art["contentDigest"])
        artifact_rows.append(
            {
                "role": "implementation source",
                "digest": source_art["contentDigest"],
                "kind": "source",
                "mediaType": art.media_type if art is not None else None,
                "sizeBytes": source_art.get("sizeBytes"),
                "uri": art.uri if art is not None else None,
                "href": (safe_url(art.uri) or f"/artifacts/{art.content_digest}") if art is not None else None,
                "license": art.license if art is not None else None,
            }
        )

    replications = [
        {
            "runId": r.id,
            "status": r.status,
            "observedAt": r.observed_at,
            "display": format_value(r.primary_value, r.primary_unit),
        }
        for r in runs.replications_of(conn, row)
    ]
    notes = []
    if meta.get("description"):
        notes.append(meta["description"])
    for name, value in sorted((meta.get("labels") or {}).items()):
        notes.append(f"label {name}: {value}")
    facts = facts_of_run(conn, row.id)
    if facts.retraction is not None:
        notes.append(f"retracted {facts.retraction.at}: {facts.retraction.reason or 'no reason given'}")

    evidence_detail = evidence_panel(conn, row, base_url, today, facts)  # full stored facts (evidence helper)
    citation = citation_for(run_rec, row.run_digest, base_url, today)
    wl_title = ((wl_manifest or {}).get("metadata") or {}).get("title") or (
        workload.name if workload is not None else None
    )
    leader_id = rank.get("leaderRunId")
    primary_display = format_value(row.primary_value, row.primary_unit)
    return {
        "id": row.id,
        "digest": row.run_digest,
        "title": meta.get("title") or meta.get("name") or short_digest(row.run_digest),
        "status": row.status,
        "observedAt": row.observed_at,
        "observedDate": format_date(row.observed_at),
        "publishedAt": row.published_at,
        "evidence": {"level": evidence_detail["level"], "reasons": evidence_detail["reasons"]},
        "evidenceDetail": evidence_detail,
        "primary": {
            "metric": row.primary_metric,
            "statistic": row.primary_statistic,
            "unit": row.primary_unit,
            "value": row.primary_value,
            "display": primary_display,
            "key": metric_key(row.primary_metric, row.primary_statistic, row.primary_unit),
            "direction": direction_phrase(row.primary_metric, row.primary_unit),
        },
        "rank": rank,
        **native_scores(native.get("metrics")),
        "sourceNative": {
            "source": native.get("source"),
            "benchmark": native.get("benchmark"),
            "externalId": native.get("externalId"),
            "metrics": native.get("metrics") or {},
            "display": source_native_display(native),
        }
        if native
        else None,
        "identity": {
            "implementation": {
                "id": impl.id if impl is not None else None,
                "title": (impl.title if impl is not None else None),
                "digest": row.implementation_digest,
                "authors": _authors(impl_meta),
                "language": impl.language if impl is not None else None,
                "sourceRefs": _links(impl_meta.get("sourceRefs")),
            },
            "project": {
                "name": project.name,
                "slug": project.slug,
                "homepage": safe_url((project.export_row or {}).get("canonicalUrl")),
            }
            if project is not None
            else None,
            "revision": (impl_spec.get("projectRevision") or {}).get("version")
            or (impl.export_row or {}).get("sourceRevision")
            if impl is not None
            else None,
            "workload": {"id": row.workload_id, "title": wl_title, "digest": row.workload_digest},
            "operation": {"slug": operation.slug, "name": operation.name, "digest": operation.semantic_digest}
            if operation is not None
            else None,
            "comparisonKey": row.comparison_key,
            "source": {"slug": source.slug, "name": source.name, "kind": source.kind}
            if source is not None
            else {"slug": row.source_slug, "name": row.source_slug, "kind": None},
            "externalId": native.get("externalId"),
            "runDigest": row.run_digest,
            "protocolDigest": row.protocol_key,
            "environmentDigest": row.environment_key,
        },
        "correctness": {
            "workloadPolicy": wl_correctness,
            "reference": (proto_spec.get("correctness") or {}).get("reference"),
            "comparator": (proto_spec.get("correctness") or {}).get("comparator"),
            "correctnessKey": row.correctness_key,
            "published": bool(wl_correctness and set(wl_correctness) - {"comparator"}),
        },
        "workload": {
            "id": row.workload_id,
            "title": wl_title,
            "kind": workload.kind if workload is not None else None,
            "shapeSummary": workload.shape_summary if workload is not None else None,
            "dtypes": workload.dtypes if workload is not None else None,
            "axes": wl_spec.get("axes"),
            "caseCount": len(wl_spec.get("cases") or []) or None,
            "aggregation": wl_spec.get("aggregation"),
        },
        "measurements": measurement_rows,
        "samples": (spec.get("timing") or {}).get("samples"),
        "protocol": {
            "title": (protocol_rec.get("metadata") or {}).get("title"),
            "harness": proto_spec.get("harness") or {},
            "harnessHref": safe_url((proto_spec.get("harness") or {}).get("repository")),
            "measurement": proto_spec.get("measurement") or {},
            "correctness": proto_spec.get("correctness") or {},
            "comparability": proto_spec.get("comparability") or {},
        },
        "environment": {
            "title": (env_rec.get("metadata") or {}).get("title"),
            "hardware": env_spec.get("hardware") or {},
            "software": env_spec.get("software") or {},
            "stack": stack_label(env_spec.get("software")),
            "settings": env_spec.get("settings"),
            "imageDigest": env_spec.get("imageDigest"),
        },
        "artifacts": artifact_rows,
        "replications": replications,
        "notes": notes,
        "supersededBy": facts.superseded_by,
        "supersedes": row.supersedes_id,
        "manifest": manifest,
        "citation": {
            "permalink": citation.permalink,
            "digest": row.run_digest,
            "accessed": today.isoformat(),
            "bibtex": bibtex(citation),
            "text": f"{citation.title}. {citation.publisher}, {citation.permalink} "
            f"(digest {row.run_digest}), accessed {today.isoformat()}.",
        },
        "links": {
            "self": f"/runs/{row.id}",
            "json": f"/api/v1/runs/{row.id}",
            "workload": f"/workloads/{row.workload_id}" if row.workload_id else None,
            "compareWithLeader": f"/compare?a={row.id}&b={leader_id}" if leader_id and leader_id != row.id else None,
        },
    }
