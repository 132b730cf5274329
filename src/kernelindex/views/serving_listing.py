"""The serving listings: ``GET /api/v1/serving-runs``, ``GET /api/v1/serving-configurations`` and the
``/serving`` page, keyset-paged in arrival order like the run listing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import Field

from kernelindex.records.refusal import RefusalKind, ViewRefusal
from kernelindex.records.vocabulary import ServingStatus
from kernelindex.store.reads import serving_listing as reads
from kernelindex.store.reads.lookup import check_filter, resolve_model
from kernelindex.views.common import NextLink, ViewModel
from kernelindex.views.serving import ServingBrief, run_brief

if TYPE_CHECKING:
    from sqlalchemy import Connection

SERVING_RUN_FILTERS = ("model", "gpu", "scenario", "status", "source", "configuration")
CONFIGURATION_FILTERS = ("stack", "model")
MAX_FILTER = 200


class ListedServingRun(ServingBrief):
    model: str | None = Field(description="the model's name")
    modelSlug: str | None
    configurationId: str | None


class ServingRunListing(ViewModel):
    items: list[ListedServingRun]
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: NextLink


class ConfigurationLinks(ViewModel):
    runs: str = Field(description="the serving runs of this configuration (JSON)")


class ListedConfiguration(ViewModel):
    id: str
    digest: str
    summary: str | None
    dtype: str | None
    quantization: str | None
    tensorParallel: int | None
    stack: str | None
    stackVersion: str | None
    stackDigest: str | None
    project: str | None
    runs: int
    models: list[str] = Field(description="slugs of the models its runs serve")
    gpus: list[str]
    links: ConfigurationLinks


class ConfigurationListing(ViewModel):
    items: list[ListedConfiguration]
    next: str | None = Field(description="opaque cursor of the next page (expires), or null")
    links: NextLink


@dataclass(frozen=True)
class ServingFilters:
    model: str | None = None
    gpu: str | None = None
    scenario: str | None = None
    status: str | None = None
    source: str | None = None
    configuration: str | None = None
    stack: str | None = None


# filter -> the kind of stored record it names (one naming none is a 404); the rest are free-form words
_NAMED_FILTERS = {"model": "model", "source": "source", "configuration": "serving configuration"}


def _checked(conn: Connection, filters: ServingFilters) -> None:
    for name, value in vars(filters).items():
        if value is not None and len(value) > MAX_FILTER:
            raise ViewRefusal(
                RefusalKind.BAD_REQUEST,
                "bad-parameter",
                f"{name} is longer than {MAX_FILTER} characters",
                parameter=name,
            )
    if filters.status and filters.status not in {s.value for s in ServingStatus}:
        known = ", ".join(s.value for s in ServingStatus)
        raise ViewRefusal(
            RefusalKind.BAD_REQUEST,
            "bad-parameter",
            f"status {filters.status!r} is not one of {known}",
            parameter="status",
        )
    for name, what in _NAMED_FILTERS.items():
        value = getattr(filters, name)
        if value:
            check_filter(conn, what, value)


def list_serving_runs(
    conn: Connection, after: int | None, limit: int, filters: ServingFilters, base_url: str = ""
) -> tuple[list[ListedServingRun], int | None]:
    """A page of serving runs and the sequence number the next page starts after (None at the end)."""
    _checked(conn, filters)
    model_id = resolve_model(conn, filters.model).id if filters.model else None
    rows, last = reads.serving_runs_page(
        conn,
        after,
        limit,
        model_id=model_id,
        gpu=filters.gpu,
        scenario=filters.scenario,
        status=filters.status,
        source=filters.source,
        configuration_id=filters.configuration,
    )
    items = [
        ListedServingRun(
            **run_brief(row, base_url).model_dump(),
            model=row.get("model_name"),
            modelSlug=row.get("model_slug"),
            configurationId=row.get("configuration_id"),
        )
        for row in rows
    ]
    return items, last


def list_configurations(
    conn: Connection, after: int | None, limit: int, filters: ServingFilters
) -> tuple[list[ListedConfiguration], int | None]:
    """A page of serving configurations with their stacks and what their runs serve."""
    _checked(conn, filters)
    model_id = resolve_model(conn, filters.model).id if filters.model else None
    rows, last = reads.configurations_page(conn, after, limit, stack=filters.stack, model_id=model_id)
    items = [
        ListedConfiguration(
            id=r["id"],
            digest=r["configuration_digest"],
            summary=r["summary"],
            dtype=r["dtype"],
            quantization=r["quantization"],
            tensorParallel=r["tensor_parallel"],
            stack=r["stack_name"],
            stackVersion=r["stack_version"],
            stackDigest=r["stack_digest"],
            project=r["project_name"],
            runs=r["runs"],
            models=r["models"],
            gpus=r["gpus"],
            links=ConfigurationLinks(runs=f"/api/v1/serving-runs?configuration={r['id']}"),
        )
        for r in rows
    ]
    return items, last
