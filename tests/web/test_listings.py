"""The index listings: serving runs and configurations, projects and implementations (JSON twins walked
page by page against the store's own rows), the /serving, /projects, /implementations and /search pages
(also in Chromium, with hostile names) and /feed."""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest
from fastapi.testclient import TestClient
from web_storefill import HOSTILE_TITLE, fill

from kernelindex.ingest.catalog import import_catalog
from kernelindex.store.database import open_store
from kernelindex.web.app import create_app
from live_kit import chromium, serving
from serving_kit import serving_lines, write_lines


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    seed = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))
    print(f"listings store seed: {seed} (set KERNELINDEX_TEST_SEED to repeat)")
    folder = tmp_path_factory.mktemp("listings")
    store = open_store(str(folder / "l.db"))
    filled = fill(store, seed)
    lines = serving_lines(seed)
    import_catalog(store, write_lines(folder / "serving.jsonl.zst", lines))
    with TestClient(create_app(store=store), raise_server_exceptions=False) as client:
        yield client, store, filled, lines
    store.close()


def _rows(lines, table):
    return [line["row"] for line in lines if line["table"] == table]


def _walk(client, url: str, **params) -> list[dict]:
    """Every item of a listing, following ``next`` cursors."""
    items: list[dict] = []
    page = client.get(url, params=params)
    while True:
        assert page.status_code == 200, page.text
        body = page.json()
        items += body["items"]
        if not body["next"]:
            assert body["links"]["next"] is None
            return items
        page = client.get(url, params={**params, "cursor": body["next"]})


def test_serving_runs_are_listed_once_each_in_arrival_order_and_filtered(listed):
    client, _, _, lines = listed
    runs = _rows(lines, "serving_runs")
    items = _walk(client, "/api/v1/serving-runs", limit=4)
    assert [i["id"] for i in items] == [r["id"] for r in runs]
    h200 = _walk(client, "/api/v1/serving-runs", gpu="h200", limit=3)
    assert [i["id"] for i in h200] == [r["id"] for r in runs if "h200" in r["acceleratorModel"].lower()]
    model = _rows(lines, "model_revisions")[0]
    of_model = _walk(client, "/api/v1/serving-runs", model=model["slug"])
    assert {i["id"] for i in of_model} == {r["id"] for r in runs if r["modelRevisionId"] == model["id"]}
    assert all(i["modelSlug"] == model["slug"] and i["permalink"].endswith(i["digest"]) for i in of_model)


def test_serving_configurations_count_the_runs_they_configure(listed):
    client, _, _, lines = listed
    configs = _walk(client, "/api/v1/serving-configurations", limit=1)
    assert [c["id"] for c in configs] == [r["id"] for r in _rows(lines, "serving_configurations")]
    stated = Counter(r["configurationId"] for r in _rows(lines, "serving_runs"))
    assert {c["id"]: c["runs"] for c in configs} == {c["id"]: stated[c["id"]] for c in configs}
    first = configs[0]
    runs = _walk(client, "/api/v1/serving-runs", configuration=first["id"])
    assert len(runs) == first["runs"] and {r["gpu"] for r in runs} == set(first["gpus"])


def test_projects_and_implementations_are_listed_with_links_that_resolve(listed):
    client, _, _, _ = listed
    projects = _walk(client, "/api/v1/projects", limit=1)
    hostile = next(p for p in projects if p["slug"] == "hostile-project")
    impls = _walk(client, "/api/v1/implementations", limit=2)
    assert hostile["implementations"] == sum(1 for i in impls if (i["project"] or {}).get("slug") == "hostile-project")
    for item in impls:
        assert client.get(item["links"]["json"]).json()["digest"] == item["digest"]
    scoped = _walk(client, "/api/v1/implementations", project="hostile-project")
    assert {i["id"] for i in scoped} == {
        i["id"] for i in impls if (i["project"] or {}).get("slug") == "hostile-project"
    }
    assert sum(p["runs"] for p in projects) == sum(i["runs"] for i in impls if i["project"])


@pytest.mark.parametrize(
    ("url", "status", "slug"),
    [
        ("/api/v1/serving-runs?status=fine", 400, "bad-parameter"),
        ("/api/v1/serving-runs?model=no-such-model", 404, "not-found"),
        ("/api/v1/serving-runs?gpu=" + "x" * 201, 400, "invalid-parameter"),
        ("/api/v1/serving-runs?cursor=forged", 400, "bad-cursor"),
        ("/api/v1/serving-configurations?limit=0", 400, "invalid-parameter"),
        ("/api/v1/implementations?project=nope", 404, "not-found"),
        ("/api/v1/projects?colour=red", 400, "unknown-parameter"),
        ("/serving?status=fine", 400, "bad-parameter"),
    ],
)
def test_bad_listing_parameters_are_problems(listed, url, status, slug):
    client = listed[0]
    response = client.get(url)
    assert response.status_code == status and response.headers["content-type"].startswith(
        "application/problem+json" if url.startswith("/api/") else "text/html"
    )
    if url.startswith("/api/"):
        assert response.json()["type"].endswith(slug)


def test_search_page_and_feed(listed):
    client = listed[0]
    empty = client.get("/search")
    assert empty.status_code == 200 and 'name="q"' in empty.text
    answered = client.get("/search", params={"q": "softmax"})
    assert answered.status_code == 200 and "synthetic_softmax_rows" in answered.text
    moved = client.get("/feed?kind=new_leader", follow_redirects=False)
    assert moved.status_code == 308 and moved.headers["location"] == "/records/feed.xml?kind=new_leader"
    assert client.get("/feed").headers["content-type"].startswith("application/atom+xml")


@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_listing_pages_in_chromium(listed):
    _, store, _, lines = listed
    with serving(create_app(store=store)) as base, chromium() as browser:
        page = browser.new_page(base_url=base)
        alerts: list[str] = []
        page.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
        page.goto("/serving?limit=5")
        assert page.locator("table[data-table=serving-runs] tbody tr").count() == 5
        page.fill("input[name=gpu]", "H200")
        page.click("form.filters button")
        page.wait_for_url("**/serving?*gpu=H200*")
        h200 = sum(1 for r in _rows(lines, "serving_runs") if "h200" in r["acceleratorModel"].lower())
        shown = page.locator("table[data-table=serving-runs] tbody tr").count()
        assert shown == min(h200, 50)
        page.locator("table[data-table=serving-runs] tbody tr a").first.click()
        page.wait_for_selector("[data-field=digest]")
        page.goto("/projects")
        assert page.get_by_text(HOSTILE_TITLE).count() >= 1  # shown as text, never run
        page.goto("/implementations?project=hostile-project")
        page.locator("table[data-table=implementations] tbody tr a").first.click()
        page.wait_for_url("**/implementations/*")
        assert page.locator("h1").count() == 1
        page.goto("/search")
        page.fill("form.search-page input[name=q]", "softmax")
        page.click("form.search-page button")
        page.wait_for_url("**/search?q=softmax")
        assert page.evaluate("window.__pwned") is None and alerts == []
