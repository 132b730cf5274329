"""The public site's reader tools (search_catalog, resolve_kernel(s), get_operation, get_implementation,
get_benchmark_evidence, list_records, list_changes, list_runs, list_hardware, list_models,
resolve_serving, get_serving_run, validate_manifest, get_manifest_schema) and ours (explain_evidence,
cite_run, rerun_status).

Each tool returns the view model its page and JSON route return (so its output schema is that
model's), built by the same view function over a local store or read from that route on a server
(:class:`kernelindex.agent.catalog.Catalog`). A module that adds tools exposes ``register(server,
catalog)``; :data:`kernelindex.agent.server.TOOL_SETS` lists them.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from kernelindex.agent.catalog import Catalog, absolute_links, path
from kernelindex.agent.errors import refusals
from kernelindex.search.models import SearchAnswer
from kernelindex.views import changes, manifests, serving_resolve
from kernelindex.views import kernel_resolve as kernels
from kernelindex.views.common import EvidenceLevel
from kernelindex.views.evidence import RunEvidence
from kernelindex.views.gpu import GpuIndex
from kernelindex.views.implementation import Implementation
from kernelindex.views.operation import Operation
from kernelindex.views.queue import RerunRequestDetail
from kernelindex.views.run import Citation
from kernelindex.views.run_listing import RunListing
from kernelindex.views.serving import ModelListing, Resolved, ServingRun

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
Text = Annotated[str, Field(min_length=1, max_length=200)]
OptionalText = Annotated[str | None, Field(max_length=200)]
RunRef = Annotated[
    str,
    Field(min_length=1, max_length=200, description="run id (UUID), run digest (sha256:…) or a unique 8+ hex prefix"),
]
Limit = Annotated[int, Field(ge=1, le=100, description="at most this many items")]
Offset = Annotated[int, Field(ge=0, le=100_000, description="items to skip (a page's nextOffset)")]
Length = Annotated[int | None, Field(ge=1, le=10_000_000)]
Level = Annotated[
    kernels.LevelName | None, Field(description="the weakest evidence level accepted (reported … replicated)")
]


@cache
def _origins() -> Any:
    from kernelindex.views.origins import load_origins

    return load_origins()


def register(server: MCPServer, catalog: Catalog) -> None:
    """Add every tool of this module to ``server``."""
    for group in (_kernel_tools, _entity_tools, _listing_tools, _serving_tools, _record_tools):
        group(server, catalog)


def _kernel_tools(server: MCPServer, catalog: Catalog) -> None:
    """Tools for search and the kernel resolver."""
    base = catalog.base_url

    @server.tool(annotations=READ_ONLY)
    def search_catalog(
        query: Annotated[str, Field(max_length=200, description="e.g. `042 B200 verified`, `moe N=300`, `ac4k`")],
        limit: Annotated[int, Field(ge=1, le=50, description="rows per rank table")] = 10,
    ) -> SearchAnswer:
        """The site's search: rank tables for the workload a query pins, or the nearest measured cases."""
        with refusals():
            found = catalog.reads.search(query, limit)
        return SearchAnswer.model_validate(absolute_links(found.document(), base))

    @server.tool(annotations=READ_ONLY)
    def resolve_kernel(
        operation: Annotated[str, Field(min_length=1, max_length=200, description="operation slug, name or alias")],
        shape: Annotated[
            dict[Annotated[str, Field(min_length=1, max_length=64)], kernels.AxisValue],  # as KernelQuery's
            Field(max_length=kernels.MAX_AXES, description='workload axes, e.g. {"N": 300}'),
        ] = {},  # noqa: B006 - pydantic copies defaults
        dtype: Annotated[str | None, Field(max_length=40, description="e.g. bf16")] = None,
        gpu: Annotated[str | None, Field(max_length=100, description="GPU product or architecture")] = None,
        license: Annotated[str | None, Field(max_length=100, description="text the licence must contain")] = None,
        min_evidence: Level = None,
    ) -> kernels.KernelResolution:
        """The fastest correct implementation of an operation at a shape, dtype and GPU, with its evidence
        level, interval and source; or the nearest measured cases when no measured case matches."""
        ask = kernels.KernelQuery(
            operation=operation,
            shape=shape,
            dtype=dtype,
            gpu=gpu,
            constraints=kernels.Constraints(license=license, minEvidence=min_evidence),
        )
        with refusals():
            return catalog.view(
                kernels.KernelResolution,
                lambda conn, url: kernels.resolve_kernel(conn, ask, url),
                "/resolve/kernel",
                body=ask.model_dump(mode="json"),
            )

    @server.tool(annotations=READ_ONLY)
    def resolve_kernels(
        queries: Annotated[list[kernels.KernelQuery], Field(min_length=1, max_length=kernels.MAX_BATCH)],
    ) -> kernels.KernelBatchAnswer:
        """Up to 20 kernel queries at once; each is answered, or refused with its reason, on its own."""
        batch = kernels.KernelBatch(queries=queries)
        with refusals():
            return catalog.view(
                kernels.KernelBatchAnswer,
                lambda conn, url: kernels.resolve_kernels(conn, batch, url),
                "/resolve/kernel/batch",
                body=batch.model_dump(mode="json"),
            )


