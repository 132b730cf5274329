"""Every MCP tool holds its arguments to its input schema in one place: the schema it lists is closed
(``additionalProperties: false``), an argument it does not take is refused by name with the ones it
takes (as the HTTP API answers an unknown parameter), and a value its schema refuses is one plain line
per problem, never pydantic's report with its model names and links. In process, by the SDK's client."""

from __future__ import annotations

import asyncio
import re

import pytest
from mcp import Client as McpClient

from kernelindex.agent.server import build_server
from kernelindex.client import Client
from kernelindex.store.database import open_store
from kernelindex.views.reads import LocalReads
from store_fixtures import database_url

PROBLEM_LINE = re.compile(r"[A-Za-z_][\w.\[\]\"]*: \S.*")
PYDANTIC = ("validation error", "Arguments", "pydantic", "https://", "[type=", "input_value")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Every tool, ``submit_kernel`` included (its key is never used: the arguments are refused first)."""
    store = open_store(database_url("sqlite", tmp_path_factory.mktemp("tools"), migrated=True))
    yield build_server(LocalReads(store), submitter=Client("http://127.0.0.1:9", api_key="unused"))
    store.close()


async def _session(server, calls):
    async with McpClient(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        results = [await client.call_tool(name, arguments) for name, arguments in calls(tools)]
    return tools, results


def _text(result) -> str:
    assert result.is_error, result.content
    return result.content[0].text


def test_every_tool_lists_a_closed_schema_and_refuses_an_argument_it_does_not_take(server):
    tools, results = asyncio.run(_session(server, lambda tools: [(name, {"bogusarg": 1}) for name in tools]))
    assert len(tools) > 20
    for (name, tool), result in zip(tools.items(), results):
        assert tool.input_schema["additionalProperties"] is False, name
        allowed = ", ".join(sorted(tool.input_schema.get("properties", {}))) or "none"
        assert _text(result) == f"unknown argument(s): bogusarg; allowed: {allowed}", name


def test_every_tool_says_what_is_wrong_with_each_argument_in_one_plain_line(server):
    """Each of a tool's arguments given a value no schema of ours takes (an array of arrays)."""

    def calls(tools):
        return [(n, {a: [[1]] for a in t.input_schema.get("properties", {})}) for n, t in tools.items()]

    tools, results = asyncio.run(_session(server, calls))
    for (name, tool), result in zip(tools.items(), results):
        if not tool.input_schema.get("properties"):
            continue
        lines = _text(result).splitlines()
        assert all(PROBLEM_LINE.fullmatch(line) for line in lines), (name, lines)
        assert {re.split(r"[.\[:]", line)[0] for line in lines} <= set(tool.input_schema["properties"]), name
        assert not any(word in line for line in lines for word in PYDANTIC), (name, lines)


BAD = [
    ("search", {"query": "x" * 201}, ["query: at most 200 characters"]),
    ("show_run", {}, ["run: required"]),
    ("runs", {"hardware": 5, "limit": "many"}, ["hardware: must be a string", "limit: must be an integer"]),
    ("rank", {"target": "x", "limit": 0}, ["limit: at least 1"]),
    ("list_runs", {"limit": 101}, ["limit: at most 100"]),
    ("resolve_serving", {"model": "m", "gpu": "g", "input_len": 1.5}, ["input_len: must be an integer"]),
    ("validate_manifest", {"document": []}, ["document: must be an object"]),
    (
        "resolve_kernel",
        {"operation": "", "shape": {"N": [1], "": 2}, "min_evidence": "great"},
        [
            "operation: at least 1 character",
            "shape.N: must be an integer or a number or a string",  # each member of the axis union
            'shape[""]: at least 1 character',  # was a crash in the tool's body, with no reason given
            "min_evidence: must be one of 'reported', 'reproducible', 'verified' or 'replicated'",
        ],
    ),
    (
        "resolve_kernels",
        {"queries": [5, {"operation": "x", "bogus": 1}, {"operation": "x", "constraints": {"minEvidence": 1}}]},
        [
            "queries[0]: must be an object",
            "queries[1].bogus: unknown field",
            "queries[2].constraints.minEvidence: must be one of 'reported', 'reproducible', 'verified' or 'replicated'",
        ],
    ),
]


def test_argument_errors_name_the_argument_and_what_is_wrong(server):
    _, results = asyncio.run(_session(server, lambda _: [(name, arguments) for name, arguments, _ in BAD]))
    for (name, _, expected), result in zip(BAD, results):
        assert _text(result).splitlines() == expected, name
