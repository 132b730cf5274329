"""``kernelindex mcp``: an MCP server (official Python SDK) whose tools answer what agents ask —
the fastest verified kernel for a workload, a run's evidence and why, rankings, comparisons —
reading a local store or any server through :mod:`kernelindex.views.reads`.

Read-only unless an API key is configured; then one more tool submits a kernel for verification.
Every tool result carries digests and permalinks so the agent can cite them. A refusal (unknown
run, ambiguous prefix, server down) is a tool error with the reason, never a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from kernelindex import __version__
from kernelindex.agent import summaries, tools
from kernelindex.agent.arguments import ToolServer
from kernelindex.agent.catalog import Catalog, absolute_links
from kernelindex.agent.citing import compare_summary, group_summary, permalink, run_summary
from kernelindex.agent.errors import refusals
from kernelindex.agent.log_tools import add_log_tools, log_reads_for
from kernelindex.client import Client
from kernelindex.search.models import SearchAnswer
from kernelindex.views.reads import Reads

INSTRUCTIONS = """KernelIndex ranks GPU kernel benchmark runs that are comparable (same operation, workload,
protocol, environment, correctness policy and metric) and says how sure it is of each: reported (a
source's claim), reproducible, verified (rerun by this index) or replicated. Start with `search`;
`show_run` explains one run's evidence level; `rank` lists a comparison group; `compare_runs` puts two
runs side by side. Cite runs by their digest and permalink."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
RunRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="run id (UUID), run digest (sha256:…) or a unique 8+ hex digest prefix",
    ),
]
Rows = Annotated[int, Field(ge=1, le=50, description="at most this many rows")]


TOOL_SETS: list[Callable[[MCPServer, Catalog], None]] = [tools.register]
"""Each module of tools exposes ``register(server, catalog)``; add a module here to offer its tools
(the transparency log's tools read through their own source: ``agent/log_tools.py``)."""


def build_server(reads: Reads, *, submitter: Client | None = None) -> MCPServer:
    """The MCP server over ``reads``; ``submitter`` (a client with an API key) adds ``submit_kernel``."""
    server = ToolServer(
        name="kernelindex",
        title="KernelIndex",
        version=__version__,
        instructions=INSTRUCTIONS,
        website_url=reads.base_url,
    )
    base = reads.base_url

    @server.tool(annotations=READ_ONLY)
    def search(
        query: Annotated[
            str,
            Field(
                max_length=200,
                description="a workload question, e.g. `042 H200 verified`, `moe_token_scatter_bwd N=300`, `ac4k`",
            ),
        ],
        limit: Rows = 10,
    ) -> SearchAnswer:
        """Answer a workload question: the best run per evidence level with its group's rank table, or
        the nearest measured cases; every run carries its digest and a link."""
        with refusals():
            found = reads.search(query, limit)
        return SearchAnswer.model_validate(absolute_links(found.document(), base))

    @server.tool(annotations=READ_ONLY)
    def show_run(run: RunRef) -> summaries.RunSummary:
        """One run: its evidence level and why, its rank in its comparison group, value, identity
        (implementation, workload, operation, hardware), and a citation."""
        with refusals():
            return summaries.RunSummary.model_validate(run_summary(reads.run(run), base))

    @server.tool(annotations=READ_ONLY)
    def rank(
        target: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="a comparison key, or a workload, operation or run (id, "
                "digest or 8+ hex prefix, name, slug, alias)",
            ),
        ],
        limit: Rows = 10,
    ) -> summaries.Groups:
        """The ranked comparison groups of a workload or operation (or the one group of a key or run), best first."""
        with refusals():
            groups = reads.groups(target, limit)
        if not groups:
            raise ToolError(f"{target!r} names no comparison group with runs in this index")
        return summaries.Groups.model_validate({"groups": [group_summary(g, base, limit) for g in groups]})

    @server.tool(annotations=READ_ONLY)
    def compare_runs(a: RunRef, b: RunRef) -> summaries.CompareSummary:
        """Two runs side by side: comparable or not, which key parts differ, and A/B when comparable."""
        with refusals():
            return summaries.CompareSummary.model_validate(compare_summary(reads.compare(a, b), base))

    @server.tool(annotations=READ_ONLY)
    def runs(
        operation: Annotated[str | None, Field(max_length=200, description="operation slug or alias")] = None,
        hardware: Annotated[
            str | None,
            Field(max_length=200, description="GPU model substring, architecture or vendor, e.g. H200, sm_90"),
        ] = None,
        status: Annotated[str | None, Field(max_length=50, description="e.g. passed")] = None,
        source: Annotated[str | None, Field(max_length=200, description="source slug")] = None,
        limit: Rows = 20,
    ) -> summaries.RunsSummary:
        """Runs in arrival order, filtered, each with its evidence level, digest and permalink."""
        filters = {
            k: v
            for k, v in {"operation": operation, "hardware": hardware, "status": status, "source": source}.items()
            if v
        }
        with refusals():
            rows = reads.runs(filters, limit)
        return summaries.RunsSummary.model_validate(
            {
                "runs": [
                    {
                        "runId": r.id,
                        "digest": r.digest,
                        "permalink": permalink(base, r.digest),
                        "title": r.title,
                        "operation": r.operation,
                        "hardware": r.hardware,
                        "status": r.status,
                        "value": r.primary.display,
                        "evidence": r.evidence.level if r.evidence else None,
                    }
                    for r in rows
                ]
            }
        )

    catalog = Catalog(reads)
    for register in TOOL_SETS:
        register(server, catalog)

    add_log_tools(server, log_reads_for(reads))  # agent/log_tools.py

    if submitter is not None:

        @server.tool(
            annotations=ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
            )
        )
        def submit_kernel(
            problem: Annotated[str, Field(min_length=1, max_length=200, description="a problem name the server has")],
            solution: Annotated[dict[str, Any], Field(description="solution.json with every source inline")],
            hardware: Annotated[str, Field(max_length=100, description="GPU product wanted, or cpu")] = "cpu",
            replicas: Annotated[int, Field(ge=1, le=4, description="independent runners that must repeat it")] = 1,
        ) -> dict[str, Any]:
            """Queue a kernel for verification by this index's runners; answers with the request's id and links."""
            with refusals():
                answer = submitter.submit_rerun(problem, solution, hardware=hardware, replicas=replicas)
            links = answer.get("links") or {}
            answer["links"] = {k: f"{submitter.base_url}{v}" if str(v).startswith("/") else v for k, v in links.items()}
            return answer

    return server