def _entity_tools(server: MCPServer, catalog: Catalog) -> None:
    """Tools for operations, implementations and a run's evidence and citation."""

    @server.tool(annotations=READ_ONLY)
    def get_operation(
        operation: Annotated[str, Field(min_length=1, max_length=200, description="slug, name, alias or digest")],
        workload: Annotated[str | None, Field(max_length=200, description="a workload id or digest")] = None,
        group: Annotated[str | None, Field(max_length=200, description="a comparison key of that workload")] = None,
    ) -> Operation:
        """An operation: its cases, the chosen case's comparison groups, the chosen group ranked, the sweep."""
        from kernelindex.store.reads.lookup import resolve_operation
        from kernelindex.views.operation import operation_view

        def build(conn, url):
            return operation_view(conn, resolve_operation(conn, operation), _origins(), workload, group)

        with refusals():
            return catalog.view(Operation, build, path("operations", operation), {"workload": workload, "group": group})

    @server.tool(annotations=READ_ONLY)
    def get_implementation(
        implementation: Annotated[str, Field(min_length=1, max_length=200, description="slug, id or digest")],
    ) -> Implementation:
        """An implementation: install, licence, sources, best run per GPU and the evidence levels reached."""
        from kernelindex.store.reads.lookup import resolve_implementation
        from kernelindex.views.implementation import implementation_view

        with refusals():
            return catalog.view(
                Implementation,
                lambda conn, url: implementation_view(conn, resolve_implementation(conn, implementation)),
                path("implementations", implementation),
            )

    @server.tool(annotations=READ_ONLY)
    def get_benchmark_evidence(run: RunRef) -> RunEvidence:
        """A run's evidence level and why, with its signatures, attestations and reproductions."""
        from kernelindex.store.reads.lookup import resolve_run
        from kernelindex.views.common import today
        from kernelindex.views.evidence import run_evidence

        with refusals():
            return catalog.view(
                RunEvidence,
                lambda conn, url: run_evidence(conn, resolve_run(conn, run), url, today()),
                path("runs", run, "evidence"),
            )

    @server.tool(annotations=READ_ONLY)
    def explain_evidence(run: RunRef) -> EvidenceLevel:
        """Why a run is at its evidence level (reported, reproducible, verified, replicated), reason by reason."""
        with refusals():
            return catalog.reads.run(run).evidence

    @server.tool(annotations=READ_ONLY)
    def cite_run(run: RunRef) -> Citation:
        """How to cite a run: its permanent link by digest, the access date, a sentence and BibTeX."""
        with refusals():
            return catalog.reads.run(run).citation


