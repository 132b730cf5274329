"""Reads behind every page and API route, returned as plain JSON-ready dicts (view models).

Pages render these dicts; the JSON API returns them as they are, so a page and its JSON never
disagree. Ranks come from :mod:`kernelindex.ranking` only.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy import Connection, exists, func, or_, select
from sqlalchemy.sql import ColumnElement

from kernelindex.ranking.cohort import REASON_TEXT, RankedEntry, RankedGroup
from kernelindex.ranking.direction import direction_phrase
from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.web.evidence_view import evidence_panel
from kernelindex.ranking.reads import ranked_group, ranked_groups, workload_groups
from kernelindex.records.canonical import metric_key
from kernelindex.records.citation import bibtex, citation_for
from kernelindex.store.reads.run_filters import run_conditions
from kernelindex.store.tables import (
    artifacts,
    environments,
    implementations,
    measurements,
    operation_aliases,
    operations,
    projects,
    protocols,
    record_events,
    run_artifacts,
    runs,
    sources,
    workloads,
)
from kernelindex.web.formatting import (
    format_date,
    format_sol,
    format_speedup,
    format_value,
    safe_url,
    short_digest,
)

GROUP_ROWS_SHOWN = 50


def manifest_title(column) -> ColumnElement:
    return column["metadata"]["title"].as_string()


# ---------------------------------------------------------------- small shared pieces


def evidence_levels(conn: Connection, digests: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Evidence level and reasons of many runs at once, from the one evidence function."""
    found = evidence_for_runs(conn, [d for d in digests if d])
    return {d: {"level": e.level, "reasons": list(e.reasons)} for d, e in found.items()}


def interval_dict(entry: RankedEntry | None, unit: str | None) -> dict[str, Any] | None:
    if not entry or not entry.interval:
        return None
    data = entry.interval.as_dict()
    data["display"] = f"{format_value(data['low'], unit)} – {format_value(data['high'], unit)}"
    return data


def source_native_display(native: dict[str, Any] | None) -> list[dict[str, str]]:
    """The source's own figures as the source states them (SOL score, speedup, cases faster)."""
    if not native:
        return []
    m = native.get("metrics") or {}
    out = []
    if "sol_score" in m:
        out.append({"label": "SOL score", "text": format_sol(m["sol_score"])})
    if "avg_speedup" in m:
        out.append({"label": "Speedup over the reference", "text": format_speedup(m["avg_speedup"])})
    if "fast_1_count" in m and "fast_1_total" in m:
        out.append({"label": "Cases faster than the baseline",
                    "text": f"{m['fast_1_count']}/{m['fast_1_total']} cases faster"})
    if "latency_ms" in m:
        out.append({"label": "Reported latency", "text": format_value(m["latency_ms"], "ms")})
    known = {"sol_score", "avg_speedup", "fast_1_count", "fast_1_total", "latency_ms"}
    for name, value in sorted(m.items()):
        if name not in known:
            unit = "s" if name.endswith("_s") else None
            out.append({"label": name, "text": format_value(value, unit) if isinstance(value, (int, float)) else str(value)})
    return out


def _links(items: Sequence[dict] | None) -> list[dict[str, str | None]]:
    return [{"url": (ref or {}).get("url"), "href": safe_url((ref or {}).get("url"))} for ref in items or []]


def _authors(metadata: dict | None) -> list[str]:
    return [a.get("name") or a.get("github") or "" for a in (metadata or {}).get("authors") or []]


# ---------------------------------------------------------------- runs


def find_run(conn: Connection, ident: str):
    """A run by id or by run digest (``sha256:…``)."""
    column = runs.c.run_digest if ident.startswith("sha256:") else runs.c.id
    return conn.execute(select(runs).where(column == ident)).first()


def group_url(workload_id: str | None, key: str | None) -> str | None:
    if not key:
        return None
    anchor = "g-" + key.removeprefix("sha256:")[:16]
    return f"/workloads/{workload_id}#{anchor}" if workload_id else f"/rankings/{key}"


