"""Typed response models of the JSON API's entity, ledger, compare and index routes.

They give the OpenAPI document (and so /docs/api and a typed client) real field names and types.
Views build plain dicts; FastAPI validates them against these models on the way out.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApiIndex(Model):
    name: str
    version: str
    docs: str
    openapi: str
    collections: dict[str, str]
    entities: dict[str, str]
    feeds: dict[str, str]
