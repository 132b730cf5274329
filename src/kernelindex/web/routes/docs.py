"""What a newcomer or a crawler reads first: /docs, the API reference (rendered on the server from
the OpenAPI document), the API's index at /api/v1/, llms.txt, sitemap.xml, robots.txt, favicon."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from pydantic import BaseModel, ConfigDict

from kernelindex import __version__
from kernelindex.store.reads import entities
from kernelindex.store.reads.ledger import hardware_models
from kernelindex.store.reads.site_map import sitemap_slugs
from kernelindex.web.http.deps import base_url, connection
from kernelindex.web.problem_types import PROBLEM_TYPES
from kernelindex.web.problems import Problem, check_known_params

pages = APIRouter(include_in_schema=False)
api = APIRouter(prefix="/api/v1", tags=["index"])
SITEMAP_MAX = 50_000
METHODS = ("get", "post", "put", "patch", "delete")


def render(request: Request, template: str, **context: Any) -> HTMLResponse:
    return request.app.state.templates.TemplateResponse(request, template, context)


class ApiIndex(BaseModel):
    """``GET /api/v1/``: where every collection, entity and feed of this API lives."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: str
    docs: str
    openapi: str
    collections: dict[str, str]
    entities: dict[str, str]
    feeds: dict[str, str]


@api.get("/", response_model=ApiIndex, summary="Where every collection of this API lives")
def api_index(request: Request) -> dict[str, Any]:
    check_known_params(request, set())
    return {
        "name": "kernelindex",
        "version": __version__,
        "docs": "/docs/api",
        "openapi": "/api/v1/openapi.json",
        "collections": {
            "runs": "/api/v1/runs",
            "workloads": "/api/v1/workloads",
            "operations": "/api/v1/operations",
            "sources": "/api/v1/sources",
            "gpus": "/api/v1/gpus",
            "records": "/api/v1/records",
            "search": "/api/v1/search",
            "origins": "/api/v1/origins",
            "models": "/api/v1/models",
        },
        "entities": {
            "run": "/api/v1/runs/{id}",
            "workload": "/api/v1/workloads/{id}",
            "operation": "/api/v1/operations/{slug}",
            "source": "/api/v1/sources/{slug}",
            "implementation": "/api/v1/implementations/{slug}",
            "project": "/api/v1/projects/{slug}",
            "gpu": "/api/v1/gpus/{slug}",
            "ranking": "/api/v1/rankings/{comparisonKey}",
            "compare": "/api/v1/compare?run={id}&run={id}",
            "evidence": "/api/v1/runs/{id}/evidence",
            "model": "/api/v1/models/{ident}",
            "servingRun": "/api/v1/serving-runs/{id}",
            "servingResolver": "/api/v1/resolve/serving?model={model}&gpu={gpu}",
            "permalink": "/r/{digest}",
        },
        "feeds": {"records": "/records/feed.xml", "badge": "/badges/implementations/{slug}.svg"},
    }


@pages.get("/docs", response_class=HTMLResponse)
def docs_page(request: Request):
    check_known_params(request, set())
    return render(request, "docs.html")


def _schema_ref(schema: dict[str, Any] | None) -> str | None:
    if not schema:
        return None
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if schema.get("type") == "array" and schema.get("items"):
        inner = _schema_ref(schema["items"])
        return f"list of {inner}" if inner else "array"
    return schema.get("type") or ("one of several types" if "anyOf" in schema else None)


def _type_text(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type_text(s) for s in schema["anyOf"])
    return _schema_ref(schema) or "any"


