"""View models behind every page and API route: stored facts turned into plain JSON-ready dicts.

Pages render these dicts; the JSON API returns them as they are, so a page and its JSON never
disagree. Every read comes from :mod:`kernelindex.store.reads`; ranks from :mod:`kernelindex.ranking`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from kernelindex.ranking.cohort import REASON_TEXT, RankedEntry, RankedGroup
from kernelindex.ranking.direction import direction_phrase
from kernelindex.ranking.evidence_facts import evidence_for_runs
from kernelindex.ranking.reads import ranked_group, ranked_groups, workload_groups
from kernelindex.records.canonical import metric_key
from kernelindex.records.citation import bibtex, citation_for
from kernelindex.records.families import shown_family
from kernelindex.store.reads import catalog, groups, refresh, runs
from kernelindex.store.reads.run_facts import facts_of_run
from kernelindex.store.reads.stacks import stack_label, stacks_of_runs
from kernelindex.web.evidence_view import evidence_panel
from kernelindex.web.formatting import (
    SOL_METRIC,
    SPEEDUP_METRICS,
    format_date,
    format_sol,
    format_speedup,
    format_value,
    safe_url,
    short_digest,
)

if TYPE_CHECKING:
    from sqlalchemy import Connection

GROUP_ROWS_SHOWN = 50


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
    """The source's own figures as the source states them (SOL score, speedup, cases faster); each
    names the ``metric`` it shows, so a reader that already shows :func:`native_scores` can skip those."""
    if not native:
        return []
    m = native.get("metrics") or {}
    out = []
    if SOL_METRIC in m:
        out.append({"label": "SOL score", "text": format_sol(m[SOL_METRIC]), "metric": SOL_METRIC})
    if "avg_speedup" in m:
        out.append(
            {"label": "Speedup over the reference", "text": format_speedup(m["avg_speedup"]), "metric": "avg_speedup"}
        )
    if "fast_1_count" in m and "fast_1_total" in m:
        out.append(
            {
                "label": "Cases faster than the baseline",
                "text": f"{m['fast_1_count']}/{m['fast_1_total']} cases faster",
                "metric": "fast_1_count",
            }
        )
    if "latency_ms" in m:
        out.append({"label": "Reported latency", "text": format_value(m["latency_ms"], "ms"), "metric": "latency_ms"})
    known = {SOL_METRIC, "avg_speedup", "fast_1_count", "fast_1_total", "latency_ms"}
    for name, value in sorted(m.items()):
        if name not in known:
            unit = "s" if name.endswith("_s") else None
            text = format_value(value, unit) if isinstance(value, (int, float)) else str(value)
            out.append({"label": name, "text": text, "metric": name})
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


def _links(items: Sequence[dict] | None) -> list[dict[str, str | None]]:
    return [{"url": (ref or {}).get("url"), "href": safe_url((ref or {}).get("url"))} for ref in items or []]


def _authors(metadata: dict | None) -> list[str]:
    return [a.get("name") or a.get("github") or "" for a in (metadata or {}).get("authors") or []]


# ---------------------------------------------------------------- runs


def group_url(workload_id: str | None, key: str | None) -> str | None:
    if not key:
        return None
    anchor = "g-" + key.removeprefix("sha256:")[:16]
    return f"/workloads/{workload_id}#{anchor}" if workload_id else f"/rankings/{key}"


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


# ---------------------------------------------------------------- groups and workloads


def _labels(conn: Connection, briefs) -> dict[str, dict[str, Any]]:
    """Protocol and environment of each group, read off any of its shown runs (the key holds both)."""
    pairs = {b.comparison_key: (b.protocol_key, b.environment_key) for b in briefs}
    proto = groups.protocol_labels(conn, {p for p, _ in pairs.values()})
    env = groups.environment_labels(conn, {e for _, e in pairs.values()})
    out = {}
    for key, (pkey, ekey) in pairs.items():
        p, e = proto.get(pkey), env.get(ekey)
        out[key] = {
            "protocol": {
                "digest": pkey,
                "title": (p.title or p.name) if p else None,
                "family": p.family if p else None,
            },
            "environment": {
                "digest": ekey,
                "title": (e.title or e.name) if e else None,
                "hardware": e.hardware_model if e else None,
            },
        }
    return out


def _row_title(brief) -> str:
    return brief.run_title or brief.impl_title or short_digest(brief.run_digest)


def group_view(
    group: RankedGroup,
    briefs: dict[str, Any],
    label: dict[str, Any] | None,
    history: list[dict[str, Any]],
    evidence: dict[str, dict[str, Any]],
    limit: int | None = GROUP_ROWS_SHOWN,
) -> dict[str, Any]:
    entries = group.entries if limit is None else group.entries[:limit]
    rows = []
    for e in entries:
        b = briefs.get(e.run.run_id)
        rows.append(
            {
                "rank": e.rank,
                "tied": e.tied,
                "runId": e.run.run_id,
                "digest": e.run.digest,
                "title": _row_title(b) if b is not None else e.run.run_id,
                "value": e.run.value,
                "display": format_value(e.run.value, group.unit),
                "interval": interval_dict(e, group.unit),
                "evidence": evidence.get(e.run.digest),
                "observedAt": e.run.observed_at,
                "date": format_date(e.run.observed_at),
                **native_scores(b.native_metrics if b is not None else None),
            }
        )
    workload_id = next((b.workload_id for b in briefs.values() if b.comparison_key == group.comparison_key), None)
    return {
        "comparisonKey": group.comparison_key,
        "anchor": "g-" + group.comparison_key.removeprefix("sha256:")[:16],
        "url": group_url(workload_id, group.comparison_key),
        "metric": group.metric,
        "statistic": group.statistic,
        "unit": group.unit,
        "metricKey": metric_key(group.metric, group.statistic, group.unit),
        "direction": group.direction_text,
        "tieRule": group.tie_rule,
        "protocol": (label or {}).get("protocol"),
        "environment": (label or {}).get("environment"),
        "size": group.size,
        "rows": rows,
        "rowsShown": len(rows),
        "excluded": [
            {
                "runId": x.run.run_id,
                "title": _row_title(briefs[x.run.run_id]) if x.run.run_id in briefs else x.run.run_id,
                "reasons": list(x.reasons),
                "reasonText": [REASON_TEXT[r] for r in x.reasons],
            }
            for x in group.excluded
        ],
        "history": history,
    }


def groups_view(
    conn: Connection, ranked: dict[str, RankedGroup], limit: int | None = GROUP_ROWS_SHOWN
) -> list[dict[str, Any]]:
    """Ranked groups as shown: the best ``limit`` rows of each (and every exclusion)."""
    if not ranked:
        return []
    shown = [e.run.run_id for g in ranked.values() for e in (g.entries if limit is None else g.entries[:limit])]
    shown += [x.run.run_id for g in ranked.values() for x in g.excluded]
    briefs = groups.run_briefs(conn, shown)
    evidence = evidence_levels(conn, [b.run_digest for b in briefs.values()])
    labels = _labels(conn, briefs.values())
    history = groups.group_history(conn, list(ranked))
    views = [group_view(g, briefs, labels.get(k), history.get(k, []), evidence, limit) for k, g in ranked.items()]
    views.sort(key=lambda v: (-v["size"], v["comparisonKey"]))
    return views


def workload_view(conn: Connection, row, limit: int | None = GROUP_ROWS_SHOWN) -> dict[str, Any]:
    """The workload's own groups; :mod:`kernelindex.web.same_problem` adds the other evidence."""
    manifest = row.manifest or {}
    spec = manifest.get("spec") or {}
    operation = catalog.operation_by_id(conn, row.operation_id)
    shown = groups_view(conn, workload_groups(conn, row.id), limit)
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
        if operation is not None
        else None,
        "groups": shown,
        "runCount": sum(g["size"] + len(g["excluded"]) for g in shown),
        "manifest": manifest,
        "links": {"self": f"/workloads/{row.id}", "json": f"/api/v1/workloads/{row.id}"},
    }


