"""The OpenAPI document, finished: what FastAPI infers from the routes, plus what it cannot see.

FastAPI documents a 422 ``HTTPValidationError`` as JSON on every route; this API answers every
error as an RFC 9457 problem (``application/problem+json``, web/problems.py), parameter errors as
400. Here each operation gets the problems it can answer, the write routes their request bodies
(web/http/bodies.py) and security (an API key as a bearer token; runners sign each request), and the
export files their media types, so a generated client or a fuzzer reads the API as it is.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from kernelindex.records.request_signing import KEY_HEADER, SIGNATURE_HEADER, TIME_HEADER
from kernelindex.web.http import bodies
from kernelindex.web.problems import PROBLEM_MEDIA_TYPE

WRITE_SCOPES = {
    ("post", "/api/v1/runs/{run_id}/attestations"): "attest",
    ("post", "/api/v1/runs/{run_id}/corrections"): "report",
    ("post", "/api/v1/rerun-requests"): "submit",
}
RUNNER_PREFIX = "/api/v1/runner/"
FILE_TYPES = {"/api/v1/exports/catalog.jsonl.zst": "application/zstd", "/api/v1/runner/blobs/{digest}": None}
BODY_MODELS = (bodies.AttestationBody, bodies.CorrectionBody, bodies.RerunRequestBody)


class Problem(BaseModel):
    """An RFC 9457 problem document; ``type`` is a page (``/problems/<slug>``) saying what it means."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="/problems/<slug>: a page that explains this kind of problem")
    title: str
    status: int
    detail: str = Field(description="what went wrong, and where, in this request")
    instance: str = Field(description="the path that was asked for")


def _problem(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(ref_template="#/components/schemas/{model}")


def refine(doc: dict[str, Any]) -> dict[str, Any]:
    components = doc.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["Problem"] = _schema(Problem)
    for model in BODY_MODELS:
        schemas[model.__name__] = _schema(model)
    components["securitySchemes"] = {
        "apiKey": {
            "type": "http",
            "scheme": "bearer",
            "description": "an API key (`kernelindex keys api-key`) holding the scope the operation names",
        },
        "runnerSignature": {
            "type": "apiKey",
            "in": "header",
            "name": SIGNATURE_HEADER,
            "description": f"a registered runner's Ed25519 signature over the request, with {KEY_HEADER} "
            f"and {TIME_HEADER}",
        },
    }
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            responses["400"] = _problem("a parameter is malformed, out of bounds or unknown")
            if "{" in path:
                responses["404"] = _problem("nothing by that identifier")
            if "requestBody" in op:
                responses["413"] = _problem("the body is too large")
                responses["415"] = _problem("the body is not application/json")
                responses["422"] = _problem("the body is well-formed JSON but refused for what it says")
            if (method, path) in WRITE_SCOPES:
                op["security"] = [{"apiKey": []}]
                responses["401"] = _problem("no API key, or not a valid one (checked before the body is read)")
                responses["403"] = _problem(f"the API key lacks the `{WRITE_SCOPES[method, path]}` scope")
                responses["429"] = _problem("the API key reached its daily limit")
            elif path.startswith(RUNNER_PREFIX):
                op["security"] = [{"runnerSignature": []}]
                responses["401"] = _problem("the request is not signed by a registered runner")
            if path in FILE_TYPES or path.endswith(".jsonl.zst"):
                ok = responses.get("200", {})
                media = FILE_TYPES.get(path, "application/zstd") or "application/octet-stream"
                ok["content"] = {media: {"schema": {"type": "string", "format": "binary"}}}
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return doc


def install(app: FastAPI) -> None:
    """Serve the refined document at the app's ``openapi_url`` (built once, on first use)."""
    inferred = app.openapi

    def openapi() -> dict[str, Any]:
        doc = inferred()
        if "Problem" not in doc.get("components", {}).get("schemas", {}):
            refine(doc)
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
