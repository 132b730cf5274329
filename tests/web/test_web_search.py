"""Search that answers, and the operation page that ranks in place: the JSON API, the pages, and the
flows in real Chromium. The store holds our packs, seeded H200/B200 runs on their cases, and (when
../shared has the export) the real runs of the two seed problems."""

from __future__ import annotations

import os
import random
import re

import pytest
from fastapi.testclient import TestClient
from search_storefill import fill_search

from kernelindex.store.database import open_store
from kernelindex.web.app import create_app
from live_kit import chromium, serving
from store_fixtures import BACKENDS, database_url

pytestmark = pytest.mark.xdist_group("web_search")  # one worker fills the search stores, not each (-n 2)

SCATTER = "009-expert-token-scatter-with-weighted-forward-backward"
BALANCE = "042-moe-expert-load-balancing-and-token-capacity-backward"


@pytest.fixture(scope="module", params=BACKENDS)
def search_store(tmp_path_factory, request):
    try:
        catalog = request.getfixturevalue("catalog_path")
    except pytest.skip.Exception:
        catalog = None
    seed = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))
    print(f"search store seed: {seed} (set KERNELINDEX_TEST_SEED to repeat)")
    folder = tmp_path_factory.mktemp("search")
    store = open_store(database_url(request.param, folder))
    filled = fill_search(store, seed, catalog, folder)
    yield store, filled
    store.close()


@pytest.fixture(scope="module")
def api(search_store):
    with TestClient(create_app(store=search_store[0]), raise_server_exceptions=False) as c:
        yield c


def ask(api, q: str) -> dict:
    response = api.get("/api/v1/search", params={"q": q})
    assert response.status_code == 200, response.text
    return response.json()


def only(answer: dict, slug: str) -> dict:
    found = [op for op in answer["operations"] if op["operation"]["slug"] == slug]
    assert len(found) == 1, [op["operation"]["slug"] for op in answer["operations"]]
    return found[0]


def test_pinned_workload_gets_best_per_level_and_rank_table(api, search_store):
    filled = search_store[1]
    op = only(ask(api, "042 S=2080 H200 verified"), BALANCE)
    assert op["mode"] == "exact" and op["pinned"] == {"batch_seq_len": 2080}
    (case,) = [w for w in op["workloads"] if w["relation"] == "exact"]
    assert case["axes"]["batch_seq_len"] == 2080 and len(case["ids"]) >= 1
    (group,) = case["groups"]
    assert group["hardware"] == "NVIDIA H200" and group["size"] == 2
    best = group["bestByEvidence"]["verified"]
    assert best["rank"] == 1 and best["digest"] == filled.digests["balance-2080-balance-fast"]
    assert [r["rank"] for r in group["rows"]] == [1, 2] and group["rows"][0]["display"].endswith("µs")
    assert best["links"]["self"] == f"/runs/{best['runId']}" and group["links"]["self"].startswith("/rankings/sha256:")


def test_newcomer_query_042_h200_verified_lands_on_rank_tables(api):
    op = only(ask(api, "042 H200 verified"), BALANCE)
    assert op["mode"] == "overview"
    tables = [g for w in op["workloads"] for g in w["groups"]]
    assert tables and all(g["hardware"] == "NVIDIA H200" and "verified" in g["bestByEvidence"] for g in tables)


def test_bracketing_applies_filters_before_choosing_neighbours(api, search_store):
    filled = search_store[1]
    unfiltered = only(ask(api, "moe_token_scatter_bwd N=300"), SCATTER)
    assert unfiltered["mode"] == "bracketing" and unfiltered["pinned"] == {"num_tokens": 300}
    sides = {w["relation"]: w for w in unfiltered["workloads"] if w["relation"] != "suite"}
    assert sides["below num_tokens"]["axes"]["num_tokens"] == 296
    assert sides["above num_tokens"]["axes"]["num_tokens"] == 336
    on_h200 = only(ask(api, "moe_token_scatter_bwd N=300 H200"), SCATTER)
    sides = {w["relation"]: w for w in on_h200["workloads"] if w["relation"] != "suite"}
    assert sides["below num_tokens"]["axes"]["num_tokens"] == 256
    assert sides["above num_tokens"]["axes"]["num_tokens"] == 496
    digests = {r["digest"] for w in sides.values() for g in w["groups"] for r in g["rows"]}
    assert digests == {filled.digests[f"scatter-{n}-{i}"] for n in (256, 496) for i in ("scatter-fast", "scatter-slow")}
    assert ask(api, "moe_token_scatter_bwd N=300 H200")["relaxed"] == []