def ranking_view(conn: Connection, key: str, limit: int | None = None) -> dict[str, Any] | None:
    """One comparison group, fully listed (the API's /rankings/{key} and ``kernelindex rank``)."""
    views = groups_view(conn, ranked_groups(conn, [key]), limit)
    return views[0] if views else None


# ---------------------------------------------------------------- listings, operations, sources, search


RUN_FILTERS = ("operation", "workload", "comparisonKey", "status", "source", "hardware")
"""operation: id, slug, name, alias or digest prefix; workload: id, name or digest prefix; comparisonKey and
status: exact; source: slug; hardware: model substring, architecture or vendor."""


def run_list_item(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": r["id"],
        "digest": r["run_digest"],
        "status": r["status"],
        "observedAt": r["observed_at"],
        "title": r["run_title"],
        "workloadId": r["workload_id"],
        "comparisonKey": r["comparison_key"],
        "source": r["source_slug"],
        "hardware": r["hardware_model"],
        "operation": r.get("operation"),
        "primary": {
            "metric": r["primary_metric"],
            "statistic": r["primary_statistic"],
            "unit": r["primary_unit"],
            "value": r["primary_value"],
            "display": format_value(r["primary_value"], r["primary_unit"]),
        },
        "links": {"self": f"/runs/{r['id']}", "json": f"/api/v1/runs/{r['id']}"},
    }


