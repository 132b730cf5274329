"""Where the index started (seed runs, our problem packs) and "Other evidence for this problem".

The store here is the shipped sample (two seed bundles, our two problem packs) plus a small
synthetic part: an "upstream" suite of each problem (our pack's suite record under another name,
so another workload of the same operation record, as the real export has), and seeded runs on our
pack's workloads under two protocols and on the upstream 009 suite. No real export is needed.
"""

from __future__ import annotations

import copy
import os
import random
import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from web_storefill import ENVIRONMENT, SAMPLE_DIR, protocol, rec

from kernelindex.formats.problem import load_problem
from kernelindex.formats.records import records_for
from kernelindex.ingest.bundles import import_bundles
from kernelindex.ingest.evaluations import import_problem_folder
from kernelindex.problems import LOAD_BALANCE_BWD, TOKEN_SCATTER_BWD
from kernelindex.records.canonical import digest
from kernelindex.store.database import open_store
from kernelindex.store.tables import workloads
from kernelindex.store.writer import Writer
from kernelindex.web.app import create_app

pytestmark = pytest.mark.xdist_group("origins")

SEED_FIGURES = {
    "4273": ("317.9 µs", "0.9189", "8.02×", "16/16 cases faster"),
    "19969": ("7.70 µs", "0.7113", "2.33×", "16/16 cases faster"),
}


def upstream_suite(pack_suite: dict, label: str) -> dict:
    """Another workload record of the same operation, as an upstream catalog would have it."""
    suite = copy.deepcopy(pack_suite)
    suite["metadata"] = {"name": f"upstream-{label}-suite", "title": f"upstream {label} suite"}
    suite["spec"]["cases"] = suite["spec"]["cases"][:4]
    return suite


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    seed = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))
    print(f"origins store seed: {seed} (set KERNELINDEX_TEST_SEED to repeat)")
    rng = random.Random(seed)
    store = open_store(str(tmp_path_factory.mktemp("origins") / "origins.db"))
    import_bundles(store, sorted(SAMPLE_DIR.glob("*.json")))
    scatter = records_for(load_problem(TOKEN_SCATTER_BWD))
    balance = records_for(load_problem(LOAD_BALANCE_BWD))
    for pack in (TOKEN_SCATTER_BWD, LOAD_BALANCE_BWD):
        import_problem_folder(store, pack)
    ids: dict[str, str] = {}
    with store.begin() as conn:
        w = Writer(conn)
        w.ensure_source("test-lab", "controlled", "Test lab")
        up009, up042 = upstream_suite(scatter.suite, "009"), upstream_suite(balance.suite, "042")
        ids["up009"], ids["up042"] = w.add_record(up009), w.add_record(up042)
        impl = rec(
            "ImplementationRevision",
            "impl-scatter",
            {
                "projectRevision": {"version": "r1"},
                "operation": {"specDigest": digest(scatter.operation)},
                "callable": {"language": "triton"},
                "support": {"dtypes": ["bf16"], "hardwareArchitectures": ["sm_90"]},
                "licensing": {},
            },
            title="our scatter kernel",
        )
        w.add_record(impl)
        case = next(iter(scatter.cases.values()))
        for name, workload, proto in (
            ("pack-case-v1", case, protocol("v1")),
            ("pack-suite-v2", scatter.suite, protocol("v2")),
            ("upstream-v1", up009, protocol("v1")),
        ):
            spec = {
                "implementationDigest": digest(impl),
                "workloadDigest": digest(workload),
                "protocolDigest": digest(proto),
                "environmentDigest": digest(ENVIRONMENT),
                "status": "passed",
                "observedAt": "2026-09-01T00:00:00Z",
                "timing": {"primaryStatistic": "median", "latencyNs": {"median": rng.randrange(100_000, 900_000)}},
                "sourceNative": {
                    "source": "test-lab",
                    "benchmark": scatter.operation["metadata"]["name"],
                    "externalId": name,
                },
            }
            ids[name] = w.add_run_bundle(
                {"run": rec("BenchmarkRun", name, spec, title=name), "protocol": proto, "environment": ENVIRONMENT}
            )
    with store.engine.connect() as conn:
        by_digest = dict(conn.execute(select(workloads.c.workload_digest, workloads.c.id)).all())
    ids["suite009"], ids["suite042"] = by_digest[digest(scatter.suite)], by_digest[digest(balance.suite)]
    ids["case009"] = by_digest[digest(case)]
    with TestClient(create_app(store=store), raise_server_exceptions=False) as client:
        yield client, ids
    store.close()


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_landing_lists_both_seeds_with_figures_and_our_packs(world):
    client, ids = world
    body = client.get("/api/v1/origins").json()
    seeds = {s["externalId"]: s for s in body["seeds"]}
    assert set(seeds) == set(SEED_FIGURES)
    for external, (latency, sol, speedup, faster) in SEED_FIGURES.items():
        s = seeds[external]
        assert s["found"] and s["primary"] == latency and s["links"]["self"] == f"/runs/{s['id']}"
        shown = {m["label"]: m["text"] for m in s["figures"]}
        assert (shown["SOL score"], shown["Speedup over the reference"], shown["Cases faster than the baseline"]) == (
            sol,
            speedup,
            faster,
        )
        assert client.get(s["links"]["self"]).status_code == 200
    packs = {p["folder"]: p for p in body["packs"]}
    assert packs["moe_token_scatter_bwd"]["runCount"] == 2 and packs["moe_load_balance_bwd"]["runCount"] == 0
    assert packs["moe_token_scatter_bwd"]["suite"]["id"] == ids["suite009"]
    assert all(p["caseCount"] == 16 and p["storedWorkloads"] == 17 for p in packs.values())
    page = client.get("/").text
    text = text_of(page)
    assert "Where this index started" in text
    for s in seeds.values():
        assert f'href="{s["links"]["self"]}"' in page
    assert f'href="/workloads/{ids["suite042"]}"' in page and "16 cases, no runs yet" in text
    assert "16 cases, 2 runs" in text
    # A search result page is a listing, not the landing page.
    assert "Where this index started" not in client.get("/?q=moe").text


