"""Views cut down to what an agent needs to answer and cite: every run comes with its digest, its
permalink (``/r/{digest}``, stable forever) and its page."""

from __future__ import annotations

from typing import Any

from kernelindex.views.compare import Compare, ComparedRun
from kernelindex.views.run import GroupRank, Run


def absolute(base: str, path: str | None) -> str | None:
    return f"{base}{path}" if path and path.startswith("/") else path


def permalink(base: str, digest: str) -> str:
    return f"{base}/r/{digest}"


def run_summary(view: Run, base: str) -> dict[str, Any]:
    """A run with its evidence level and why, its rank, value, identity and citation."""
    ident, rank, env = view.identity, view.rank, view.environment
    impl = ident.implementation
    grouped = rank if isinstance(rank, GroupRank) else None
    return {
        "runId": view.id,
        "digest": view.digest,
        "permalink": view.citation.permalink,
        "page": absolute(base, view.links.self),
        "title": view.title,
        "status": view.status,
        "evidence": view.evidence.model_dump(),
        "rank": {
            "rank": rank.rank,
            "tied": grouped.tied if grouped else False,
            "groupSize": rank.groupSize,
            "comparisonKey": grouped.comparisonKey if grouped else None,
            "notRankedBecause": rank.excludedText,
            "group": absolute(base, grouped.groupUrl if grouped else None),
        },
        "primary": view.primary.model_dump(),
        "sourceFigures": [f.model_dump() for f in view.sourceNative.display] if view.sourceNative else [],
        "hardware": env.hardware,
        "environment": {"title": env.title, "digest": ident.environmentDigest},
        "protocol": {"title": view.protocol.title, "digest": ident.protocolDigest},
        "workload": ident.workload.model_dump(),
        "operation": ident.operation.model_dump() if ident.operation else None,
        "implementation": {
            "title": impl.title,
            "digest": impl.digest,
            "authors": impl.authors,
            "language": impl.language,
            "sources": [r.url for r in impl.sourceRefs if r.url],
            "project": ident.project.model_dump() if ident.project else None,
            "revision": ident.revision,
        },
        "source": ident.source.slug,
        "observedAt": view.observedAt,
        "notes": view.notes,
        "citation": view.citation.text,
    }


def group_summary(group: dict[str, Any], base: str, limit: int) -> dict[str, Any]:
    """A ranked comparison group: the best ``limit`` rows, each citable."""
    return {
        "comparisonKey": group["comparisonKey"],
        "page": absolute(base, group["url"]),
        "metric": group["metricKey"],
        "direction": group["direction"],
        "tieRule": group["tieRule"],
        "protocol": group["protocol"],
        "environment": group["environment"],
        "size": group["size"],
        "rows": [
            {
                "rank": r["rank"],
                "tied": r["tied"],
                "runId": r["runId"],
                "digest": r["digest"],
                "permalink": permalink(base, r["digest"]),
                "title": r["title"],
                "value": r["value"],
                "display": r["display"],
                "interval": (r["interval"] or {}).get("display"),
                "evidence": (r["evidence"] or {}).get("level"),
                "observedAt": r["observedAt"],
            }
            for r in group["rows"][:limit]
        ],
        "notRanked": [{"runId": x["runId"], "why": x["reasonText"]} for x in group["excluded"]],
    }


def compare_summary(view: Compare, base: str) -> dict[str, Any]:
    """Two runs side by side; a ratio only when they share a comparison group."""

    def side(v: ComparedRun) -> dict[str, Any]:
        return {
            "runId": v.id,
            "digest": v.digest,
            "permalink": v.permalink,
            "title": v.title,
            "value": v.primary.display,
            "evidence": v.evidence.level,
            "comparisonKey": v.comparisonKey,
        }

    comparable = view.comparable
    return {
        "a": side(view.runs[0]),
        "b": side(view.runs[1]),
        "comparable": comparable,
        "differingParts": view.differingParts,
        "ratio": view.ratio if comparable else None,
        "ratioDefinition": view.ratioDefinition,
        "statement": view.statement
        if comparable
        else "not comparable (different " + ", ".join(view.differingParts) + "): no ratio is meaningful",
        "page": absolute(base, view.links.self),
    }