def rank_summary(group: RankedGroup | None, run_id: str, unit: str | None, workload_id: str | None) -> dict[str, Any]:
    if group is None:
        return {"rank": None, "groupSize": 0, "excluded": ["pending_workload"],
                "excludedText": ["its workload record is not in this index yet, so it has no comparison group"]}
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


def run_view(conn: Connection, row, base_url: str, today: date) -> dict[str, Any]:
    manifest = row.manifest or {}
    run_rec = manifest.get("run") or {}
    spec = run_rec.get("spec") or {}
    meta = run_rec.get("metadata") or {}
    protocol_rec = manifest.get("protocol") or {}
    env_rec = manifest.get("environment") or {}
    source = conn.execute(select(sources).where(sources.c.id == row.source_id)).first() if row.source_id else None
    impl = (conn.execute(select(implementations).where(implementations.c.id == row.implementation_id)).first()
            if row.implementation_id else None)
    project = (conn.execute(select(projects).where(projects.c.id == impl.project_id)).first()
               if impl is not None and impl.project_id else None)
    workload = (conn.execute(select(workloads).where(workloads.c.id == row.workload_id)).first()
                if row.workload_id else None)
    operation = (conn.execute(select(operations).where(operations.c.id == workload.operation_id)).first()
                 if workload is not None and workload.operation_id else None)
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
        {"metric": m.metric, "statistic": m.statistic, "unit": m.unit, "value": m.value,
         "display": format_value(m.value, m.unit), "sampleCount": m.sample_count}
        for m in conn.execute(select(measurements).where(measurements.c.run_id == row.id).order_by(measurements.c.seq))
    ]

    artifact_rows = []
    stated_uris = {ref.get("digest"): ref.get("uri") for ref in (spec.get("evidence") or {}).values()
                   if isinstance(ref, dict)}
    for link in conn.execute(
        select(run_artifacts.c.role, artifacts.c.content_digest, artifacts.c.kind, artifacts.c.media_type,
               artifacts.c.size_bytes, artifacts.c.uri, artifacts.c.license)
        .join(artifacts, artifacts.c.id == run_artifacts.c.artifact_id)
        .where(run_artifacts.c.run_id == row.id).order_by(run_artifacts.c.seq)
    ):
        uri = link.uri or stated_uris.get(link.content_digest)
        artifact_rows.append({"role": link.role, "digest": link.content_digest, "kind": link.kind,
                              "mediaType": link.media_type, "sizeBytes": link.size_bytes, "uri": uri,
                              "href": safe_url(uri), "license": link.license})
    known = {a["digest"] for a in artifact_rows}
    for role, ref in sorted((spec.get("evidence") or {}).items()):
        if isinstance(ref, dict) and ref.get("digest") not in known:
            artifact_rows.append({"role": role, "digest": ref.get("digest"), "kind": None, "mediaType": None,
                                  "sizeBytes": None, "uri": ref.get("uri"), "href": safe_url(ref.get("uri")),
                                  "license": None})
    source_art = impl_spec.get("source") or {}
    if source_art.get("contentDigest") and source_art["contentDigest"] not in known:
        art = conn.execute(select(artifacts).where(artifacts.c.content_digest == source_art["contentDigest"])).first()
        artifact_rows.append({"role": "implementation source", "digest": source_art["contentDigest"],
                              "kind": "source", "mediaType": art.media_type if art is not None else None,
                              "sizeBytes": source_art.get("sizeBytes"), "uri": art.uri if art is not None else None,
                              "href": safe_url(art.uri) if art is not None else None,
                              "license": art.license if art is not None else None})

    replications = []
    if row.implementation_digest and row.comparison_key:
        for r in conn.execute(
            select(runs.c.id, runs.c.status, runs.c.primary_value, runs.c.primary_unit, runs.c.observed_at)
            .where(runs.c.implementation_digest == row.implementation_digest,
                   runs.c.comparison_key == row.comparison_key, runs.c.id != row.id)
            .order_by(runs.c.observed_at)
        ):
            replications.append({"runId": r.id, "status": r.status, "observedAt": r.observed_at,
                                 "display": format_value(r.primary_value, r.primary_unit)})
    notes = []
    if meta.get("description"):
        notes.append(meta["description"])
    for name, value in sorted((meta.get("labels") or {}).items()):
        notes.append(f"label {name}: {value}")
    if row.retracted_at:
        notes.append(f"retracted {row.retracted_at}: {row.retraction_reason or 'no reason given'}")
    for event in conn.execute(select(record_events.c.at, record_events.c.reason).where(
            record_events.c.run_id == row.id, record_events.c.cause == "retracted")):
        notes.append(f"retracted {event.at}: {event.reason or 'no reason given'}")
    superseded_by = conn.execute(select(runs.c.id).where(runs.c.supersedes_id == row.id)).first()

    evidence_detail = evidence_panel(conn, row, base_url, today)  # full stored facts (evidence helper)
    citation = citation_for(run_rec, row.run_digest, base_url, today)
    wl_title = ((wl_manifest or {}).get("metadata") or {}).get("title") or (workload.name if workload is not None else None)
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
        "primary": {"metric": row.primary_metric, "statistic": row.primary_statistic, "unit": row.primary_unit,
                    "value": row.primary_value, "display": primary_display,
                    "key": metric_key(row.primary_metric, row.primary_statistic, row.primary_unit),
                    "direction": direction_phrase(row.primary_metric, row.primary_unit)},
        "rank": rank,
        "sourceNative": {"source": native.get("source"), "benchmark": native.get("benchmark"),
                         "externalId": native.get("externalId"), "metrics": native.get("metrics") or {},
                         "display": source_native_display(native)} if native else None,
        "identity": {
            "implementation": {"id": impl.id if impl is not None else None,
                               "title": (impl.title if impl is not None else None),
                               "digest": row.implementation_digest,
                               "authors": _authors(impl_meta),
                               "language": impl.language if impl is not None else None,
                               "sourceRefs": _links(impl_meta.get("sourceRefs"))},
            "project": {"name": project.name, "slug": project.slug,
                        "homepage": safe_url((project.export_row or {}).get("canonicalUrl"))} if project is not None else None,
            "revision": (impl_spec.get("projectRevision") or {}).get("version")
            or (impl.export_row or {}).get("sourceRevision") if impl is not None else None,
            "workload": {"id": row.workload_id, "title": wl_title, "digest": row.workload_digest},
            "operation": {"slug": operation.slug, "name": operation.name,
                          "digest": operation.semantic_digest} if operation is not None else None,
            "comparisonKey": row.comparison_key,
            "source": {"slug": source.slug, "name": source.name, "kind": source.kind} if source is not None
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
        "workload": {"id": row.workload_id, "title": wl_title, "kind": workload.kind if workload is not None else None,
                     "shapeSummary": workload.shape_summary if workload is not None else None,
                     "dtypes": workload.dtypes if workload is not None else None,
                     "axes": wl_spec.get("axes"), "caseCount": len(wl_spec.get("cases") or []) or None,
                     "aggregation": wl_spec.get("aggregation")},
        "measurements": measurement_rows,
        "samples": (spec.get("timing") or {}).get("samples"),
        "protocol": {"title": (protocol_rec.get("metadata") or {}).get("title"),
                     "harness": proto_spec.get("harness") or {},
                     "harnessHref": safe_url((proto_spec.get("harness") or {}).get("repository")),
                     "measurement": proto_spec.get("measurement") or {},
                     "correctness": proto_spec.get("correctness") or {},
                     "comparability": proto_spec.get("comparability") or {}},
        "environment": {"title": (env_rec.get("metadata") or {}).get("title"),
                        "hardware": env_spec.get("hardware") or {}, "software": env_spec.get("software") or {},
                        "settings": env_spec.get("settings"), "imageDigest": env_spec.get("imageDigest")},
        "artifacts": artifact_rows,
        "replications": replications,
        "notes": notes,
        "supersededBy": superseded_by.id if superseded_by else None,
        "supersedes": row.supersedes_id,
        "manifest": manifest,
        "citation": {"permalink": citation.permalink, "digest": row.run_digest,
                     "accessed": today.isoformat(), "bibtex": bibtex(citation),
                     "text": f"{citation.title}. {citation.publisher}, {citation.permalink} "
                             f"(digest {row.run_digest}), accessed {today.isoformat()}."},
        "links": {
            "self": f"/runs/{row.id}",
            "json": f"/api/v1/runs/{row.id}",
            "workload": f"/workloads/{row.workload_id}" if row.workload_id else None,
            "compareWithLeader": f"/compare?a={row.id}&b={leader_id}" if leader_id and leader_id != row.id else None,
        },
    }


