"""The MCP server driven by the SDK's own client: in process, over streamable HTTP and over stdio;
over a local store and through the API of a live server, with the same answers, on SQLite and
PostgreSQL (the small store of every web test)."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters

from kernelindex.agent.server import build_server
from kernelindex.client import Client
from kernelindex.views.reads import LocalReads, RemoteReads
from kernelindex.web.app import create_app
from live_kit import serving

READ_TOOLS = {
    "search",
    "show_run",
    "rank",
    "compare_runs",
    "runs",
    "log_checkpoint",
    "prove_record",
    "check_log_extends",
} | {
    "search_catalog",
    "resolve_kernel",
    "resolve_kernels",
    "get_operation",
    "get_implementation",
    "get_benchmark_evidence",
    "explain_evidence",
    "cite_run",
    "list_records",
    "list_changes",
    "list_runs",
    "list_hardware",
    "list_models",
    "resolve_serving",
    "get_serving_run",
    "validate_manifest",
    "get_manifest_schema",
    "rerun_status",
}  # each checked by tests/web/test_mcp_tools.py


@pytest.fixture(scope="module")
def live_store(web_filled):
    """The small store on each backend (conftest's ``web_filled``), as (store, Filled)."""
    return web_filled


@pytest.fixture(scope="module")
def live_server(live_store):
    """A live server over that store; yields its base URL."""
    with serving(create_app(store=live_store[0])) as url:
        yield url


@pytest.fixture
def servers(live_store, live_server, monkeypatch):
    """(local MCP server, remote MCP server) over the same store."""
    monkeypatch.setenv("KERNELINDEX_PUBLIC_URL", live_server)
    return build_server(LocalReads(live_store[0])), build_server(RemoteReads(Client(live_server)))


async def _calls(target, calls: list[tuple[str, dict]]):
    async with McpClient(target) as client:
        tools = await client.list_tools()
        results = [await client.call_tool(name, args) for name, args in calls]
    return {t.name: t for t in tools.tools}, results


def _payload(result) -> dict:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def test_every_tool_answers_the_same_locally_and_through_the_api(servers, live_store, live_server):
    filled = live_store[1]
    calls = [
        ("search", {"query": "softmax"}),
        ("show_run", {"run": filled.runs["fast"]}),
        ("rank", {"target": filled.workload_id, "limit": 2}),
        ("compare_runs", {"a": filled.runs["fast"], "b": filled.runs["slow"]}),
        ("compare_runs", {"a": filled.runs["fast"], "b": filled.runs["pack"]}),
        ("runs", {"hardware": "H200", "limit": 3}),
    ]
    (tools, local), (_, remote) = (asyncio.run(_calls(s, calls)) for s in servers)
    assert set(tools) == READ_TOOLS  # no key: nothing that writes
    assert all(tools[name].annotations.read_only_hint for name in READ_TOOLS)
    answers = [_payload(r) for r in local]
    assert answers == [_payload(r) for r in remote]
    found, run, ranked, same, different, listed = answers
    named = [op["operation"]["slug"] for op in found["operations"]] + [op["slug"] for op in found["otherOperations"]]
    assert any(slug.startswith("synthetic-softmax") for slug in named), found
    assert run["digest"].startswith("sha256:") and run["permalink"] == f"{live_server}/r/{run['digest']}"
    assert run["evidence"]["level"] and run["evidence"]["reasons"] and run["rank"]["rank"] == 1
    rows = ranked["groups"][0]["rows"]
    assert len(rows) == 2 and rows[0]["runId"] == filled.runs["fast"]
    assert rows[0]["permalink"] == f"{live_server}/r/{rows[0]['digest']}"
    assert same["comparable"] and 0 < same["ratio"] < 1 and "better" in same["statement"]
    assert not different["comparable"] and different["ratio"] is None
    assert "not comparable" in different["statement"]
    assert len(listed["runs"]) == 3 and all("H200" in r["hardware"] for r in listed["runs"])


def test_bad_arguments_and_unknown_records_are_tool_errors(servers):
    local, remote = servers
    bad = [
        ("show_run", {"run": "00000000"}),
        ("show_run", {"run": "abc"}),
        ("show_run", {}),
        ("show_run", {"run": 12}),
        ("rank", {"target": "sha256:" + "0" * 64}),
        ("rank", {"target": "x", "limit": 0}),
        ("compare_runs", {"a": "x"}),
        ("runs", {"limit": "many"}),
        ("search", {"query": "x" * 500}),
    ]
    for server in (local, remote):
        _, results = asyncio.run(_calls(server, bad))
        assert all(r.is_error for r in results), [r.content for r in results]
        texts = [r.content[0].text for r in results]
        assert "no run with id or digest '00000000'" in texts[0] and "at least 8 hex characters" in texts[1]
        assert "no comparison key, workload, operation or run named" in texts[4]


def test_a_key_adds_the_submit_tool_and_its_refusal_is_a_tool_error(live_store, live_server):
    server = build_server(RemoteReads(Client(live_server)), submitter=Client(live_server, api_key="not-a-key"))
    tools, (result,) = asyncio.run(_calls(server, [("submit_kernel", {"problem": "p", "solution": {"name": "s"}})]))
    assert set(tools) == READ_TOOLS | {"submit_kernel"} and not tools["submit_kernel"].annotations.read_only_hint
    assert result.is_error and result.content[0].text  # the server refuses an unknown key, with its reason


def test_streamable_http_and_stdio_transports(live_store, live_server, servers):
    filled = live_store[1]
    with serving(servers[1].streamable_http_app()) as url:
        tools, (shown,) = asyncio.run(_calls(f"{url}/mcp", [("show_run", {"run": filled.runs["fast"]})]))
    assert set(tools) == READ_TOOLS and _payload(shown)["runId"] == filled.runs["fast"]
    stdio = StdioServerParameters(
        command=sys.executable, args=["-m", "kernelindex.cli", "mcp", "--server", live_server], env=dict(os.environ)
    )
    tools, (ranked,) = asyncio.run(_calls(stdio, [("rank", {"target": filled.workload_id})]))
    assert set(tools) == READ_TOOLS and _payload(ranked)["groups"][0]["rows"][0]["runId"] == filled.runs["fast"]


def test_log_tools_prove_a_record_locally_and_through_the_api(servers, live_store):
    from sqlalchemy import select

    from kernelindex.store.tables import runs

    with live_store[0].read() as conn:
        digest = conn.execute(select(runs.c.run_digest).limit(1)).scalar_one()
    calls = [("log_checkpoint", {}), ("prove_record", {"digest": digest})]
    (_, local), (_, remote) = (asyncio.run(_calls(s, calls)) for s in servers)
    checkpoint, proved = (_payload(r) for r in local)
    assert [_payload(r) for r in remote] == [checkpoint, proved]
    assert proved["verified"] and proved["treeSize"] == checkpoint["size"] and proved["table"] == "runs"
    check = [("check_log_extends", {"note": checkpoint["note"], "verifier_key": checkpoint["verifierKey"]})]
    (_, answered), _ = asyncio.run(_calls(servers[0], check)), None
    assert _payload(answered[0])["consistent"] is True
    (_, missing), _ = asyncio.run(_calls(servers[1], [("prove_record", {"digest": "sha256:" + "0" * 64})])), None
    assert missing[0].is_error
    # a note that does not parse is a failed check; an unknown record is the store's refusal, on both sides
    broken = [
        (
            "check_log_extends",
            {"note": checkpoint["note"].replace("\n", "\nx", 1), "verifier_key": checkpoint["verifierKey"]},
        ),
        ("prove_record", {"digest": "sha256:" + "0" * 64}),
    ]
    for server in servers:
        _, (bad_note, unknown) = asyncio.run(_calls(server, broken))
        assert bad_note.is_error and "proof failed: the checkpoint's size" in bad_note.content[0].text
        assert unknown.is_error and "proof failed" not in unknown.content[0].text, unknown.content
