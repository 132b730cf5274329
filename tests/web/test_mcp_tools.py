"""Every MCP tool the public site offers, and ours, driven by the SDK's own client over a store holding the
seed runs, synthetic runs, a serving catalog and a rerun request: in process, over streamable HTTP and
over stdio, locally and through a live server's API. Each answer is checked for what it says and
against the output schema the tool declares."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
from pathlib import Path

import jsonschema
import pytest
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from web_storefill import SAMPLE_DIR, fill

from kernelindex.agent.server import build_server
from kernelindex.client import Client
from kernelindex.ingest.catalog import import_catalog
from kernelindex.records.canonical import digest
from kernelindex.services import harness_adapter as harness
from kernelindex.services import queue as queue_service
from kernelindex.store.database import open_store
from kernelindex.views.reads import LocalReads, RemoteReads
from kernelindex.web.app import create_app
from live_kit import serving
from serving_kit import serving_lines, write_lines
from store_fixtures import BACKENDS, database_url

PUBLIC = {
    "search_catalog",
    "resolve_kernel",
    "resolve_kernels",
    "get_operation",
    "get_implementation",
    "get_benchmark_evidence",
    "compare_runs",
    "list_records",
    "list_changes",
    "list_runs",
    "list_hardware",
    "list_models",
    "resolve_serving",
    "get_serving_run",
    "validate_manifest",
    "get_manifest_schema",
}
OURS = {"search", "show_run", "rank", "runs", "explain_evidence", "cite_run", "rerun_status"}
OP = "synthetic-softmax-rows"
FIXTURES = Path(__file__).resolve().parents[1] / "harness" / "fixtures"


@pytest.fixture(scope="module", params=BACKENDS)
def world(request, tmp_path_factory):
    """(store URL, store, Filled, serving lines, rerun request id, live server URL), on SQLite and PostgreSQL."""
    seed = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))
    print(f"mcp store seed: {seed} (set KERNELINDEX_TEST_SEED to repeat)")
    folder = tmp_path_factory.mktemp("mcp")
    db = database_url(request.param, folder)
    store = open_store(db)
    filled = fill(store, seed)
    lines = serving_lines(seed)
    import_catalog(store, write_lines(folder / "serving.jsonl.zst", lines))
    request_id = queue_service.submit(
        store,
        queue_service.Submission(
            solution=harness.inline_solution(FIXTURES / "solutions" / "vector_add_torch" / "solution.json"),
            problem_files=harness.problem_files(FIXTURES / "problems" / "vector_add"),
            protocol={"rounds": 2, "warmup": 1, "iterations": 3, "timeout_s": 120},
        ),
    )
    with serving(create_app(store=store)) as url:
        yield db, store, filled, lines, request_id, url
    store.close()


def _calls(world) -> list[tuple[str, dict]]:
    _, _, filled, lines, request_id, _ = world
    serving_run = next(line["row"]["id"] for line in lines if line["table"] == "serving_runs")
    run = json.loads((SAMPLE_DIR / "sol-042-ac4k-submission-19969.json").read_text())["run"]
    broken = json.loads(json.dumps(run))
    broken["spec"]["status"] = "fine"
    return [
        ("search_catalog", {"query": "softmax"}),
        ("resolve_kernel", {"operation": OP, "shape": {"rows": 8192}, "gpu": "H200"}),
        ("resolve_kernel", {"operation": OP, "shape": {"rows": 4096}}),
        ("resolve_kernels", {"queries": [{"operation": OP, "shape": {"rows": 8192}}, {"operation": "no-such-op"}]}),
        ("get_operation", {"operation": OP}),
        ("get_implementation", {"implementation": "impl-fast"}),
        ("get_benchmark_evidence", {"run": filled.runs["fast"]}),
        ("explain_evidence", {"run": filled.runs["fast"]}),
        ("cite_run", {"run": filled.runs["fast"]}),
        ("compare_runs", {"a": filled.runs["fast"], "b": filled.runs["slow"]}),
        ("list_records", {"limit": 3}),
        ("list_records", {"kind": "retraction"}),
        ("list_changes", {"since": "2026-03-05T00:00:00Z", "limit": 50}),
        ("list_runs", {"hardware": "H200", "limit": 2}),
        ("list_hardware", {}),
        ("list_models", {}),
        ("resolve_serving", {"model": "toy-llm-70b", "gpu": "H200"}),
        ("get_serving_run", {"run": serving_run}),
        ("validate_manifest", {"document": run}),
        ("validate_manifest", {"document": broken}),
        ("get_manifest_schema", {"kind": "BenchmarkRun"}),
        ("rerun_status", {"request_id": request_id}),
    ]


async def _session(target, calls):
    async with McpClient(target) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        results = [await client.call_tool(name, args) for name, args in calls]
    return tools, results


def _answers(tools, calls, results) -> list[dict]:
    """Each result's structured content, after checking it against the tool's declared output schema."""
    out = []
    for (name, _), result in zip(calls, results, strict=True):
        assert not result.is_error, (name, result.content)
        jsonschema.validate(result.structured_content, tools[name].output_schema)
        assert json.loads(result.content[0].text) == result.structured_content
        out.append(result.structured_content)
    return out


def _check_content(world, answers: list[dict]) -> None:
    _, _, filled, lines, request_id, _ = world
    (
        found,
        exact,
        near,
        batch,
        operation,
        impl,
        evidence,
        why,
        cite,
        compared,
        recent,
        retractions,
        since,
        runs,
        hardware,
        models,
        resolved,
        serving_run,
        valid,
        invalid,
        schema,
        rerun,
    ) = answers
    assert any(op["operation"]["slug"].startswith("synthetic-softmax") for op in found["operations"])
    assert exact["match"] == "exact" and exact["best"]["runId"] == filled.runs["fast"]
    assert exact["best"]["interval"]["low"] <= exact["best"]["value"] <= exact["best"]["interval"]["high"]
    assert near["match"] == "nearest" and near["nearest"][0]["axes"]["rows"] == 8192
    first, second = batch["results"]
    assert first["resolution"]["best"]["runId"] == filled.runs["fast"] and "no-such-op" in second["error"]
    assert operation["slug"] == OP and operation["workloads"] and operation["group"]["rows"]
    assert impl["slug"] == "impl-fast" and impl["title"] == "fast softmax"
    assert evidence["level"] == why["level"] == "verified" and why["reasons"]
    assert cite["permalink"].endswith("/r/" + cite["digest"]) and cite["digest"] in cite["text"]
    assert compared["comparable"] and compared["ratio"] < 1
    assert len(recent["items"]) == 3 and recent["nextOffset"] == 3
    assert [e["run"]["id"] for e in retractions["items"]] == [filled.runs["retracted"]]
    assert since["items"] and all(e["at"] >= "2026-03-05" for e in since["items"])
    assert len(runs["items"]) == 2 and all("H200" in r["hardware"] for r in runs["items"]) and runs["next"]
    assert "nvidia-h200" in {g["slug"] for g in hardware["gpus"]}
    stated = {line["row"]["slug"] for line in lines if line["table"] == "model_revisions"}
    assert {m["slug"] for m in models["items"]} == stated
    assert resolved["candidates"] and all("H200" in c["gpu"] for c in resolved["candidates"])
    assert serving_run["id"] in {line["row"]["id"] for line in lines if line["table"] == "serving_runs"}
    document = json.loads((SAMPLE_DIR / "sol-042-ac4k-submission-19969.json").read_text())["run"]
    assert valid["valid"] and valid["digest"] == digest(document)
    assert not invalid["valid"] and [p["field"] for p in invalid["problems"]] == ["spec.status"]
    assert schema["schema"]["$schema"].endswith("2020-12/schema")
    assert rerun["id"] == request_id and rerun["state"] == "queued"


def test_every_tool_answers_locally_and_through_the_api_with_the_same_validated_answers(world, monkeypatch):
    db, store, _, _, _, url = world
    monkeypatch.setenv("KERNELINDEX_PUBLIC_URL", url)
    calls = _calls(world)
    tools, local = asyncio.run(_session(build_server(LocalReads(store)), calls))
    assert PUBLIC | OURS <= set(tools)
    assert all(t.output_schema and t.annotations.read_only_hint for t in tools.values())
    answers = _answers(tools, calls, local)
    _check_content(world, answers)
    filled = world[2]
    older = [
        ("search", {"query": "softmax"}),
        ("show_run", {"run": filled.runs["fast"]}),
        ("rank", {"target": filled.workload_id, "limit": 2}),
        ("runs", {"hardware": "H200", "limit": 3}),
    ]
    _, results = asyncio.run(_session(build_server(LocalReads(store)), older))
    searched, shown, ranked, listed = _answers(tools, older, results)
    assert (
        searched["schema"] == answers[0]["schema"] == "kernelindex.search/v1" and shown["runId"] == filled.runs["fast"]
    )
    assert ranked["groups"][0]["rows"][0]["runId"] == filled.runs["fast"] and len(listed["runs"]) == 3
    remote_tools, remote = asyncio.run(_session(build_server(RemoteReads(Client(url))), calls))
    # a cursor is where each side's next page starts: a store's row number, a server's signed token
    assert [_uncursored(a) for a in _answers(remote_tools, calls, remote)] == [_uncursored(a) for a in answers]


def _uncursored(answer: dict) -> dict:
    return {k: v for k, v in answer.items() if k not in ("next", "links")} if "next" in answer else answer


def test_every_tool_over_streamable_http_and_stdio(world):
    db, _, _, _, _, url = world
    calls = _calls(world)
    with serving(build_server(RemoteReads(Client(url))).streamable_http_app()) as mcp_url:
        tools, results = asyncio.run(_session(f"{mcp_url}/mcp", calls))
    _check_content(world, _answers(tools, calls, results))
    stdio = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kernelindex.cli", "mcp", "--db", db],
        env={**os.environ, "KERNELINDEX_PUBLIC_URL": url},
    )
    tools, results = asyncio.run(_session(stdio, calls))
    _check_content(world, _answers(tools, calls, results))


def test_refusals_are_tool_errors_naming_the_reason(world):
    _, store, _, _, _, url = world
    bad = [
        ("resolve_kernel", {"operation": "no-such-op"}, "no-such-op"),
        ("resolve_kernels", {"queries": [{"operation": OP}] * 21}, "21"),
        ("get_operation", {"operation": "nope"}, "nope"),
        ("get_benchmark_evidence", {"run": "abc"}, "8 hex"),
        ("list_records", {"kind": "gossip"}, "gossip"),
        ("list_changes", {"since": "yesterday"}, "yesterday"),
        ("list_runs", {"cursor": "not-a-cursor"}, "cursor"),
        ("get_manifest_schema", {"kind": "Poem"}, "Poem"),
        ("rerun_status", {"request_id": "no-such-request"}, "no-such-request"),
        ("resolve_serving", {"model": "toy-llm-70b", "gpu": "Z9000"}, "Z9000"),
    ]
    for server in (build_server(LocalReads(store)), build_server(RemoteReads(Client(url)))):
        _, results = asyncio.run(_session(server, [(n, a) for n, a, _ in bad]))
        for (name, _, needle), result in zip(bad, results, strict=True):
            assert result.is_error, (name, result.content)
            assert needle in result.content[0].text, (name, result.content[0].text)