# ---------------------------------------------------------------- groups and workloads


def _run_briefs(conn: Connection, where: ColumnElement) -> dict[str, Any]:
    """Per-run facts a leaderboard row shows, keyed by run id."""
    query = (
        select(runs.c.id, runs.c.run_digest, runs.c.comparison_key, runs.c.workload_id, runs.c.protocol_key,
               runs.c.environment_key,
               implementations.c.title.label("impl_title"), manifest_title(runs.c.manifest["run"]).label("run_title"))
        .outerjoin(implementations, implementations.c.id == runs.c.implementation_id)
        .where(where)
    )
    return {r.id: r for r in conn.execute(query)}


def _labels(conn: Connection, briefs) -> dict[str, dict[str, Any]]:
    """Protocol and environment of each group, read off any of its shown runs (the key holds both)."""
    pairs = {b.comparison_key: (b.protocol_key, b.environment_key) for b in briefs}
    proto = {r.protocol_digest: r for r in conn.execute(
        select(protocols.c.protocol_digest, protocols.c.name, protocols.c.family,
               manifest_title(protocols.c.manifest).label("title"))
        .where(protocols.c.protocol_digest.in_({p for p, _ in pairs.values()})))}
    env = {r.environment_digest: r for r in conn.execute(
        select(environments.c.environment_digest, environments.c.name, environments.c.hardware_model,
               manifest_title(environments.c.manifest).label("title"))
        .where(environments.c.environment_digest.in_({e for _, e in pairs.values()})))}
    out = {}
    for key, (pkey, ekey) in pairs.items():
        p, e = proto.get(pkey), env.get(ekey)
        out[key] = {
            "protocol": {"digest": pkey, "title": (p.title or p.name) if p else None,
                         "family": p.family if p else None},
            "environment": {"digest": ekey, "title": (e.title or e.name) if e else None,
                            "hardware": e.hardware_model if e else None},
        }
    return out