def test_filters_that_empty_the_answer_are_dropped_and_said(api):
    answer = ask(api, "042 S=2080 MI300X")
    assert answer["relaxed"] == ["gpu"] and any("gpu" in n for n in answer["notes"])
    assert only(answer, BALANCE)["workloads"][0]["groups"]


def test_our_pack_and_upstream_cases_are_one_workload(api, search_store):
    if not search_store[1].has_export:
        pytest.skip("the real export is absent: no upstream case records to merge with")
    op = only(ask(api, "042 S=2080"), BALANCE)
    (case,) = [w for w in op["workloads"] if w["relation"] == "exact"]
    assert len(case["ids"]) == 2 and len(set(case["digests"])) == 2


def test_digests_implementations_and_authors_are_searchable(api, search_store):
    filled = search_store[1]
    hexed = filled.digests["scatter-256-scatter-fast"].removeprefix("sha256:")
    # a bare hex word is a digest only with a letter in it (all digits is a number, as in "042"): the
    # shortest such prefix of 10 or more; the sha256: form is a digest whatever its characters
    bare = next(hexed[:n] for n in range(10, len(hexed) + 1) if not hexed[:n].isdigit())
    for prefix in (bare, "sha256:" + hexed[:10]):
        matches = ask(api, prefix)["matches"]
        assert [m["kind"] for m in matches] == ["run"], prefix
        assert matches[0]["href"] == f"/runs/{filled.runs['scatter-256-scatter-fast']}"
    impls = ask(api, "fast balance")["matches"]
    assert any(m["kind"] == "implementation" and m["title"] == "fast balance" for m in impls)
    if filled.has_export:
        assert any("ac4k" in m["title"] for m in ask(api, "ac4k")["matches"])
        assert ask(api, "149b7c1a")["matches"][0]["kind"] == "run"


@pytest.mark.parametrize("q", ["x" * 501, "a" * 50_001], ids=["501", "50001"])
def test_overlong_queries_are_400_problems(api, q):
    response = api.get("/api/v1/search", params={"q": q})
    # past 8192 characters every route refuses the value before it reaches a handler ("too-long")
    slug = "bad-query" if len(q) <= 8192 else "too-long"
    assert response.status_code == 400 and response.json()["type"] == f"/problems/{slug}"
    assert api.get("/", params={"q": q}).status_code == 400


@pytest.mark.parametrize(
    "q",
    [
        "<script>alert(1)</script>",
        "💥" * 100,
        "\u202e042\u200b H200",
        "'; DROP TABLE runs; --",
        "% _ \\ sha256:%",
        "N=<b>1</b> gpu:<i>x</i>",
        "sha256:" + "f" * 64,
        "０４２",
        "ß" * 400,
        "=",
        "a=",
        "=b",
        "evidence:bogus",
    ],
)
def test_odd_and_hostile_queries_answer_inertly(api, q):
    answer = ask(api, q)
    assert answer["schema"] == "kernelindex.search/v1"
    page = api.get("/", params={"q": q})
    assert page.status_code == 200
    assert "<script>alert" not in page.text and "<b>1</b>" not in page.text and "<i>x</i>" not in page.text


def test_unknown_parameters_are_refused(api):
    assert api.get("/api/v1/search", params={"q": "042", "limit": "5"}).status_code == 400