def api_reference(openapi: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document reshaped for a page: operations by tag, and each model's fields."""
    ops = []
    for path, item in openapi.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if not op:
                continue
            ok: dict[str, Any] = next((r for code, r in op.get("responses", {}).items() if code.startswith("2")), {})
            schema = ((ok.get("content") or {}).get("application/json") or {}).get("schema")
            ops.append(
                {
                    "method": method.upper(),
                    "path": path,
                    "summary": op.get("summary") or "",
                    "description": op.get("description") or "",
                    "tag": (op.get("tags") or ["api"])[0],
                    "anchor": f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", "").strip("-"),
                    "parameters": [
                        {
                            "name": p["name"],
                            "in": p["in"],
                            "required": p.get("required", False),
                            "type": _type_text(p.get("schema") or {}),
                            "description": p.get("description") or (p.get("schema") or {}).get("description") or "",
                        }
                        for p in op.get("parameters", [])
                    ],
                    "returns": _schema_ref(schema),
                }
            )
    models = []
    for name, schema in sorted(openapi.get("components", {}).get("schemas", {}).items()):
        fields = [
            {
                "name": f,
                "type": _type_text(s),
                "required": f in schema.get("required", []),
                "description": s.get("description") or "",
            }
            for f, s in (schema.get("properties") or {}).items()
        ]
        models.append({"name": name, "description": schema.get("description") or "", "fields": fields})
    return {
        "operations": ops,
        "models": models,
        "title": openapi.get("info", {}).get("title"),
        "version": openapi.get("info", {}).get("version"),
    }


@pages.get("/problems", response_class=HTMLResponse)
def problem_types_page(request: Request):
    check_known_params(request, set())
    return render(request, "problem_types.html", one=None, types=sorted(PROBLEM_TYPES.items()))


@pages.get("/problems/{slug}", response_class=HTMLResponse)
def problem_type_page(request: Request, slug: str):
    """What a problem document's ``type`` names: one short page per type."""
    check_known_params(request, set())
    text = PROBLEM_TYPES.get(slug)
    if text is None:
        raise Problem(404, "not-found", f"no problem type {slug!r}; /problems lists them", resource="problem type")
    return render(request, "problem_types.html", one={"slug": slug, "text": text}, types=[])


@pages.get("/docs/api", response_class=HTMLResponse)
def api_docs_page(request: Request):
    check_known_params(request, set())
    return render(request, "docs_api.html", ref=api_reference(request.app.openapi()))


@pages.get("/robots.txt", response_class=PlainTextResponse)
def robots(request: Request):
    check_known_params(request, set())
    return (
        f"User-agent: *\nAllow: /\nDisallow: /api/\nDisallow: /compare\nDisallow: /records/feed.xml\n"
        f"Sitemap: {base_url(request)}/sitemap.xml\n"
    )


@pages.get("/llms.txt", response_class=PlainTextResponse)
def llms_txt(request: Request):
    check_known_params(request, set())
    return request.app.state.templates.get_template("llms.txt").render(base=base_url(request), version=__version__)


@pages.get("/favicon.ico")
def favicon(request: Request):
    check_known_params(request, set())
    return RedirectResponse("/static/favicon.svg", status_code=308)


@pages.get("/sitemap.xml")
def sitemap(request: Request):
    check_known_params(request, set())
    base = base_url(request)
    paths = ["/", "/docs", "/docs/api", "/records", "/gpus", "/runs", "/models"]
    with connection(request) as conn:
        slugs = sitemap_slugs(conn, SITEMAP_MAX)
        gpus = sorted({f"/gpus/{entities.gpu_slug(m)}" for m in hardware_models(conn)})
    paths += [f"/operations/{s}" for s in slugs["operations"]]
    paths += [f"/sources/{s}" for s in slugs["sources"]] + gpus
    paths += [f"/projects/{s}" for s in slugs["projects"]]
    paths += [f"/implementations/{s}" for s in slugs["implementations"]]
    ns = "http://www.sitemaps.org/schemas/sitemap/0.9"
    root = ET.Element("urlset", xmlns=ns)
    for path in paths[:SITEMAP_MAX]:
        ET.SubElement(ET.SubElement(root, "url"), "loc").text = base + path
    body = b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="utf-8")
    return Response(body, media_type="application/xml")