def _history(conn: Connection, keys: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in keys}
    query = (select(record_events).where(record_events.c.comparison_key.in_(keys))
             .order_by(record_events.c.at, record_events.c.seq))
    for e in conn.execute(query):
        out.setdefault(e.comparison_key, []).append(
            {"runId": e.run_id, "previousRunId": e.previous_run_id, "cause": e.cause, "at": e.at,
             "policyVersion": e.policy_version})
    return out


def _row_title(brief) -> str:
    return brief.run_title or brief.impl_title or short_digest(brief.run_digest)


def group_view(group: RankedGroup, briefs: dict[str, Any], label: dict[str, Any] | None,
               history: list[dict[str, Any]], evidence: dict[str, dict[str, Any]],
               limit: int | None = GROUP_ROWS_SHOWN) -> dict[str, Any]:
    entries = group.entries if limit is None else group.entries[:limit]
    rows = []
    for e in entries:
        b = briefs.get(e.run.run_id)
        rows.append({
            "rank": e.rank, "tied": e.tied, "runId": e.run.run_id, "digest": e.run.digest,
            "title": _row_title(b) if b is not None else e.run.run_id,
            "value": e.run.value, "display": format_value(e.run.value, group.unit),
            "interval": interval_dict(e, group.unit),
            "evidence": evidence.get(e.run.digest),
            "observedAt": e.run.observed_at, "date": format_date(e.run.observed_at),
        })
    workload_id = next((b.workload_id for b in briefs.values() if b.comparison_key == group.comparison_key), None)
    return {
        "comparisonKey": group.comparison_key,
        "anchor": "g-" + group.comparison_key.removeprefix("sha256:")[:16],
        "url": group_url(workload_id, group.comparison_key),
        "metric": group.metric, "statistic": group.statistic, "unit": group.unit,
        "metricKey": metric_key(group.metric, group.statistic, group.unit),
        "direction": group.direction_text, "tieRule": group.tie_rule,
        "protocol": (label or {}).get("protocol"), "environment": (label or {}).get("environment"),
        "size": group.size, "rows": rows, "rowsShown": len(rows),
        "excluded": [
            {"runId": x.run.run_id,
             "title": _row_title(briefs[x.run.run_id]) if x.run.run_id in briefs else x.run.run_id,
             "reasons": list(x.reasons), "reasonText": [REASON_TEXT[r] for r in x.reasons]}
            for x in group.excluded
        ],
        "history": history,
    }


