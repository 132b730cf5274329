"""Entity pages and their JSON twins, the records ledger, feed, badges, docs and compare of 2-8 runs."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from xml.etree import ElementTree as ET

import pytest
from sqlalchemy import select
from test_web_api import assert_problem
from web_storefill import HOSTILE_AUTHOR, HOSTILE_TITLE

from kernelindex.records.refusal import Refusal
from kernelindex.store.tables import projects
from kernelindex.views.changes import changes_page
from kernelindex.views.project import project_view

ATOM = "{http://www.w3.org/2005/Atom}"


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def assert_inert(page: str) -> None:
    """Record text shows as text: no live tag, no javascript: link."""
    assert "<script>window" not in page and "<img src=x" not in page
    assert 'href="javascript:' not in page.lower()


# ---------------------------------------------------------------- implementation, project, GPU


def test_implementation_json_and_page(client, filled):
    body = client.get("/api/v1/implementations/impl-fast").json()
    assert body["slug"] == "impl-fast" and body["title"] == "fast softmax" and body["language"] == "triton"
    assert body["project"]["slug"] == "hostile-project"
    # fast leads its protocol-v1 group and pack leads the pack workload's group: best rank 1 on the H200.
    assert [(b["gpu"]["slug"], b["rank"]) for b in body["bestRunPerGpu"]] == [("nvidia-h200", 1)]
    assert body["bestRank"] == 1 and body["runCount"] == 5
    assert sum(body["evidenceLevels"].values()) == body["runCount"]
    assert body["deployable"] is False and "no install command" in body["deployableReason"]
    assert body["sourceLinks"][0]["href"] == "https://example.org/kernels?a=1&b=2"
    assert client.get(f"/api/v1/implementations/{body['id']}").json()["digest"] == body["digest"]
    assert client.get(f"/api/v1/implementations/{body['digest']}").json()["id"] == body["id"]
    page = client.get("/implementations/impl-fast").text
    assert "Best run per GPU" in page and 'href="/gpus/nvidia-h200"' in page and "not deployable" in text_of(page)


def test_hostile_implementation_is_inert(client):
    body = client.get("/api/v1/implementations/impl-hostile").json()
    assert body["title"] == HOSTILE_TITLE and body["authors"] == [HOSTILE_AUTHOR]
    assert body["sourceLinks"][0]["href"] is None  # javascript: is never a link
    page = client.get("/implementations/impl-hostile").text
    assert_inert(page)
    assert HOSTILE_TITLE in text_of(page)


def test_project_json_and_page(client, filled):
    body = client.get("/api/v1/projects/hostile-project").json()
    assert body["name"] == HOSTILE_TITLE
    assert {i["slug"] for i in body["implementations"]} == {"impl-fast", "impl-hostile", "impl-slow"}
    held = {h["runId"] for h in body["recordsHeld"]}
    assert held == {filled.runs["fast"], filled.runs["v2-only"], filled.runs["pack"]}
    page = client.get("/projects/hostile-project").text
    assert_inert(page)
    assert "3 records held" in text_of(page)


def test_project_gained_leads_within_thirty_days(web_filled, filled):
    store = web_filled[0]
    with store.engine.connect() as conn:
        row = conn.execute(select(projects).where(projects.c.slug == "hostile-project")).first()
        soon = project_view(conn, row, now=datetime(2026, 4, 15, tzinfo=UTC))
        later = project_view(conn, row, now=datetime(2026, 6, 1, tzinfo=UTC))
    # The leader events were recorded on 2026-04-01: inside the window on 04-15, outside it in June.
    assert {g.runId for g in soon.gained} == {filled.runs["fast"], filled.runs["v2-only"], filled.runs["pack"]}
    assert soon.lost == [] and later.gained == []


def test_gpus_coverage_and_gpu_page(client, filled):
    body = client.get("/api/v1/gpus").json()
    slugs = [g["slug"] for g in body["gpus"]]
    assert "nvidia-h200" in slugs and body["coverage"]["gpus"] == slugs
    row = next(o for o in body["coverage"]["operations"] if o["slug"] == "synthetic-softmax-rows")
    listed = client.get("/api/v1/runs", params={"workload": filled.workload_id, "limit": 200}).json()["items"]
    verified = [r for r in listed if r["evidence"]["level"] in ("verified", "replicated")]
    assert row["cells"]["nvidia-h200"] == {"any": len(listed), "verified": len(verified)} and len(listed) == 9
    assert any(a["name"] == "sm_90" and "nvidia-h200" in a["gpus"] for a in body["architectures"])
    gpu = client.get("/api/v1/gpus/nvidia-h200").json()
    assert gpu["model"] == "NVIDIA H200" and gpu["architectures"] == ["sm_90"]
    assert {b["runId"] for b in gpu["bestRuns"]} >= {filled.runs["fast"], filled.runs["v2-only"], filled.runs["pack"]}
    page = client.get("/gpus").text
    assert 'data-cell="synthetic-softmax-rows|nvidia-h200"' in page
    assert_inert(client.get("/gpus/nvidia-h200").text)


@pytest.mark.parametrize(
    "path, what",
    [
        ("/api/v1/implementations/no-such-impl", "implementation"),
        ("/api/v1/projects/nope", "project"),
        ("/api/v1/gpus/nope-9000", "GPU"),
        ("/badges/implementations/nope.svg", "implementation"),
    ],
)
def test_unknown_entities_are_404(client, path, what):
    response = client.get(path)
    assert response.status_code == 404 and what in response.text


def test_badge_is_svg_with_rank_and_level(client):
    response = client.get("/badges/implementations/impl-fast.svg")
    assert response.status_code == 200 and response.headers["content-type"].startswith("image/svg+xml")
    root = ET.fromstring(response.text)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts[0] == "kernelindex" and texts[1].startswith("#1 · ")


# ---------------------------------------------------------------- ledger, feed


def test_ledger_lists_every_kind_newest_first(client, filled):
    items = client.get("/api/v1/records", params={"limit": 200}).json()["items"]
    kinds = {i["kind"] for i in items}
    assert {"new_run", "new_leader", "retraction", "correction"} <= kinds
    times = [datetime.fromisoformat(i["at"].replace("Z", "+00:00")) for i in items]
    assert times == sorted(times, reverse=True)
    assert len({i["id"] for i in items}) == len(items)
    retraction = next(i for i in items if i["kind"] == "retraction")
    assert retraction["run"]["id"] == filled.runs["retracted"] and "<b>really</b>" in retraction["summary"]
    correction = next(i for i in items if i["kind"] == "correction")
    assert correction["run"]["id"] == filled.runs["newer"]
    assert correction["run"]["permalink"].endswith(f"/r/{correction['run']['digest']}")


def test_since_is_inclusive_and_needs_a_zone(client, filled):
    at = "2026-03-06T00:00:00Z"  # the retraction's time

    def ids(since):
        return {i["id"] for i in client.get("/api/v1/records", params={"since": since, "limit": 200}).json()["items"]}

    inclusive = ids(at)
    assert any(i.startswith("event:") for i in inclusive)
    retraction_ids = {i["id"] for i in client.get("/api/v1/records", params={"kind": "retraction"}).json()["items"]}
    assert retraction_ids & inclusive
    assert not retraction_ids & ids("2026-03-06T00:00:00.001Z")
    assert ids("2026-03-06T01:00:00+01:00") == inclusive  # the same instant written with an offset
    assert ids("2026-03-06") == inclusive  # a date is its midnight UTC
    body = client.get("/api/v1/records", params={"since": at}).json()
    assert body["since"] == "2026-03-06T00:00:00.000Z"
    for bad in ("2026-03-06T00:00:00", "yesterday", "2026-13-01", "x" * 41):
        assert_problem(client.get("/api/v1/records", params={"since": bad}), 400, "bad-since")


def test_ledger_filters_and_paging(client, filled):
    assert_problem(client.get("/api/v1/records", params={"kind": "bogus"}), 400, "bad-kind")
    assert client.get("/api/v1/records", params={"gpu": "nope"}).json()["items"] == []  # a GPU is free-form text
    assert_problem(client.get("/api/v1/records", params={"operation": "nope"}), 404, "not-found")
    assert_problem(client.get("/api/v1/records", params={"cursor": "junk"}), 400, "bad-cursor")
    assert_problem(client.get("/api/v1/records", params={"limit": 0}), 400, "invalid-parameter")
    lab = client.get("/api/v1/records", params={"source": "test-lab", "limit": 200}).json()["items"]
    assert lab and all(i["detail"].get("source") in (None, "test-lab") for i in lab)
    on_op = client.get("/api/v1/records", params={"operation": "synthetic-softmax-rows", "limit": 200}).json()["items"]
    assert on_op and all(i["operation"]["slug"] == "synthetic-softmax-rows" for i in on_op if i["operation"])
    everything = [i["id"] for i in client.get("/api/v1/records", params={"limit": 200}).json()["items"]]
    walked, url = [], "/api/v1/records?limit=3"
    while url:
        body = client.get(url).json()
        walked += [i["id"] for i in body["items"]]
        url = body["links"]["next"]
    assert walked == everything


@pytest.mark.parametrize(
    "params, status, slug",
    [
        ({"source": "no-such-source"}, 404, "not-found"),
        ({"kind": "bogus"}, 400, "bad-kind"),
        ({"kind": "k" * 301}, 400, "too-long"),
        ({"source": "s" * 301}, 400, "too-long"),
        ({"operation": "no-such-operation"}, 404, "not-found"),
    ],
)
def test_the_api_feed_and_the_tools_read_the_ledger_filters_alike(client, web_filled, params, status, slug):
    """One reading of the filters (views.changes.ledger_filter): the same refusal, word for word."""
    body = assert_problem(client.get("/api/v1/records", params=params), status)
    feed = client.get("/records/feed.xml", params=params)
    assert feed.status_code == status and body["type"].endswith(slug), body
    with web_filled[0].read() as conn, pytest.raises(Refusal) as refused:
        changes_page(conn, "http://testserver", **params)
    assert refused.value.message == body["detail"]


def test_ledger_page_and_feed(client, filled):
    page = client.get("/records", params={"gpu": "nvidia-h200"}).text
    assert_inert(page)
    assert 'data-kind="retraction"' in page and 'type="application/atom+xml"' in page
    feed = client.get("/records/feed.xml")
    assert feed.headers["content-type"].startswith("application/atom+xml")
    root = ET.fromstring(feed.content)
    entries = root.findall(f"{ATOM}entry")
    assert 0 < len(entries) <= 50
    titles = [e.find(f"{ATOM}title").text for e in entries]
    assert any(HOSTILE_TITLE in t for t in titles)  # kept as text; ElementTree parsed it as such
    assert client.get("/records/feed.xml", params={"since": "2026-01-01"}).status_code == 400


# ---------------------------------------------------------------- docs and discovery


def test_api_index_links_resolve(client):
    body = client.get("/api/v1/").json()
    assert body["docs"] == "/docs/api"
    for path in body["collections"].values():
        assert client.get(path).status_code == 200, path
    assert client.get(body["openapi"]).status_code == 200


def test_docs_pages(client):
    docs = text_of(client.get("/docs").text)
    for heading in (
        "What the index is",
        "The comparison key",
        "Ranking and ties",
        "Evidence levels",
        "The harness and its trust boundary",
        "How to submit",
    ):
        assert heading in docs
    reference = client.get("/docs/api").text
    openapi = client.get("/api/v1/openapi.json").json()
    for path in openapi["paths"]:
        assert html.escape(path) in reference or path in reference, path
    assert 'id="model-LedgerPage"' in reference and 'id="model-Implementation"' in reference
    header = client.get("/").text
    assert 'href="/docs/api">API</a>' in header and '/api/v1/openapi.json">API' not in header


def test_openapi_models_are_typed(client):
    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    entry = schemas["LedgerEntry"]["properties"]
    assert entry["at"]["type"] == "string" and "kind" in schemas["LedgerEntry"]["required"]
    assert schemas["Implementation"]["properties"]["deployable"]["type"] == "boolean"
    assert "Compare" in schemas and "ApiIndex" in schemas and "GpuIndex" in schemas


def test_llms_sitemap_robots_favicon(client):
    assert "/api/v1/" in client.get("/llms.txt").text
    robots = client.get("/robots.txt").text
    assert "Sitemap: http://testserver/sitemap.xml" in robots
    root = ET.fromstring(client.get("/sitemap.xml").content)
    locs = {el.text for el in root.iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")}
    assert {
        "http://testserver/gpus/nvidia-h200",
        "http://testserver/implementations/impl-fast",
        "http://testserver/docs",
    } <= locs
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert 'rel="icon"' in client.get("/").text


# ---------------------------------------------------------------- compare


def test_compare_three_runs_of_one_group(client, filled):
    ids = [filled.runs[n] for n in ("fast", "hostile", "slow")]
    body = client.get("/api/v1/compare", params=[("run", i) for i in ids]).json()
    assert body["comparable"] and body["ratio"] is None and len(body["groups"]) == 1
    ratios = {r["runId"]: r["ratio"] for r in body["groups"][0]["ratios"]}
    assert ratios[ids[0]] == 1.0
    assert ratios[ids[1]] == pytest.approx(filled.medians["hostile"] / filled.medians["fast"], rel=1e-3)
    assert body["markdown"].startswith("| field | A | B | C |")
    md = client.get("/compare.md", params=[("run", i) for i in ids])
    assert md.headers["content-type"].startswith("text/markdown") and md.text == body["markdown"]
    page = client.get("/compare", params=[("run", i) for i in ids]).text
    assert_inert(page)
    assert "Compare 3 runs" in page


def test_compare_across_groups_gives_no_ratio(client, filled):
    body = client.get("/api/v1/compare", params={"run": [filled.runs["fast"], filled.runs["v2-only"]]}).json()
    assert not body["comparable"] and body["ratio"] is None and body["statement"] is None
    assert all(g["ratios"] == [] for g in body["groups"])
    page = text_of(client.get("/compare", params={"a": filled.seed_runs["4273"], "b": filled.seed_runs["19969"]}).text)
    assert "Not comparable" in page and "better than" not in page and "value(A) / value(B) =" not in page


def test_compare_counts(client, filled):
    assert_problem(client.get("/api/v1/compare", params={"run": filled.runs["fast"]}), 400, "bad-run-count")
    assert_problem(client.get("/api/v1/compare", params={"run": [filled.runs["fast"]] * 9}), 400, "bad-run-count")
    eight = sorted(set(filled.runs.values()) | set(filled.seed_runs.values()))[:8]
    assert len(eight) == 8 and client.get("/api/v1/compare", params={"run": eight}).status_code == 200
    twice = assert_problem(client.get("/api/v1/compare", params={"run": [eight[0], eight[1], eight[0]]}), 400)
    assert twice["type"] == "/problems/duplicate-run" and "same run" in twice["detail"]


# ---------------------------------------------------------------- run page additions


def test_run_page_additions(client, filled):
    run_id = filled.runs["fast"]
    body = client.get(f"/api/v1/runs/{run_id}").json()
    assert body["tensors"] == [
        {"name": "x", "kind": "tensor", "dtype": "fp32", "shape": [8192, 4096], "strides": None, "alignmentBytes": None}
    ]
    assert [p["part"] for p in body["comparisonProfile"]] == [
        "operation",
        "workload",
        "protocol",
        "environment",
        "correctness",
        "metric",
    ]
    assert body["sourceTerms"]["licence"] == "CC0-1.0" and body["sourceTerms"]["href"] is None  # javascript: URL
    page = client.get(f"/runs/{run_id}").text
    assert "(unit ns)" not in page
    assert re.search(r'<details class="cite" id="cite">\s*<summary>Cite this record</summary>', page)
    assert 'data-copy-target="run-digest"' in page and 'data-table="tensors"' in page
    assert "8192 × 4096" in page and "licence CC0-1.0" in text_of(page)
    group = client.get(f"/workloads/{filled.workload_id}").text
    assert "<th>SOL score</th><th>Speedup</th>" in group


def test_latest_runs_are_sorted_by_date(client):
    page = client.get("/").text
    latest = page.split("<h2>Latest runs</h2>", 1)[1].split("</table>", 1)[0]
    dates = re.findall(r'<time datetime="([^"]+)"', latest)
    assert dates and dates == sorted(dates, reverse=True)
