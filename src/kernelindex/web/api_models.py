"""Typed response models of the JSON API's entity, ledger, compare and index routes.

They give the OpenAPI document (and so /docs/api and a typed client) real field names and types.
Views build plain dicts; FastAPI validates them against these models on the way out.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LedgerRun(Model):
    id: str
    digest: str | None
    permalink: str | None = Field(description="a URL that names the run by digest, forever")


class LedgerEntry(Model):
    id: str = Field(description="stable: the same change always has the same id (use it to drop repeats)")
    kind: str = Field(description="new_run, new_leader, correction, retraction or correction_request")
    kindTitle: str
    at: str = Field(description="UTC ISO 8601 time of the change")
    title: str
    summary: str
    operation: dict[str, str | None] | None
    run: LedgerRun | None
    detail: dict[str, Any]
    links: dict[str, str | None]


class LedgerPage(Model):
    items: list[LedgerEntry]
    since: str | None = Field(description="the normalised UTC floor applied (inclusive), or null")
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: dict[str, str | None]


class ApiIndex(Model):
    name: str
    version: str
    docs: str
    openapi: str
    collections: dict[str, str]
    entities: dict[str, str]
    feeds: dict[str, str]