def groups_view(conn: Connection, groups: dict[str, RankedGroup],
                limit: int | None = GROUP_ROWS_SHOWN) -> list[dict[str, Any]]:
    """Ranked groups as shown: the best ``limit`` rows of each (and every exclusion)."""
    if not groups:
        return []
    shown = [e.run.run_id for g in groups.values() for e in (g.entries if limit is None else g.entries[:limit])]
    shown += [x.run.run_id for g in groups.values() for x in g.excluded]
    briefs = _run_briefs(conn, runs.c.id.in_(shown))
    evidence = evidence_levels(conn, [b.run_digest for b in briefs.values()])
    labels = _labels(conn, briefs.values())
    history = _history(conn, list(groups))
    views = [group_view(g, briefs, labels.get(k), history.get(k, []), evidence, limit) for k, g in groups.items()]
    views.sort(key=lambda v: (-v["size"], v["comparisonKey"]))
    return views


def find_workload(conn: Connection, ident: str):
    column = workloads.c.workload_digest if ident.startswith("sha256:") else workloads.c.id
    return conn.execute(select(workloads).where(column == ident)).first()


def operation_names(conn: Connection, operation_id: str) -> set[str]:
    op = conn.execute(select(operations.c.name).where(operations.c.id == operation_id)).first()
    names = {a for (a,) in conn.execute(select(operation_aliases.c.alias).where(operation_aliases.c.operation_id == operation_id))}
    if op is not None and op.name:
        names.add(op.name)
    return names


def related_operation_ids(conn: Connection, operation_id: str) -> list[str]:
    """Other operations that share a name or alias with this one (e.g. our own problem packs)."""
    names = operation_names(conn, operation_id)
    if not names:
        return []
    by_alias = select(operation_aliases.c.operation_id).where(operation_aliases.c.alias.in_(names))
    query = select(operations.c.id).where(
        or_(operations.c.name.in_(names), operations.c.id.in_(by_alias)), operations.c.id != operation_id)
    return sorted({r[0] for r in conn.execute(query)})


def workload_view(conn: Connection, row, limit: int | None = GROUP_ROWS_SHOWN) -> dict[str, Any]:
    """The workload's own groups; :mod:`kernelindex.web.same_problem` adds the other evidence."""
    manifest = row.manifest or {}
    spec = manifest.get("spec") or {}
    operation = (conn.execute(select(operations).where(operations.c.id == row.operation_id)).first()
                 if row.operation_id else None)
    groups = groups_view(conn, workload_groups(conn, row.id), limit)
    return {
        "id": row.id,
        "digest": row.workload_digest,
        "kind": row.kind,
        "title": (manifest.get("metadata") or {}).get("title") or row.name or row.id,
        "shapeSummary": row.shape_summary,
        "dtypes": row.dtypes,
        "correctness": spec.get("correctness"),
        "axes": spec.get("axes"),
        "caseCount": len(spec.get("cases") or []) or None,
        "aggregation": spec.get("aggregation"),
        "operation": {"slug": operation.slug, "name": operation.name, "family": operation.family}
        if operation is not None else None,
        "groups": groups,
        "runCount": sum(g["size"] + len(g["excluded"]) for g in groups),
        "manifest": manifest,
        "links": {"self": f"/workloads/{row.id}", "json": f"/api/v1/workloads/{row.id}"},
    }


def ranking_view(conn: Connection, key: str, limit: int | None = None) -> dict[str, Any] | None:
    """One comparison group, fully listed (the API's /rankings/{key} and ``kernelindex rank``)."""
    views = groups_view(conn, ranked_groups(conn, [key]), limit)
    return views[0] if views else None


