"""The JSON bodies the write routes take and the answers they give, as models: the OpenAPI
document describes each body with these, and each route takes exactly their fields.

The routes still read a body with the strict reader (web/http/input_guards.json_object: depth bound,
a key given twice refused, invisible text refused) and check each field where it is used; these
models say what is accepted, they are not a second parser.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AttestationBody(_Body):
    """``POST /api/v1/runs/{run_id}/attestations`` (API key with ``attest``)."""

    spec: dict[str, Any] = Field(description="the attestation's spec: claim, attester, observedAt, measured, ...")
    metadata: dict[str, Any] | None = None
    signature: dict[str, Any] | None = Field(None, description="a detached Ed25519 envelope over the record")
    publicKey: str | None = Field(None, description="the signer's public key (PEM or base64)")


class CorrectionBody(_Body):
    """``POST /api/v1/runs/{run_id}/corrections`` (API key with ``report``)."""

    problem: str = Field(description="what is wrong with the run")
    details: str
    requestedAction: str = Field(description="what the reporter asks for, e.g. retract")


class RerunRequestBody(_Body):
    """``POST /api/v1/rerun-requests`` (API key with ``submit``)."""

    solution: dict[str, Any] = Field(description="a solution.json object with its sources inline")
    problem: str | dict[str, Any] | None = Field(None, description="a built-in problem's name, or its files")
    hardware: str = "cpu"
    replicas: int = Field(1, ge=1)
    protocol: dict[str, Any] = Field(default_factory=dict)


class AttestationCreated(BaseModel):
    digest: str
    run: str
    permalink: str
    links: dict[str, str]


class CorrectionCreated(BaseModel):
    id: str
    run: str
    status: str


class RerunQueued(BaseModel):
    id: str
    state: str
    links: dict[str, str]


def fields_of(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


def request_body(model: type[BaseModel]) -> dict[str, Any]:
    """A route's ``openapi_extra``: its body is ``model``, as JSON (web/openapi.py adds the schema)."""
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}
