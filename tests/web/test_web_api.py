"""The JSON API: every route, its pagination, and its errors (RFC 9457 problems, never a 500)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kernelindex.cli import app as cli_app
from kernelindex.ranking.cohort import rank_group
from kernelindex.ranking.reads import rank_inputs

PROBLEM = "application/problem+json"


def assert_problem(response, status: int, slug: str | None = None):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    body = response.json()
    assert body["status"] == status and body["title"] and body["detail"] and body["type"].startswith("/problems/")
    if slug:
        assert body["type"] == f"/problems/{slug}", body
    return body


def test_seed_run_json_has_the_source_figures(client, filled):
    body = client.get(f"/api/v1/runs/{filled.seed_runs['4273']}").json()
    assert body["primary"]["display"] == "317.9 µs" and body["primary"]["value"] == 317881
    shown = {m["label"]: m["text"] for m in body["sourceNative"]["display"]}
    assert shown["SOL score"] == "0.9189" and shown["Speedup over the reference"] == "8.02×"
    assert shown["Cases faster than the baseline"] == "16/16 cases faster"
    assert body["identity"]["externalId"] == "4273"
    assert body["digest"].startswith("sha256:149b7c1a") and body["digest"].endswith("f41e")
    assert body["evidence"]["level"] == "reported"
    # Without its workload record the seed has no comparison group yet, and says why.
    assert body["rank"]["rank"] is None and body["rank"]["excluded"] == ["pending_workload"]
    other = client.get(f"/api/v1/runs/{body['digest']}").json()  # by digest too
    assert other["id"] == body["id"]
    b = client.get(f"/api/v1/runs/{filled.seed_runs['19969']}").json()
    shown = {m["label"]: m["text"] for m in b["sourceNative"]["display"]}
    assert b["primary"]["display"] == "7.70 µs" and shown["SOL score"] == "0.7113"
    assert shown["Speedup over the reference"] == "2.33×"


def test_run_rank_interval_and_links(client, filled):
    body = client.get(f"/api/v1/runs/{filled.runs['hostile']}").json()
    assert body["rank"]["rank"] == 3 and body["rank"]["groupSize"] == 4
    assert (
        body["rank"]["interval"]["resamples"] == 2000 and body["rank"]["interval"]["method"] == "percentile bootstrap"
    )
    assert body["rank"]["interval"]["low"] <= filled.medians["hostile"] <= body["rank"]["interval"]["high"]
    assert body["links"]["compareWithLeader"] == f"/compare?a={filled.runs['hostile']}&b={filled.runs['fast']}"
    assert body["evidence"]["level"] == "verified"
    excluded = client.get(f"/api/v1/runs/{filled.runs['retracted']}").json()
    assert excluded["rank"]["rank"] is None and excluded["rank"]["excluded"] == ["retracted"]


def test_workload_groups_are_separate_and_agree_with_the_ranking_function_and_cli(client, filled, web_filled):
    body = client.get(f"/api/v1/workloads/{filled.workload_id}").json()
    sizes = sorted(g["size"] for g in body["groups"])
    assert sizes == [0, 1, 4]  # v1 (4 ranked), v2 (1), the run with no metric (its own key, 0 ranked)
    main = next(g for g in body["groups"] if g["size"] == 4)
    assert [r["runId"] for r in main["rows"]] == [filled.runs[n] for n in ("fast", "newer", "hostile", "slow")]
    assert {x["runId"]: x["reasons"] for x in main["excluded"]} == {
        filled.runs["failed"]: ["not_passed"],
        filled.runs["retracted"]: ["retracted"],
        filled.runs["old"]: ["superseded"],
    }
    assert main["direction"] == "lower latency is better"
    # The same ranks straight from the ranking function ...
    with web_filled[0].engine.connect() as conn:
        direct = rank_group(rank_inputs(conn, [main["comparisonKey"]]))
    assert [(e.run.run_id, e.rank) for e in direct.entries] == [(r["runId"], r["rank"]) for r in main["rows"]]
    # ... and from `kernelindex rank --json`.
    result = CliRunner().invoke(
        cli_app, ["rank", main["comparisonKey"], "--json", "--db", str(web_filled[0].engine.url)]
    )
    assert result.exit_code == 0, result.output
    cli_rows = json.loads(result.output)[0]["rows"]
    assert [(r["runId"], r["rank"]) for r in cli_rows] == [(r["runId"], r["rank"]) for r in main["rows"]]
    other = body["otherEvidence"]
    assert len(other) == 1 and other[0]["rows"][0]["runId"] == filled.runs["pack"]
    assert other[0]["workload"]["id"] == filled.other_workload_id


def test_rankings_route(client, filled):
    key = client.get(f"/api/v1/runs/{filled.runs['fast']}").json()["rank"]["comparisonKey"]
    body = client.get(f"/api/v1/rankings/{key}").json()
    assert body["size"] == 4 and body["rows"][0]["rank"] == 1 and body["history"]
    assert body["history"][-1]["runId"] == filled.runs["fast"]  # the recorded leader is the current one
    assert_problem(client.get("/api/v1/rankings/sha256:" + "0" * 64), 404, "not-found")


def test_compare_says_which_key_part_differs(client, filled):
    same = client.get("/api/v1/compare", params={"a": filled.runs["hostile"], "b": filled.runs["fast"]}).json()
    assert same["comparable"] and same["differingParts"] == []
    assert same["ratio"] == pytest.approx(filled.medians["hostile"] / filled.medians["fast"], rel=1e-3)
    assert same["statement"].startswith("B is")
    cross = client.get("/api/v1/compare", params={"a": filled.runs["fast"], "b": filled.runs["v2-only"]}).json()
    assert not cross["comparable"] and cross["differingParts"] == ["protocol"]
    seeds = client.get("/api/v1/compare", params={"a": filled.seed_runs["4273"], "b": filled.seed_runs["19969"]}).json()
    assert not seeds["comparable"] and "workload" in seeds["differingParts"]
    # Different operations: no ratio and no "better" statement at all, only what differs.
    assert seeds["ratio"] is None and seeds["statement"] is None
    assert all(g["ratios"] == [] for g in seeds["groups"])
    assert_problem(client.get("/api/v1/compare", params={"a": filled.runs["fast"]}), 400, "bad-run-count")
    assert_problem(client.get("/api/v1/compare", params={"a": filled.runs["fast"], "b": "nope"}), 404)


@pytest.mark.parametrize(
    "q, expect",
    [
        ("softmax", {"synthetic-softmax-rows", "synthetic-softmax-rows-pack"}),
        ("SOFTMAX-PACK", {"synthetic-softmax-rows-pack"}),  # family, any case
        ("rowwise_softmax_alias", {"synthetic-softmax-rows"}),  # alias
        ("h200", {"synthetic-softmax-rows", "synthetic-softmax-rows-pack"}),  # hardware only: operations with such runs
        ("test-lab", {"synthetic-softmax-rows", "synthetic-softmax-rows-pack"}),  # source only
        ("no-such-thing", set()),
    ],
)
def test_search(client, q, expect):
    body = client.get("/api/v1/search", params={"q": q}).json()
    assert {item["operation"]["slug"] for item in body["operations"]} == expect


def test_cursor_pagination_walks_every_run_once(client):
    seen, url, pages = [], "/api/v1/runs?limit=3", 0
    while url:
        body = client.get(url).json()
        seen += [item["id"] for item in body["items"]]
        url = body["links"]["next"]
        pages += 1
        assert pages < 20
    everything = client.get("/api/v1/runs?limit=200").json()
    assert seen == [item["id"] for item in everything["items"]] and len(seen) == 12 and pages == 4


def test_bad_cursors_are_400_problems(client):
    first = client.get("/api/v1/runs?limit=2").json()
    cursor = first["next"]
    tampered = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
    for bad in ("garbage", "!!!", tampered, cursor[:10], "A" * 500):
        assert_problem(client.get("/api/v1/runs", params={"cursor": bad}), 400, "bad-cursor")
    # A cursor of one listing is refused by another.
    assert_problem(client.get("/api/v1/operations", params={"cursor": cursor}), 400, "bad-cursor")
    assert_problem(client.get("/api/v1/search", params={"q": "x", "cursor": cursor}), 400, "unknown-parameter")


ROUTES = [
    "/api/v1/runs",
    "/api/v1/workloads",
    "/api/v1/operations",
    "/api/v1/search?q=a",
    "/api/v1/sources",
    "/api/v1/sources/test-lab",
    "/api/v1/operations/synthetic-softmax-rows",
]


@pytest.mark.parametrize("route", ROUTES)
def test_unknown_parameters_are_refused(client, route):
    sep = "&" if "?" in route else "?"
    body = assert_problem(client.get(f"{route}{sep}colour=blue"), 400, "unknown-parameter")
    assert body["parameters"] == ["colour"]


def test_unknown_parameters_on_detail_routes(client, filled):
    for route in (
        f"/api/v1/runs/{filled.runs['fast']}",
        f"/api/v1/workloads/{filled.workload_id}",
        f"/api/v1/compare?a={filled.runs['fast']}&b={filled.runs['slow']}&c=1",
    ):
        sep = "&" if "?" in route else "?"
        assert_problem(client.get(f"{route}{sep}x=1"), 400, "unknown-parameter")


@pytest.mark.parametrize(
    "route",
    ["/api/v1/runs/{}", "/api/v1/workloads/{}", "/api/v1/operations/{}", "/api/v1/sources/{}", "/api/v1/rankings/{}"],
)
@pytest.mark.parametrize(
    "ident",
    ["nope", "sha256:" + "f" * 64, "01a00000-0000-7000-8000-000000000000", "' OR 1=1 --", "ü" * 300, "..%2F..%2Fetc"],
)
def test_bad_ids_are_404_problems(client, route, ident):
    assert_problem(client.get(route.format(ident)), 404, "not-found")


@pytest.mark.parametrize(
    "url", ["/api/v1/runs/%00", "/api/v1/search?q=a%00b", "/api/v1/runs?status=%00", "/runs/x%00y", "/?q=%00"]
)
def test_nul_characters_are_400_problems(client, url):
    response = client.get(url)
    assert response.status_code == 400 and "NUL" in response.text


@pytest.mark.parametrize("params", [{"limit": "0"}, {"limit": "201"}, {"limit": "-1"}, {"limit": "abc"}])
def test_bad_limits(client, params):
    problem = assert_problem(client.get("/api/v1/runs", params=params), 400, "invalid-parameter")
    assert problem["errors"][0]["where"] == "query.limit"


def test_malformed_values_are_4xx_problems(client):
    assert_problem(client.get("/api/v1/runs", params={"limit": "abc"}), 400, "invalid-parameter")
    assert_problem(client.get("/api/v1/search", params={"q": "x" * 501}), 400, "bad-query")
    assert_problem(client.get("/api/v1/no-such-route"), 404, "not-found")
    assert_problem(client.post("/api/v1/runs", json={}), 405)
    assert_problem(client.delete("/api/v1/runs/x"), 405)


def test_listings_and_detail_routes(client, filled):
    ops = client.get("/api/v1/operations").json()["items"]
    assert {o["slug"] for o in ops} == {"synthetic-softmax-rows", "synthetic-softmax-rows-pack"}
    assert (
        client.get("/api/v1/operations", params={"family": "softmax-pack"}).json()["items"][0]["slug"]
        == "synthetic-softmax-rows-pack"
    )
    op = client.get("/api/v1/operations/synthetic-softmax-rows").json()
    assert op["aliases"] == ["rowwise_softmax_alias"] and op["workloads"][0]["runCount"] == 9
    assert [r["slug"] for r in op["related"]] == ["synthetic-softmax-rows-pack"]
    wls = client.get("/api/v1/workloads", params={"operation": "synthetic-softmax-rows"}).json()["items"]
    assert [w["id"] for w in wls] == [filled.workload_id]
    sources = {s["slug"]: s for s in client.get("/api/v1/sources").json()["items"]}
    assert sources["test-lab"]["runCount"] == 10 and sources["test-lab"]["policy"]["href"] is None
    src = client.get("/api/v1/sources/test-lab").json()
    assert {o["slug"] for o in src["operations"]} == {"synthetic-softmax-rows", "synthetic-softmax-rows-pack"}
    runs = client.get("/api/v1/runs", params={"status": "incorrect_numerical"}).json()["items"]
    assert [r["id"] for r in runs] == [filled.runs["failed"]]


def test_openapi_document_lists_every_api_route(client):
    doc = client.get("/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    assert set(doc["paths"]) >= {
        "/api/v1/runs",
        "/api/v1/runs/{run_id}",
        "/api/v1/workloads",
        "/api/v1/workloads/{workload_id}",
        "/api/v1/operations",
        "/api/v1/operations/{slug}",
        "/api/v1/rankings/{comparison_key}",
        "/api/v1/compare",
        "/api/v1/search",
        "/api/v1/sources",
        "/api/v1/sources/{slug}",
    }


def test_search_text_is_literal(client):
    nothing = client.get("/api/v1/search", params={"q": "%"}).json()
    assert nothing["operations"] == [] and nothing["matches"] == [] and nothing["notes"]
    assert len(client.get("/api/v1/search", params={"q": "_softmax_"}).json()["operations"]) == 2


def test_no_get_route_answers_500_to_junk(client):
    """Every GET route of the app, with junk in each path parameter and query value."""
    import random
    import re

    seed = random.randrange(2**32)
    rng = random.Random(seed)
    junk = ["", "x" * 2000, "sha256:", "😀", "<script>", "-1", "1e309", "%", "null", "[]", "{}", "%ff", "a/b"]
    from kernelindex.web.routes import api as api_routes
    from kernelindex.web.routes import pages as page_routes

    routes = [r for r in api_routes.router.routes + page_routes.router.routes if "GET" in r.methods]
    assert len(routes) >= 18
    for route in routes:
        for _ in range(4):
            path = re.sub(r"\{[^}]+\}", lambda _: rng.choice(junk).replace("/", "%2F") or "x", route.path)
            params = {name: rng.choice(junk) for name in ("q", "cursor", "limit", "a", "b", "workload")}
            response = client.get(path, params=params)
            assert response.status_code < 500, (seed, path, params, response.text[:300])


def test_run_listings_carry_the_same_evidence_level_as_the_run_page(client, filled):
    items = client.get("/api/v1/runs?limit=100").json()["items"]
    assert items and all(item["evidence"] and item["evidence"]["level"] for item in items)
    for item in items[:5]:
        page = client.get(f"/api/v1/runs/{item['id']}").json()
        assert item["evidence"]["level"] == page["evidence"]["level"]
    assert {"reported", "verified"} <= {item["evidence"]["level"] for item in items}
    html = client.get("/runs").text
    assert html.count('class="evidence evidence-') == min(len(items), html.count('<tr><td><a href="/runs/'))