def _listing_tools(server: MCPServer, catalog: Catalog) -> None:
    """Tools for the ledger, runs and hardware."""
    base = catalog.base_url

    def _ledger(since, operation, gpu, source, kind, offset, limit) -> changes.ChangesPage:
        filters = {"operation": operation, "gpu": gpu, "source": source, "kind": kind}
        with refusals():
            if catalog.local:
                return catalog.view(
                    changes.ChangesPage,
                    lambda conn, url: changes.changes_page(
                        conn, url, since=since, offset=offset, limit=limit, **filters
                    ),
                    "",
                )
            # a server pages its ledger by cursor: follow them past ``offset``
            client = catalog.reads.client  # type: ignore[attr-defined]
            found = list(client.iter_records(since=since, max_items=offset + limit + 1, page_size=100, **filters))
            page = found[offset : offset + limit]
            return changes.ChangesPage.model_validate(
                {
                    "items": absolute_links(page, base),
                    "since": changes.since_text(since),
                    "offset": offset,
                    "nextOffset": offset + limit if len(found) > offset + limit else None,
                }
            )

    @server.tool(annotations=READ_ONLY)
    def list_records(
        since: Annotated[str | None, Field(max_length=40, description="ISO 8601 date or date-time; inclusive")] = None,
        operation: OptionalText = None,
        gpu: Annotated[str | None, Field(max_length=100, description="GPU slug or name, e.g. nvidia-h200")] = None,
        source: OptionalText = None,
        kind: Annotated[
            str | None,
            Field(max_length=40, description="new_run, new_leader, correction, retraction or correction_request"),
        ] = None,
        offset: Offset = 0,
        limit: Limit = 20,
    ) -> changes.ChangesPage:
        """The records ledger, newest first: new runs, new leaders, corrections, retractions, correction requests."""
        return _ledger(since, operation, gpu, source, kind, offset, limit)

    @server.tool(annotations=READ_ONLY)
    def list_changes(
        since: Annotated[str, Field(min_length=4, max_length=40, description="ISO 8601 date or date-time; inclusive")],
        kind: Annotated[str | None, Field(max_length=40, description="only this kind of change")] = None,
        offset: Offset = 0,
        limit: Limit = 20,
    ) -> changes.ChangesPage:
        """What changed since a moment: every ledger entry at or after ``since``, newest first."""
        return _ledger(since, None, None, None, kind, offset, limit)

    @server.tool(annotations=READ_ONLY)
    def list_runs(
        operation: OptionalText = None,
        workload: OptionalText = None,
        hardware: Annotated[
            str | None, Field(max_length=100, description="GPU model substring, architecture, vendor")
        ] = None,
        status: Annotated[str | None, Field(max_length=50, description="e.g. passed")] = None,
        source: OptionalText = None,
        cursor: Annotated[str | None, Field(max_length=1000, description="a page's `next`")] = None,
        limit: Limit = 20,
    ) -> RunListing:
        """Runs in arrival order, filtered, each with its evidence level, digest and links; paged by `next`."""
        from kernelindex.views import run_listing

        filters = {
            k: v
            for k, v in {
                "operation": operation,
                "workload": workload,
                "status": status,
                "source": source,
                "hardware": hardware,
            }.items()
            if v
        }

        def build(conn, url) -> RunListing:
            after = _local_cursor(cursor)
            items, last, total = run_listing.run_page(conn, after, limit, filters)
            nxt = str(last) if last is not None else None
            return RunListing(items=items, total=total, next=nxt, links={"next": None})

        with refusals():
            return catalog.view(RunListing, build, "/runs", {**filters, "cursor": cursor, "limit": limit})

    @server.tool(annotations=READ_ONLY)
    def list_hardware() -> GpuIndex:
        """GPU products and architectures with runs, and the operations × GPUs coverage grid."""
        from kernelindex.views.gpu import gpus_view

        with refusals():
            return catalog.view(GpuIndex, lambda conn, url: gpus_view(conn), "/gpus")