# ---------------------------------------------------------------- compare

KEY_PARTS = ("operation", "workload", "protocol", "environment", "correctness", "metric")
TIME_UNITS_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


def _key_parts(row) -> dict[str, str | None]:
    return {
        "operation": row.operation_digest,
        "workload": row.workload_digest,
        "protocol": row.protocol_key,
        "environment": row.environment_key,
        "correctness": row.correctness_key,
        "metric": metric_key(row.primary_metric, row.primary_statistic, row.primary_unit),
    }


def compare_view(conn: Connection, a_row, b_row, base_url: str, today: date) -> dict[str, Any]:
    a, b = run_view(conn, a_row, base_url, today), run_view(conn, b_row, base_url, today)
    pa, pb = _key_parts(a_row), _key_parts(b_row)
    differs = [name for name in KEY_PARTS if pa[name] != pb[name]]
    comparable = bool(a_row.comparison_key) and a_row.comparison_key == b_row.comparison_key
    ratio = statement = None
    va, vb, ua, ub = a_row.primary_value, b_row.primary_value, a_row.primary_unit, b_row.primary_unit
    if va and vb:
        if ua == ub:
            ratio = va / vb
        elif ua in TIME_UNITS_NS and ub in TIME_UNITS_NS:
            ratio = (va * TIME_UNITS_NS[ua]) / (vb * TIME_UNITS_NS[ub])
    if ratio is not None:
        lower_better = a["primary"]["direction"].startswith("lower")
        a_better = ratio < 1 if lower_better else ratio > 1
        factor = (1 / ratio if lower_better else ratio) if a_better else (ratio if lower_better else 1 / ratio)
        if ratio == 1:
            statement = "A and B have the same value"
        else:
            statement = f"{'A' if a_better else 'B'} is {factor:.3f}× better than {'B' if a_better else 'A'} ({a['primary']['direction']})"
    return {
        "a": a,
        "b": b,
        "comparable": comparable,
        "differingParts": differs,
        "keyParts": {name: {"a": pa[name], "b": pb[name], "same": pa[name] == pb[name]} for name in KEY_PARTS},
        "ratio": ratio,
        "ratioDefinition": "value(A) / value(B)",
        "statement": statement,
        "links": {"self": f"/compare?a={a_row.id}&b={b_row.id}",
                  "json": f"/api/v1/compare?a={a_row.id}&b={b_row.id}"},
    }


# ---------------------------------------------------------------- listings, operations, sources, search


def run_list_item(r) -> dict[str, Any]:
    return {"id": r.id, "digest": r.run_digest, "status": r.status, "observedAt": r.observed_at,
            "title": r.run_title, "workloadId": r.workload_id, "comparisonKey": r.comparison_key,
            "source": r.source_slug, "hardware": r.hardware_model, "operation": r.operation_slug,
            "primary": {"metric": r.primary_metric, "statistic": r.primary_statistic, "unit": r.primary_unit,
                        "value": r.primary_value, "display": format_value(r.primary_value, r.primary_unit)},
            "links": {"self": f"/runs/{r.id}", "json": f"/api/v1/runs/{r.id}"}}


RUN_LIST_COLUMNS = (runs.c.seq, runs.c.id, runs.c.run_digest, runs.c.status, runs.c.observed_at,
                    runs.c.workload_id, runs.c.comparison_key, runs.c.source_slug, runs.c.hardware_model,
                    runs.c.primary_metric, runs.c.primary_statistic, runs.c.primary_unit, runs.c.primary_value,
                    manifest_title(runs.c.manifest["run"]).label("run_title"),
                    select(operations.c.slug).where(operations.c.semantic_digest == runs.c.operation_digest)
                    .order_by(operations.c.seq).limit(1).scalar_subquery().label("operation_slug"))


def list_runs(conn: Connection, after: int | None, limit: int, filters: dict[str, str]) -> tuple[list, int | None]:
    """Runs in arrival order matching ``filters`` (see :data:`~kernelindex.store.reads.run_filters.RUN_FILTERS`)."""
    query = select(*RUN_LIST_COLUMNS).where(*run_conditions(filters))
    items, last = _page(conn, query, runs.c.seq, after, limit, run_list_item)
    return _with_evidence(conn, items), last


