"""The client and the CLI's --server mode against a live `kernelindex serve`: the same answers as
local mode over the same store, compared field by field (whole JSON documents)."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app
from kernelindex.client import ApiError, AsyncClient, Client
from kernelindex.records.envelope import Record


@pytest.fixture
def both(live_store, live_server, monkeypatch):
    """run(*args) -> (local result, remote result) of one CLI command over the same store."""
    db = live_store[0].engine.url.render_as_string(hide_password=False)
    monkeypatch.setenv("KERNELINDEX_PUBLIC_URL", live_server)  # local permalinks name the same site
    monkeypatch.delenv("KERNELINDEX_SERVER", raising=False)

    def run(*args: str, code: int = 0):
        local = CliRunner().invoke(app, [*args, "--db", db])
        remote = CliRunner().invoke(app, [*args, "--server", live_server])
        assert local.exit_code == code, (args, local.stdout, local.stderr)
        assert remote.exit_code == code, (args, remote.stdout, remote.stderr)
        return local, remote

    return run


def _same_json(local, remote):
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert a == b
    return a


def test_show_is_the_same_locally_and_over_the_api(both, live_store):
    filled = live_store[1]
    for name in ("fast", "retracted", "newer", "nometric"):
        view = _same_json(*both("show", filled.runs[name], "--json"))
        assert view["id"] == filled.runs[name] and view["digest"].startswith("sha256:")
    digest = _same_json(*both("show", filled.runs["fast"], "--json"))["digest"]
    by_prefix = _same_json(*both("show", digest[7:19], "--json"))
    assert by_prefix["id"] == filled.runs["fast"] and by_prefix["rank"]["rank"] == 1
    local, remote = both("show", filled.runs["fast"])  # the table for people, character for character
    assert local.stdout == remote.stdout and digest in local.stdout


def test_refusals_are_the_same_locally_and_over_the_api(both):
    for ident, expected in (("00000000", "no run with id or digest '00000000'"), ("abc", "at least 8 hex characters")):
        local, remote = both("show", ident, code=1)
        assert local.stderr == remote.stderr and expected in local.stderr
        assert local.stderr.count("\n") == 1 and local.stderr.startswith("error: ")
    local, remote = both("rank", "sha256:" + "0" * 64, code=1)
    assert local.stderr == remote.stderr and "no comparison key, workload, operation or run named" in local.stderr


def test_runs_listings_are_the_same_with_every_filter(both, live_store):
    filled = live_store[1]
    everything = _same_json(*both("runs", "--limit", "0", "--json"))
    assert {filled.runs[n] for n in ("fast", "pack", "v2-only")} <= {r["id"] for r in everything}
    for args, check in (
        (("--status", "passed"), lambda rows: rows and all(r["status"] == "passed" for r in rows)),
        (("--hardware", "h200"), lambda rows: rows and all("H200" in r["hardware"] for r in rows)),
        (("--hardware", "sm_90"), lambda rows: rows and all("H200" in r["hardware"] for r in rows)),
        (("--source", "test-lab"), lambda rows: len(rows) == len(filled.runs)),
        (("--workload", filled.workload_id), lambda rows: all(r["workloadId"] == filled.workload_id for r in rows)),
        (("--operation", "synthetic-softmax-rows-pack"), lambda rows: [r["id"] for r in rows] == [filled.runs["pack"]]),
        (("--limit", "3"), lambda rows: len(rows) == 3),
    ):
        rows = _same_json(*both("runs", *args, "--json"))
        assert check(rows), (args, rows)
    local, remote = both("runs", "--source", "test-lab", "--jsonl")
    assert local.stdout == remote.stdout
    assert [json.loads(line)["id"] for line in local.stdout.splitlines()] == [
        r["id"] for r in everything if r["source"] == "test-lab"
    ]
    local, remote = both("runs", "--source", "test-lab")
    assert local.stdout == remote.stdout and f"{len(filled.runs)} runs" in local.stdout


def test_rank_and_compare_are_the_same(both, live_store):
    filled = live_store[1]
    groups = _same_json(*both("rank", filled.workload_id, "--json"))
    assert groups and groups[0]["rows"][0]["runId"] == filled.runs["fast"]
    key = groups[0]["comparisonKey"]
    one = _same_json(*both("rank", key, "--json", "--limit", "1"))
    assert len(one) == 1 and one[0]["rowsShown"] == 1 and one[0]["comparisonKey"] == key
    local, remote = both("rank", filled.workload_id)
    assert local.stdout == remote.stdout and key in local.stdout
    by_run = _same_json(*both("rank", filled.runs["slow"], "--json"))  # a run names its own group
    assert [g["comparisonKey"] for g in by_run] == [key]
    by_operation = _same_json(*both("rank", "synthetic-softmax-rows-pack", "--jsonl"))
    assert by_operation["rows"][0]["runId"] == filled.runs["pack"]
    view = _same_json(*both("compare", filled.runs["fast"], filled.runs["slow"], "--json"))
    assert view["comparable"] and view["ratio"] < 1
    local, remote = both("compare", filled.runs["fast"], filled.runs["pack"])
    assert local.stdout == remote.stdout and "not comparable" in local.stdout


def test_the_client_follows_cursors_and_types_the_records(live_store, live_server):
    filled = live_store[1]
    with Client(live_server) as client:
        one_by_one = list(client.iter_runs(page_size=1, source="test-lab"))
        page = client.runs_page(limit=2, source="test-lab")
        records = client.run_records(filled.runs["fast"])
        with pytest.raises(ApiError) as refused:
            client.run("00000000")
    assert [r["id"] for r in one_by_one] == [
        r["id"] for r in Client(live_server).iter_runs(page_size=200, source="test-lab")
    ]
    assert len(one_by_one) == len(filled.runs) and len(page.items) == 2 and page.next
    assert isinstance(records.run, Record) and records.run.kind == "BenchmarkRun"
    assert records.protocol.kind == "BenchmarkProtocol" and records.environment.kind == "ExecutionEnvironment"
    assert refused.value.status == 404 and refused.value.problem["type"] == "/problems/not-found"


def test_the_async_client_answers_like_the_sync_one(live_store, live_server):
    filled = live_store[1]

    async def read():
        async with AsyncClient(live_server) as client:
            view = await client.run(filled.runs["fast"])
            listed = [r["id"] async for r in client.iter_runs(page_size=2, max_items=5)]
            group = await client.ranking(view["rank"]["comparisonKey"])
            return view, listed, group

    view, listed, group = asyncio.run(read())
    with Client(live_server) as client:
        assert view == client.run(filled.runs["fast"])
        assert listed == [r["id"] for r in client.iter_runs(max_items=5)]
        assert group == client.ranking(view["rank"]["comparisonKey"])
    assert len(listed) == 5


def test_export_over_the_api_writes_the_same_catalog(live_store, live_server, tmp_path, monkeypatch):
    import zstandard

    monkeypatch.delenv("KERNELINDEX_SERVER", raising=False)
    db = live_store[0].engine.url.render_as_string(hide_password=False)
    local, remote = tmp_path / "local.jsonl.zst", tmp_path / "remote.jsonl.zst"
    assert CliRunner().invoke(app, ["export", str(local), "--db", db]).exit_code == 0
    result = CliRunner().invoke(app, ["export", str(remote), "--server", live_server])
    assert result.exit_code == 0, result.stderr

    def text(path):
        return zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read().decode()

    lines = text(local).splitlines()
    assert text(remote) == text(local) and len(lines) > len(live_store[1].runs)
    assert f"{len(lines)} rows written" in result.stdout


@pytest.mark.parametrize(
    "url, status",
    [
        ("/api/v1/rankings", 400),
        ("/api/v1/rankings?target=" + "a" * 201, 400),
        ("/api/v1/rankings?target=x&limit=0", 400),
        ("/api/v1/rankings?target=x&extra=1", 400),
        ("/api/v1/rankings?target=abc", 400),
        ("/api/v1/rankings?target=nothing-by-this-name", 404),
        ("/api/v1/export?x=1", 400),
        ("/api/v1/runs?operation=x&bogus=1", 400),
    ],
)
def test_new_routes_refuse_bad_requests_with_a_problem(client, url, status):
    answer = client.get(url)
    assert answer.status_code == status and answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["detail"]


@pytest.mark.parametrize("query", ["042 B200", "toy", "sol-execbench verified", "moe_token_scatter_bwd N=300"])
def test_search_is_the_same_locally_and_over_the_api(both, query):
    answer = _same_json(*both("search", *query.split(), "--json"))
    assert answer["query"]["text"] == query if isinstance(answer.get("query"), dict) else True
    local, remote = both("search", *query.split())  # the answer for people, character for character
    assert local.stdout == remote.stdout