def list_runs(conn: Connection, after: int | None, limit: int, filters: dict[str, str]) -> tuple[list, int | None]:
    """Runs in arrival order matching ``filters`` (:data:`RUN_FILTERS`, read as :class:`runs.RunFilter` reads them)."""
    names = {
        "operation": "operation",
        "workload": "workload",
        "comparisonKey": "comparison_key",
        "status": "status",
        "source": "source",
        "hardware": "hardware",
    }
    wanted = runs.RunFilter(**{names[k]: v for k, v in filters.items()}, limit=limit)
    rows, last = runs.list_runs(conn, wanted, after)
    return _with_facts(conn, [run_list_item(r) for r in rows]), last


def latest_runs(conn: Connection, n: int = 10) -> list[dict[str, Any]]:
    return _with_facts(conn, [run_list_item(r) for r in runs.latest_runs(conn, n)])


def _with_facts(conn: Connection, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each listed run's evidence level and software stack (a listing says when it mixes stacks),
    from one bulk call each."""
    levels = evidence_levels(conn, [item["digest"] for item in items])
    stacks = stacks_of_runs(conn, [item["id"] for item in items])
    for item in items:
        item["evidence"] = levels.get(item["digest"])
        item["stack"] = stacks.get(item["id"])
    return items


def operation_item(r, counts: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "slug": r.slug,
        "name": r.name,
        "family": shown_family(r.family, r.slug, r.tags),
        "statedFamily": r.family,
        "digest": r.semantic_digest,
        "tags": r.tags or [],
        "workloadCount": (counts or {}).get(r.id),
        "links": {"self": f"/operations/{r.slug}", "json": f"/api/v1/operations/{r.slug}"},
    }


def operation_view(conn: Connection, row) -> dict[str, Any]:
    manifest = row.manifest or {}
    aliases = catalog.aliases_of(conn, row.id)
    wl = [
        {
            "id": w.id,
            "title": w.title or w.name or w.id,
            "kind": w.kind,
            "shapeSummary": w.shape_summary,
            "runCount": count,
            "links": {"self": f"/workloads/{w.id}"},
        }
        for w, count in catalog.workloads_of(conn, row.id)
    ]
    wl.sort(key=lambda w: -w["runCount"])
    related = [operation_item(r) for r in catalog.operations_by_id(conn, catalog.related_operation_ids(conn, row.id))]
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
    rows, nxt = catalog.list_workloads(conn, after, limit, operation)
    return [
        {
            "id": w.id,
            "digest": w.workload_digest,
            "kind": w.kind,
            "title": w.title,
            "shapeSummary": w.shape_summary,
            "operation": w.slug,
            "links": {"self": f"/workloads/{w.id}", "json": f"/api/v1/workloads/{w.id}"},
        }
        for w in rows
    ], nxt


def list_operations(conn: Connection, after: int | None, limit: int, family: str | None) -> tuple[list, int | None]:
    rows, nxt = catalog.list_operations(conn, after, limit, family)
    counts = catalog.workload_counts(conn, [r.id for r in rows])
    return [operation_item(r, counts) for r in rows], nxt


def source_item(r, counts: dict[str, int], refreshed: dict[str, str] | None = None) -> dict[str, Any]:
    policy = r.policy or {}
    return {
        "slug": r.slug,
        "name": r.name,
        "kind": r.kind,
        "runCount": counts.get(r.id, 0),
        "lastRefreshedAt": (refreshed or {}).get(r.slug),
        "policy": {**policy, "href": safe_url(policy.get("url"))} if policy else None,
        "links": {"self": f"/sources/{r.slug}", "json": f"/api/v1/sources/{r.slug}"},
    }


def list_sources(conn: Connection) -> list[dict[str, Any]]:
    counts, refreshed = catalog.run_counts_by_source(conn), refresh.last_refreshed(conn)
    return [source_item(r, counts, refreshed) for r in catalog.list_sources(conn)]


def source_view(conn: Connection, slug: str) -> dict[str, Any] | None:
    row = catalog.source_by_slug(conn, slug)
    if row is None:
        return None
    counts = catalog.run_counts_by_source(conn, row.id)
    ops = catalog.operations_of_source(conn, row.id)
    return {
        **source_item(row, counts, refresh.last_refreshed(conn)),
        "operations": [
            {"slug": o.slug, "name": o.name, "runCount": o.n, "links": {"self": f"/operations/{o.slug}"}} for o in ops
        ],
    }