def latest_runs(conn: Connection, n: int = 10) -> list[dict[str, Any]]:
    rows = conn.execute(select(*RUN_LIST_COLUMNS).order_by(runs.c.seq.desc()).limit(n))
    return _with_evidence(conn, [run_list_item(r) for r in rows])


def _with_evidence(conn: Connection, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each listed run's evidence level, from one bulk call to the evidence function."""
    levels = evidence_levels(conn, [item["digest"] for item in items])
    for item in items:
        item["evidence"] = levels.get(item["digest"])
    return items


def _page(conn, query, seq_column, after, limit, item):
    if after is not None:
        query = query.where(seq_column > after)
    rows = conn.execute(query.order_by(seq_column).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return [item(r) for r in rows], (rows[-1].seq if more and rows else None)


def _count_by(conn: Connection, column, where) -> dict[str, int]:
    return dict(conn.execute(select(column, func.count()).where(where).group_by(column)).all())


def operation_item(r, counts: dict[str, int] | None = None) -> dict[str, Any]:
    return {"slug": r.slug, "name": r.name, "family": r.family, "digest": r.semantic_digest,
            "tags": r.tags or [], "workloadCount": (counts or {}).get(r.id),
            "links": {"self": f"/operations/{r.slug}", "json": f"/api/v1/operations/{r.slug}"}}


OPERATION_COLUMNS = (operations.c.seq, operations.c.id, operations.c.slug, operations.c.name, operations.c.family,
                     operations.c.semantic_digest, operations.c.tags)


def search_operations(conn: Connection, q: str, after: int | None, limit: int) -> tuple[list, int | None]:
    """Operations whose name, slug, alias or family match ``q``, or that have runs from a matching
    source or on matching hardware (case-insensitive substring)."""
    query = select(*OPERATION_COLUMNS)
    if q:
        escaped = q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        like = f"%{escaped}%"
        alias_ops = select(operation_aliases.c.operation_id).where(func.lower(operation_aliases.c.alias).like(like, escape="\\"))
        # Hardware and sources are matched in their own small tables first; then each workload
        # needs just one run under a matching environment or source (EXISTS stops at the first).
        envs = list(conn.scalars(select(environments.c.environment_digest).where(or_(
            func.lower(environments.c.hardware_model).like(like, escape="\\"),
            func.lower(environments.c.hardware_architecture).like(like, escape="\\"),
            func.lower(environments.c.hardware_vendor).like(like, escape="\\")))))
        srcs = list(conn.scalars(select(sources.c.id).where(or_(
            func.lower(sources.c.slug).like(like, escape="\\"), func.lower(sources.c.name).like(like, escape="\\")))))
        matches = [operations.c.id.in_(alias_ops)]
        if envs or srcs:
            has_run = exists().where(runs.c.workload_id == workloads.c.id,
                                     or_(runs.c.environment_key.in_(envs), runs.c.source_id.in_(srcs)))
            matches.append(operations.c.id.in_(select(workloads.c.operation_id).where(has_run)))
        query = query.where(or_(
            func.lower(operations.c.name).like(like, escape="\\"), func.lower(operations.c.slug).like(like, escape="\\"),
            func.lower(operations.c.family).like(like, escape="\\"), *matches))
    items, nxt = _page(conn, query, operations.c.seq, after, limit, lambda r: r)
    counts = _count_by(conn, workloads.c.operation_id, workloads.c.operation_id.in_([r.id for r in items]))
    return [operation_item(r, counts) for r in items], nxt


def find_operation(conn: Connection, slug: str):
    column = operations.c.semantic_digest if slug.startswith("sha256:") else operations.c.slug
    return conn.execute(select(operations).where(column == slug).order_by(operations.c.seq)).first()


def operation_view(conn: Connection, row) -> dict[str, Any]:
    manifest = row.manifest or {}
    aliases = sorted(a for (a,) in conn.execute(
        select(operation_aliases.c.alias).where(operation_aliases.c.operation_id == row.id)))
    run_counts = _count_by(conn, runs.c.workload_id,
                           runs.c.workload_id.in_(select(workloads.c.id).where(workloads.c.operation_id == row.id)))
    wl = [
        {"id": w.id, "title": w.title or w.name or w.id, "kind": w.kind, "shapeSummary": w.shape_summary,
         "runCount": run_counts.get(w.id, 0), "links": {"self": f"/workloads/{w.id}"}}
        for w in conn.execute(
            select(workloads.c.id, workloads.c.name, workloads.c.kind, workloads.c.shape_summary,
                   manifest_title(workloads.c.manifest).label("title"))
            .where(workloads.c.operation_id == row.id).order_by(workloads.c.seq))
    ]
    wl.sort(key=lambda w: -w["runCount"])
    related = [operation_item(r) for r in conn.execute(
        select(*OPERATION_COLUMNS).where(operations.c.id.in_(related_operation_ids(conn, row.id))))]
    return {
        **operation_item(row),
        "title": (manifest.get("metadata") or {}).get("title"),
        "description": (manifest.get("metadata") or {}).get("description"),
        "aliases": aliases,
        "workloads": wl,
        "related": related,
        "manifest": manifest,
    }


def list_workloads(conn: Connection, after: int | None, limit: int, operation: str | None) -> tuple[list, int | None]:
    query = select(workloads.c.seq, workloads.c.id, workloads.c.workload_digest, workloads.c.kind,
                   workloads.c.shape_summary, manifest_title(workloads.c.manifest).label("title"), operations.c.slug) \
        .outerjoin(operations, operations.c.id == workloads.c.operation_id)
    if operation:
        query = query.where(operations.c.slug == operation)
    return _page(conn, query, workloads.c.seq, after, limit, lambda w: {
        "id": w.id, "digest": w.workload_digest, "kind": w.kind, "title": w.title, "shapeSummary": w.shape_summary,
        "operation": w.slug, "links": {"self": f"/workloads/{w.id}", "json": f"/api/v1/workloads/{w.id}"}})


def list_operations(conn: Connection, after: int | None, limit: int, family: str | None) -> tuple[list, int | None]:
    query = select(*OPERATION_COLUMNS)
    if family:
        query = query.where(operations.c.family == family)
    items, nxt = _page(conn, query, operations.c.seq, after, limit, lambda r: r)
    counts = _count_by(conn, workloads.c.operation_id, workloads.c.operation_id.in_([r.id for r in items]))
    return [operation_item(r, counts) for r in items], nxt


def source_item(r, counts: dict[str, int]) -> dict[str, Any]:
    policy = r.policy or {}
    return {"slug": r.slug, "name": r.name, "kind": r.kind, "runCount": counts.get(r.id, 0),
            "policy": {**policy, "href": safe_url(policy.get("url"))} if policy else None,
            "links": {"self": f"/sources/{r.slug}", "json": f"/api/v1/sources/{r.slug}"}}


def list_sources(conn: Connection) -> list[dict[str, Any]]:
    counts = _count_by(conn, runs.c.source_id, runs.c.source_id.isnot(None))
    return [source_item(r, counts) for r in conn.execute(select(sources).order_by(sources.c.seq))]


def source_view(conn: Connection, slug: str) -> dict[str, Any] | None:
    row = conn.execute(select(sources).where(sources.c.slug == slug)).first()
    if row is None:
        return None
    counts = _count_by(conn, runs.c.source_id, runs.c.source_id == row.id)
    ops = conn.execute(
        select(operations.c.slug, operations.c.name, func.count(runs.c.id).label("n"))
        .join(workloads, workloads.c.operation_id == operations.c.id)
        .join(runs, runs.c.workload_id == workloads.c.id)
        .where(runs.c.source_id == row.id)
        .group_by(operations.c.slug, operations.c.name)
        .order_by(func.count(runs.c.id).desc(), operations.c.slug)
    ).all()
    return {**source_item(row, counts),
            "operations": [{"slug": o.slug, "name": o.name, "runCount": o.n,
                            "links": {"self": f"/operations/{o.slug}"}} for o in ops]}
