"""Serving pages and API: run, model and resolver answers checked against figures computed here
from the fixture's own lines; bad parameters answer RFC 9457 problems; pages render in Chromium."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient

from kernelindex.ingest.catalog import import_catalog
from kernelindex.records.canonical import digest
from kernelindex.store.database import open_store
from kernelindex.web.app import create_app
from live_kit import chromium, serving
from serving_kit import serving_lines, write_lines
from store_fixtures import BACKENDS, database_url

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture(scope="module", params=BACKENDS)
def served(request, tmp_path_factory):
    seed = random.randrange(2**32)
    lines = serving_lines(seed)
    model = next(line for line in lines if line["table"] == "model_revisions")
    model["row"]["name"] = model["row"]["manifest"]["metadata"]["title"] = HOSTILE  # shown on every page
    folder = tmp_path_factory.mktemp("serving")
    store = open_store(database_url(request.param, folder))
    import_catalog(store, write_lines(folder / "serving.jsonl.zst", lines))
    with TestClient(create_app(store=store), raise_server_exceptions=False) as client:
        yield client, lines, seed, store
    store.close()


def _rows(lines, table):
    return [line["row"] for line in lines if line["table"] == table]


def _expected_frontier(lines, model_slug, gpu_part):
    """Brute force from the fixture: per-GPU throughput against the declared p99 bound (or none)."""
    model = next(r for r in _rows(lines, "model_revisions") if r["slug"] == model_slug)
    workloads = {r["id"]: r["manifest"]["spec"] for r in _rows(lines, "serving_workloads")}
    points = {}
    for run in _rows(lines, "serving_runs"):
        if run["modelRevisionId"] != model["id"] or gpu_part.lower() not in run["acceleratorModel"].lower():
            continue
        value = run["manifest"]["spec"]["measurements"][0]["value"] / run["totalAccelerators"]
        slo = workloads[run["workloadId"]].get("slo") or []
        points[run["id"]] = (value, slo[0]["value"] if slo else float("inf"))
    return {
        rid
        for rid, (v, lat) in points.items()
        if not any(o != rid and ov >= v and olat <= lat and (ov > v or olat < lat) for o, (ov, olat) in points.items())
    }, len(points)


def test_resolver_answers_the_frontier_with_digests(served):
    client, lines, seed, _ = served
    answer = client.get("/api/v1/resolve/serving", params={"model": "toy-llm-70b", "gpu": "h200"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    expected, total = _expected_frontier(lines, "toy-llm-70b", "h200")
    assert {c["id"] for c in body["frontier"]} == expected, seed
    assert len(body["candidates"]) == total
    digests = {r["id"]: r["runDigest"] for r in _rows(lines, "serving_runs")}
    for c in body["candidates"]:
        assert c["digest"] == digests[c["id"]] and c["permalink"].endswith(c["digest"])
    svg = client.get(body["plot"].replace("http://testserver", ""))
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert svg.text.count("<circle") == total and "<script" not in svg.text


def test_input_length_past_the_workloads_maximum_leaves_only_workloads_that_admit_it(served):
    client, lines, _, _ = served
    body = client.get(
        "/api/v1/resolve/serving", params={"model": "toy-llm-7b", "gpu": "B200", "input_len": 4096}
    ).json()
    assert body["candidates"] and all(c["workload"] == "toy-offline" for c in body["candidates"])


@pytest.mark.parametrize(
    "params, status, slug",
    [
        ({"model": "no-such-model", "gpu": "H200"}, 404, "not-found"),
        ({"model": "toy-llm", "gpu": "H200"}, 409, "ambiguous-name"),
        ({"model": "toy-llm-7b", "gpu": "MI300X"}, 404, "no-runs"),
        ({"model": "toy-llm-7b", "gpu": "H200", "input_len": "-5"}, 400, "bad-parameter"),
        ({"model": "toy-llm-7b", "gpu": "H200", "output_len": "ten"}, 400, "bad-parameter"),
        ({"model": "toy-llm-7b"}, 400, "missing-parameter"),
        ({"model": "toy-llm-7b", "gpu": "H200", "colour": "red"}, 400, "unknown-parameter"),
        ({"model": "x" * 5000, "gpu": "H200"}, 400, "bad-parameter"),
        ({"model": "%_%", "gpu": "H200"}, 404, "not-found"),
    ],
)
def test_bad_resolver_requests_are_problems(served, params, status, slug):
    client = served[0]
    reply = client.get("/api/v1/resolve/serving", params=params)
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"].startswith("application/problem+json")
    assert reply.json()["type"] == f"/problems/{slug}"


def test_serving_run_json_ranks_it_in_its_cohort(served):
    client, lines, seed, _ = served
    runs = _rows(lines, "serving_runs")
    run = random.Random(seed).choice(runs)
    body = client.get(f"/api/v1/serving-runs/{run['runDigest'][:15]}").json()
    assert body["id"] == run["id"] and body["digest"] == digest(run["manifest"])
    cohort = sorted(
        (r["manifest"]["spec"]["measurements"][0]["value"] for r in runs if r["cohortKey"] == run["cohortKey"]),
        reverse=True,
    )
    mine = run["manifest"]["spec"]["measurements"][0]["value"]
    assert body["rank"]["rank"] == sorted(set(cohort), reverse=True).index(mine) + 1, seed
    assert body["evidence"]["level"] == "reported"
    assert (
        client.get(f"/r/{run['runDigest']}", follow_redirects=False).headers["location"] == f"/serving-runs/{run['id']}"
    )
    assert client.get("/api/v1/serving-runs/sha256:00000000").status_code == 404
    assert client.get("/api/v1/serving-runs/abc").status_code == 400  # too short to be a safe prefix


def test_model_page_lists_the_best_result_per_gpu(served):
    client, lines, seed, _ = served
    model = next(r for r in _rows(lines, "model_revisions") if r["slug"] == "toy-llm-7b")
    body = client.get("/api/v1/models/toy-llm-7b").json()
    for gpu in body["gpus"]:
        values = [
            r["manifest"]["spec"]["measurements"][0]["value"] / r["totalAccelerators"]
            for r in _rows(lines, "serving_runs")
            if r["modelRevisionId"] == model["id"] and r["acceleratorModel"] == gpu["gpu"]
        ]
        assert gpu["best"]["throughputPerGpu"] == pytest.approx(max(values)), seed
    hostile = client.get("/models").text
    assert HOSTILE not in hostile and "&lt;script&gt;" in hostile


@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_serving_pages_in_chromium(served):
    client, lines, _, store = served
    if store.dialect != "sqlite":
        pytest.skip("one browser pass is enough: the pages are the same over PostgreSQL")
    with serving(create_app(store=store)) as base, chromium() as browser:
        page = browser.new_page(base_url=base)
        alerts: list[str] = []
        page.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
        page.goto("/serving/resolve")
        page.select_option("select[name=model]", "toy-llm-70b")
        page.fill("input[name=gpu]", "H200")
        page.click("form.resolve button")
        page.wait_for_selector("table[data-table=frontier]")
        assert page.locator("svg.plot circle").count() == page.locator("table[data-table=frontier] tbody tr").count()
        expected, _ = _expected_frontier(lines, "toy-llm-70b", "h200")
        assert page.locator("tr.frontier").count() == len(expected)
        page.locator("tr.frontier a").first.click()
        page.wait_for_selector("[data-field=per-gpu]")
        assert page.locator("table[data-table=cohort] tr.this").count() == 1
        assert page.locator("[data-field=digest]").inner_text().startswith("sha256:")
        page.goto("/models")
        assert page.locator("table[data-table=models] tbody tr").count() == 2
        assert alerts == []