def test_openapi_describes_the_answer(api):
    doc = api.get("/api/v1/openapi.json").json()
    ref = doc["paths"]["/api/v1/search"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ref == {"$ref": "#/components/schemas/SearchAnswer"}
    schemas = doc["components"]["schemas"]
    assert {"operations", "matches", "relaxed", "query"} <= set(schemas["SearchAnswer"]["properties"])
    assert {"digest", "links", "display", "evidence"} <= set(schemas["RankRow"]["properties"])


def test_operation_page_lists_each_case_once_sorted_with_sweep(api, search_store):
    view = api.get(f"/api/v1/operations/{BALANCE}").json()
    cases = [w for w in view["workloads"] if w["kind"] == "WorkloadCase"]
    sizes = [w["axes"]["batch_seq_len"] for w in cases]
    assert sizes == sorted(sizes) and len(sizes) == len(set(sizes)) == 16
    if search_store[1].has_export:
        assert all(len(w["records"]) == 2 for w in cases)
        assert {r["origin"] for w in cases for r in w["records"]} == {"upstream", "our pack"}
    assert view["sweep"]["axis"] == "batch_seq_len" and view["sweep"]["hardware"] == "NVIDIA H200"
    assert {s["implementation"] for s in view["sweep"]["series"]} == {"fast balance", "slow balance"}
    page = api.get(f"/operations/{BALANCE}").text
    assert page.count('data-workload="') == len(view["workloads"])
    assert 'data-figure="sweep"' in page and "batch_seq_len (log" in page


def test_operation_page_chooses_workload_and_group(api, search_store):
    filled = search_store[1]
    case = filled.case_ids[("balance", 4096)]
    view = api.get(f"/api/v1/operations/{BALANCE}").json()
    chosen = next(w for w in view["workloads"] if w["kind"] == "WorkloadCase" and w["axes"]["batch_seq_len"] == 4096)
    picked = api.get(f"/api/v1/operations/{BALANCE}", params={"workload": chosen["id"]}).json()
    assert picked["chosenWorkload"]["id"] == chosen["id"] and picked["group"]["size"] == 2
    titles = [r["title"] for r in picked["group"]["rows"]]
    assert titles == ["balance-4096-balance-fast run", "balance-4096-balance-slow run"], case
    key = picked["groups"][0]["comparisonKey"]
    again = api.get(f"/api/v1/operations/{BALANCE}", params={"workload": chosen["id"], "group": key}).json()
    assert again["group"]["comparisonKey"] == key
    assert api.get(f"/operations/{BALANCE}", params={"bogus": "1"}).status_code == 400


def test_old_underscore_slugs_still_reach_the_operation(api):
    assert api.get(f"/operations/{BALANCE.replace('-', '_')}").status_code == 200


# ---------------------------------------------------------------- real Chromium


@pytest.fixture(scope="module")
def site(search_store):
    if search_store[0].dialect != "sqlite":
        pytest.skip("the browser flows run once, on SQLite")
    with serving(create_app(store=search_store[0])) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser, site):
    context = browser.new_context(base_url=site)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("dialog", lambda d: errors.append(f"dialog {d.message}"))
    yield pg
    context.close()
    assert errors == [], errors


@pytest.mark.browser
def test_search_flow_in_chromium(page, search_store, tmp_path):
    page.goto("/")
    box = page.locator('header input[name="q"]')
    box.fill("moe_token_scatter_bwd N=300 H200")
    box.press("Enter")
    page.wait_for_url(re.compile(r"/\?q="))
    assert box.input_value() == "moe_token_scatter_bwd N=300 H200"  # the box keeps the query
    section = page.locator(f'section[data-operation="{SCATTER}"]')
    assert section.get_attribute("data-mode") == "bracketing"
    relations = section.locator("article.answer-workload").evaluate_all("els => els.map(e => e.dataset.relation)")
    assert "below num_tokens" in relations and "above num_tokens" in relations
    assert section.locator("table.rank-table tbody tr").count() >= 4
    page.screenshot(path=str(tmp_path / "search-bracketing.png"), full_page=True)
    # follow the best run's link from the answer to its run page
    section.locator('li[data-best="verified"] a').first.click()
    page.wait_for_url(re.compile(r"/runs/"))
    assert page.evaluate("window.__pwned") is None


@pytest.mark.browser
def test_hostile_search_is_inert_in_chromium(page):
    page.goto("/?q=" + "%3Cimg%20src%3Dx%20onerror%3D%22window.__pwned%3D1%22%3E%20moe_token_scatter_bwd%20N%3D300")
    assert page.evaluate("window.__pwned") is None
    assert page.locator('header input[name="q"]').input_value().startswith("<img src=x")


@pytest.mark.browser
def test_operation_page_in_chromium(page, api, tmp_path):
    view = api.get(f"/api/v1/operations/{BALANCE}").json()
    wanted = next(w for w in view["workloads"] if w["kind"] == "WorkloadCase" and w["axes"]["batch_seq_len"] == 4096)
    page.goto(f"/operations/{BALANCE}")
    rows = page.locator('table[data-table="workloads"] tbody tr')
    assert rows.count() == 17  # 16 cases and the suite, each once
    page.select_option("#workload", value=wanted["id"])
    page.locator('form[data-chooser="workload"] button').click()
    page.wait_for_url(re.compile(r"workload="))
    assert page.locator("tr.chosen td").first.inner_text() == "batch_seq_len=4096"
    assert page.locator("table.ranking tbody tr").count() == 2
    sweep = page.locator('figure[data-figure="sweep"] svg')
    assert sweep.count() == 1
    box = sweep.bounding_box()
    assert box and box["width"] > 500
    page.screenshot(path=str(tmp_path / "operation-page.png"), full_page=True)