def test_landing_says_when_a_seed_or_pack_is_missing(tmp_path):
    store = open_store(str(tmp_path / "empty.db"))
    try:
        with TestClient(create_app(store=store)) as client:
            body = client.get("/api/v1/origins").json()
            assert [s["found"] for s in body["seeds"]] == [False, False]
            assert [p["imported"] for p in body["packs"]] == [False, False]
            page = client.get("/").text
    finally:
        store.close()
    assert page.count('data-field="seed-missing"') == 2 and "/runs/" not in page
    assert text_of(page).count("not imported into this store yet") == 2


def test_upstream_workload_shows_our_pack_even_without_runs(world):
    client, ids = world
    body = client.get(f"/api/v1/workloads/{ids['up042']}").json()
    assert body["pack"] is None and [p["folder"] for p in body["ourPacks"]] == ["moe_load_balance_bwd"]
    pack = body["ourPacks"][0]
    assert pack["caseCount"] == 16 and pack["runCount"] == 0 and pack["groups"] == []
    assert pack["suite"]["id"] == ids["suite042"]
    text = text_of(client.get(f"/workloads/{ids['up042']}").text)
    assert "Other evidence for this problem" in text and "16 cases, no runs yet" in text


def test_upstream_workload_keeps_our_pack_groups_apart_by_protocol(world):
    client, ids = world
    body = client.get(f"/api/v1/workloads/{ids['up009']}").json()
    own_keys = {g["comparisonKey"] for g in body["groups"]}
    assert [g["rows"][0]["runId"] for g in body["groups"]] == [ids["upstream-v1"]]
    pack = body["ourPacks"][0]
    assert pack["folder"] == "moe_token_scatter_bwd" and pack["runCount"] == 2
    groups = {g["workload"]["id"]: g for g in pack["groups"]}
    assert set(groups) == {ids["case009"], ids["suite009"]}
    assert groups[ids["case009"]]["protocol"]["title"] == "Test harness v1"
    assert groups[ids["suite009"]]["protocol"]["title"] == "Test harness v2"
    assert all(g["environment"]["title"] == "NVIDIA H200 test box" for g in groups.values())
    assert not own_keys & {g["comparisonKey"] for g in pack["groups"]}  # never ranked with the page's own
    assert [g["rows"][0]["runId"] for g in (groups[ids["case009"]], groups[ids["suite009"]])] == [
        ids["pack-case-v1"],
        ids["pack-suite-v2"],
    ]
    html = client.get(f"/workloads/{ids['up009']}").text
    assert f'href="/workloads/{ids["suite009"]}"' in html and "16 cases, 2 runs" in text_of(html)
    assert "Test harness v2 · NVIDIA H200 test box" in text_of(html)


def test_pack_workload_links_back_upstream(world):
    client, ids = world
    body = client.get(f"/api/v1/workloads/{ids['suite009']}").json()
    assert body["pack"] == {
        "folder": "moe_token_scatter_bwd",
        "caseCount": 16,
        "name": "009_expert_token_scatter_with_weighted_forward_backward",
    }
    assert body["ourPacks"] == []
    upstream = {w["id"]: w for w in body["upstream"]}
    assert ids["up009"] in upstream and upstream[ids["up009"]]["runCount"] == 1
    assert ids["suite009"] not in upstream and ids["case009"] not in upstream  # ours are not "upstream"
    assert [g["workload"]["id"] for g in body["otherEvidence"]] == [ids["up009"]]
    html = client.get(f"/workloads/{ids['case009']}").text
    assert f'href="/workloads/{ids["up009"]}"' in html and 'data-field="own-pack"' in html
    balance = client.get(f"/api/v1/workloads/{ids['suite042']}").json()
    assert [w["id"] for w in balance["upstream"]] == [ids["up042"]] and balance["otherEvidence"] == []