def _serving_tools(server: MCPServer, catalog: Catalog) -> None:
    """Tools for models and serving runs."""

    @server.tool(annotations=READ_ONLY)
    def list_models() -> ModelListing:
        """Models with serving results, each with its GPUs and the resolver link."""
        from kernelindex.views.serving import list_models as models

        with refusals():
            return catalog.view(ModelListing, lambda conn, _url: models(conn), "/models")

    @server.tool(annotations=READ_ONLY)
    def resolve_serving(
        model: Annotated[str, Field(min_length=1, max_length=200, description="model slug or name, e.g. llama2-70b")],
        gpu: Annotated[str, Field(min_length=1, max_length=200, description="GPU, e.g. H200")],
        input_len: Length = None,
        output_len: Length = None,
    ) -> Resolved:
        """Which serving stack and configuration serve a model best on a GPU: the throughput/latency frontier."""
        with refusals():
            return catalog.view(
                Resolved,
                lambda conn, url: serving_resolve.resolve_serving(conn, model, gpu, input_len, output_len, url),
                "/resolve/serving",
                {"model": model, "gpu": gpu, "input_len": input_len, "output_len": output_len},
            )

    @server.tool(annotations=READ_ONLY)
    def get_serving_run(run: Text) -> ServingRun:
        """One serving run: its rank in its cohort, measurements, SLO percentiles, identity and manifest."""
        from kernelindex.store.reads.lookup import resolve_serving_run
        from kernelindex.store.reads.serving import serving_run_detail
        from kernelindex.views.serving import serving_run_view

        def build(conn, url):
            return serving_run_view(conn, serving_run_detail(conn, resolve_serving_run(conn, run).id), url)

        with refusals():
            return catalog.view(ServingRun, build, path("serving-runs", run))


def _record_tools(server: MCPServer, catalog: Catalog) -> None:
    """Tools for manifests and rerun requests."""

    @server.tool(annotations=READ_ONLY)
    def validate_manifest(
        document: Annotated[dict[str, Any], Field(description="one record: apiVersion, kind, metadata, spec")],
    ) -> manifests.ManifestCheck:
        """Whether a record is valid for its kind, as the importers judge it: every problem by field, or its digest."""
        return manifests.check_manifest(document)

    @server.tool(annotations=READ_ONLY)
    def get_manifest_schema(
        kind: Annotated[str, Field(min_length=1, max_length=60, description="a record kind, e.g. BenchmarkRun")],
    ) -> manifests.ManifestSchema:
        """The JSON Schema (Draft 2020-12) of one record kind."""
        with refusals():
            return manifests.manifest_schema(kind)

    @server.tool(annotations=READ_ONLY)
    def rerun_status(
        request_id: Annotated[str, Field(min_length=1, max_length=100, description="a rerun request's id")],
    ) -> RerunRequestDetail:
        """A rerun request's state, its leases (runner, attempts, reasons) and the runs it produced."""
        from kernelindex.records.refusal import RefusalKind, ViewRefusal
        from kernelindex.store.reads.queue import request_row
        from kernelindex.views.queue import request_detail

        def build(conn, url):
            row = request_row(conn, request_id)
            if row is None:
                raise ViewRefusal(RefusalKind.NOT_FOUND, "not-found", f"no rerun request {request_id!r}")
            return request_detail(conn, row)

        with refusals():
            return catalog.view(RerunRequestDetail, build, path("rerun-requests", request_id))


def _local_cursor(cursor: str | None) -> int | None:
    from kernelindex.records.refusal import RefusalKind, ViewRefusal

    if cursor is None:
        return None
    if not cursor.isdigit() or len(cursor) > 18:
        raise ViewRefusal(RefusalKind.BAD_REQUEST, "bad-cursor", f"cursor {cursor[:40]!r} is not a page's `next`")
    return int(cursor)
