"""Requests the site answers strictly, alike on the API and the pages: a parameter no route takes, a
filter naming no stored record, a choice the operation lacks, bytes that are not UTF-8; and what the
operation page counts. Over a store of its own (the small web store, a serving catalog and a rerun
request), so every GET route has a real value for each path parameter."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from test_web_api import assert_problem
from test_web_protocol import _walk
from web_storefill import fill

from kernelindex.ingest.catalog import import_catalog
from kernelindex.records.refusal import Refusal, RefusalKind
from kernelindex.services import harness_adapter as harness
from kernelindex.services import queue as queue_service
from kernelindex.store.database import open_store
from kernelindex.store.queue.tables import rerun_requests
from kernelindex.store.reads.lookup import resolve_operation
from kernelindex.store.tables import artifacts
from kernelindex.views.operation import operation_view
from kernelindex.views.origins import load_origins
from kernelindex.web.app import create_app
from serving_kit import serving_lines, write_lines
from store_fixtures import BACKENDS, database_url

FIXTURES = Path(__file__).resolve().parents[1] / "harness" / "fixtures"
OP = "synthetic-softmax-rows"
NOWHERE = "no-such-record-anywhere"
UNKNOWN = "unknownparam"


@pytest.fixture(scope="module", params=BACKENDS)
def strict(request, tmp_path_factory):
    """(client, store, Filled, serving lines) over the small web store, a serving catalog and one rerun request."""
    seed = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))
    print(f"strict requests store seed: {seed} (set KERNELINDEX_TEST_SEED to repeat)")
    folder = tmp_path_factory.mktemp("strict")
    store = open_store(database_url(request.param, folder))
    filled = fill(store, seed)
    lines = serving_lines(seed)
    import_catalog(store, write_lines(folder / "serving.jsonl.zst", lines))
    queue_service.submit(
        store,
        queue_service.Submission(
            solution=harness.inline_solution(FIXTURES / "solutions" / "vector_add_torch" / "solution.json"),
            problem_files=harness.problem_files(FIXTURES / "problems" / "vector_add"),
        ),
    )
    with TestClient(create_app(store=store), raise_server_exceptions=False) as client:
        yield client, store, filled, lines
    store.close()


def _rows(lines, table):
    return [line["row"] for line in lines if line["table"] == table]


# ---------------------------------------------------------------- the operation page


def test_the_operation_and_its_related_operations_count_workloads_as_the_listing_does(strict):
    client = strict[0]
    listed = {o["slug"]: o["workloadCount"] for o in client.get("/api/v1/operations").json()["items"]}
    assert listed[OP] == 1 and listed[OP + "-pack"] == 1
    op = client.get(f"/api/v1/operations/{OP}").json()
    assert op["workloadCount"] == listed[OP]
    assert [(r["slug"], r["workloadCount"]) for r in op["related"]] == [(OP + "-pack", listed[OP + "-pack"])]


def test_a_workload_or_group_the_operation_lacks_is_a_404_naming_it(strict):
    client, store, filled, _ = strict
    op = client.get(f"/api/v1/operations/{OP}").json()
    key = op["group"]["comparisonKey"]
    chosen = client.get(f"/api/v1/operations/{OP}", params={"workload": filled.workload_id, "group": key}).json()
    assert chosen["chosenWorkload"]["id"] == filled.workload_id and chosen["group"]["comparisonKey"] == key
    for parameter, value in (("workload", filled.other_workload_id), ("workload", NOWHERE), ("group", NOWHERE)):
        body = assert_problem(client.get(f"/api/v1/operations/{OP}", params={parameter: value}), 404, "not-found")
        assert body["parameter"] == parameter and f"{parameter}={value!r}" in body["detail"]
        page = client.get(f"/operations/{OP}", params={parameter: value})
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
        assert value in page.text
    # the MCP tool get_operation builds the same view: it gets the same refusal
    with store.read() as conn, pytest.raises(Refusal) as refused:
        operation_view(conn, resolve_operation(conn, OP), load_origins(), group=NOWHERE)
    assert refused.value.kind is RefusalKind.NOT_FOUND and NOWHERE in refused.value.message


# ---------------------------------------------------------------- bytes that are not UTF-8


@pytest.mark.parametrize(
    "url, parameter",
    [
        ("/api/v1/runs?operation=%ff", "operation"),
        ("/api/v1/search?q=%ff", "q"),
        ("/api/v1/search?q=a%C0%80", "q"),  # an overlong NUL
        ("/api/v1/search?q=%ED%A0%80", "q"),  # a surrogate
        ("/api/v1/runs?limit=1&source=%e2%82", "source"),  # a character cut short
        ("/api/v1/runs?%ff=1", "\ufffd"),
        ("/api/v1/runs/%ff%fe", None),
        ("/api/v1/operations/abc%ff", None),
    ],
)
def test_escapes_that_are_not_utf8_are_a_400_naming_the_parameter_or_the_path(strict, url, parameter):
    body = assert_problem(strict[0].get(url), 400, "bad-encoding")
    assert body.get("parameter") == parameter
    assert ("the path" in body["detail"]) == (parameter is None)


@pytest.mark.parametrize("url", ["/runs/%ff", "/?q=%ff", "/operations/x?workload=%fe", "/records?source=%c3"])
def test_pages_answer_escapes_that_are_not_utf8_with_their_400_page(strict, url):
    page = strict[0].get(url)
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    assert "UTF-8" in page.text


def test_escaped_utf8_is_still_read_as_text(strict):
    answer = strict[0].get("/api/v1/search?q=%E2%82%AC%20softmax")
    assert answer.status_code == 200 and answer.json()["query"]["text"] == "€ softmax"


# ---------------------------------------------------------------- unknown parameters, every GET route

SIGNED = {"/api/v1/runner/blobs/{digest}"}  # a runner's signed call: 401 unsigned, the query checked first


def _valid_requests(client, store, filled, lines) -> dict[str, str]:
    """A request each GET route with path parameters (or required query parameters) answers with success."""
    run, other = filled.runs["fast"], filled.runs["slow"]
    detail = client.get(f"/api/v1/runs/{run}").json()
    digest, key = detail["digest"], detail["identity"]["comparisonKey"]
    project = client.get("/api/v1/projects").json()["items"][0]["slug"]
    model, serving_run = _rows(lines, "model_revisions")[0]["slug"], _rows(lines, "serving_runs")[0]["id"]
    export = client.get("/api/v1/exports/latest.json").json()["url"]
    with store.read() as conn:
        artifact = conn.scalar(select(artifacts.c.content_digest).where(artifacts.c.content.is_not(None)).limit(1))
        request_id, problem = conn.execute(select(rerun_requests.c.id, rerun_requests.c.problem_digest)).one()
    return {
        "/api/v1/runs/{run_id}": f"/api/v1/runs/{run}",
        "/api/v1/workloads/{workload_id}": f"/api/v1/workloads/{filled.workload_id}",
        "/api/v1/operations/{slug}": f"/api/v1/operations/{OP}",
        "/api/v1/rankings": f"/api/v1/rankings?target={OP}",
        "/api/v1/rankings/{comparison_key}": f"/api/v1/rankings/{key}",
        "/api/v1/compare": f"/api/v1/compare?run={run}&run={other}",
        "/api/v1/sources/{slug}": "/api/v1/sources/test-lab",
        "/api/v1/implementations/{slug}": "/api/v1/implementations/impl-fast",
        "/api/v1/projects/{slug}": f"/api/v1/projects/{project}",
        "/api/v1/gpus/{slug}": "/api/v1/gpus/nvidia-h200",
        "/runs/{run_id}": f"/runs/{run}",
        "/workloads/{workload_id}": f"/workloads/{filled.workload_id}",
        "/rankings/{comparison_key}": f"/rankings/{key}",
        "/compare.md": f"/compare.md?run={run}&run={other}",
        "/operations/{slug}": f"/operations/{OP}",
        "/sources/{slug}": "/sources/test-lab",
        "/implementations/{slug}": "/implementations/impl-fast",
        "/projects/{slug}": f"/projects/{project}",
        "/gpus/{slug}": "/gpus/nvidia-h200",
        "/badges/implementations/{slug}.svg": "/badges/implementations/impl-fast.svg",
        "/problems/{slug}": "/problems/not-found",
        "/api/v1/resolve/serving": f"/api/v1/resolve/serving?model={model}&gpu=h200",
        "/serving/resolve.svg": f"/serving/resolve.svg?model={model}&gpu=h200",
        "/api/v1/serving-runs/{run_id}": f"/api/v1/serving-runs/{serving_run}",
        "/serving-runs/{run_id}": f"/serving-runs/{serving_run}",
        "/api/v1/models/{ident}": f"/api/v1/models/{model}",
        "/models/{ident}": f"/models/{model}",
        "/artifacts/{digest}": f"/artifacts/{artifact}",
        "/api/v1/exports/catalog-{hex_digest}.jsonl.zst": export,
        "/api/v1/log/proof/inclusion": f"/api/v1/log/proof/inclusion?digest={digest}",
        "/api/v1/log/proof/consistency": "/api/v1/log/proof/consistency?from=0",
        "/api/v1/runs/{run_id}/evidence": f"/api/v1/runs/{run}/evidence",
        "/api/v1/records/{digest}/signatures": f"/api/v1/records/{digest}/signatures",
        "/r/{digest}": f"/r/{digest}",
        "/api/v1/rerun-requests/{request_id}": f"/api/v1/rerun-requests/{request_id}",
        "/queue/{request_id}": f"/queue/{request_id}",
        "/api/v1/runner/blobs/{digest}": f"/api/v1/runner/blobs/{problem}",
    }


def test_every_get_route_refuses_a_parameter_it_does_not_take(strict):
    """Each GET route of the app, asked as it succeeds and then with one parameter more: 400
    unknown-parameter naming it, so a typo in a filter never returns everything."""
    client, store, filled, lines = strict
    routes = sorted({path for path, methods in _walk(client.app.routes) if "GET" in methods})
    valid = _valid_requests(client, store, filled, lines)
    assert not set(valid) - set(routes), "a request for a route the app no longer has"
    assert len(routes) > 70
    for route in routes:
        url = valid.get(route, route)
        assert "{" not in url, f"{route}: add a request with real path values to _valid_requests"
        baseline = client.get(url, follow_redirects=False)
        succeeds = baseline.status_code == 401 if route in SIGNED else baseline.status_code < 400
        assert succeeds, (url, baseline.status_code, baseline.text[:300])
        refused = client.get(f"{url}{'&' if '?' in url else '?'}{UNKNOWN}=1", follow_redirects=False)
        assert refused.status_code == 400, (url, refused.status_code, refused.text[:300])
        if url.startswith("/api/"):
            assert assert_problem(refused, 400, "unknown-parameter")["parameters"] == [UNKNOWN], url
        else:
            assert refused.headers["content-type"].startswith("text/html") and UNKNOWN in refused.text, url


def test_the_serving_resolver_page_names_its_own_parameters_before_it_is_asked(strict):
    client = strict[0]
    form = client.get("/serving/resolve", params={"input_len": 100})
    assert form.status_code == 200 and 'name="model"' in form.text
    for url in ("/serving/resolve", "/api/v1/resolve/serving"):
        refused = client.get(url, params={"input_len": 100, "colour": "red"})
        assert refused.status_code == 400 and "allowed: gpu, input_len, model, output_len" in refused.text, url


# ---------------------------------------------------------------- filters


def _named(strict) -> list[tuple[str, str, str, str]]:
    """(listing, filter, the kind of record it names, a value naming one that exists)."""
    _, _, filled, lines = strict
    config = _rows(lines, "serving_configurations")[0]["id"]
    model = _rows(lines, "model_revisions")[0]["slug"]
    return [
        ("/api/v1/runs", "operation", "operation", OP),
        ("/api/v1/runs", "workload", "workload", filled.workload_id),
        ("/api/v1/runs", "source", "source", "test-lab"),
        ("/api/v1/workloads", "operation", "operation", OP),
        ("/api/v1/records", "operation", "operation", OP),
        ("/api/v1/records", "source", "source", "test-lab"),
        ("/records", "operation", "operation", OP),
        ("/records", "source", "source", "test-lab"),
        ("/records/feed.xml", "source", "source", "test-lab"),
        ("/api/v1/implementations", "operation", "operation", OP),
        ("/api/v1/implementations", "project", "project", "hostile-project"),
        ("/implementations", "operation", "operation", OP),
        ("/implementations", "project", "project", "hostile-project"),
        ("/api/v1/serving-runs", "model", "model", model),
        ("/api/v1/serving-runs", "source", "source", "toy-serving"),
        ("/api/v1/serving-runs", "configuration", "serving configuration", config),
        ("/serving", "model", "model", model),
        ("/serving", "source", "source", "toy-serving"),
        ("/serving", "configuration", "serving configuration", config),
        ("/api/v1/serving-configurations", "model", "model", model),
    ]


def test_a_filter_naming_no_stored_record_is_a_404_on_every_listing(strict):
    client = strict[0]
    for listing, name, kind, known in _named(strict):
        found = client.get(listing, params={name: known})
        assert found.status_code == 200, (listing, name, found.text[:300])
        if listing.startswith("/api/"):
            assert found.json()["items"], (listing, name)
        refused = client.get(listing, params={name: NOWHERE})
        assert refused.status_code == 404, (listing, name, refused.status_code)
        if listing.startswith("/api/"):
            body = assert_problem(refused, 404, "not-found")
            assert body["resource"] == kind and body["detail"].startswith(f"no {kind} with ")
            assert repr(NOWHERE) in body["detail"], body
        else:
            assert f"no {kind} with" in refused.text and NOWHERE in refused.text, listing


@pytest.mark.parametrize(
    "listing, params",
    [
        ("/api/v1/runs", {"hardware": "no-such-gpu"}),
        ("/api/v1/runs", {"comparisonKey": "sha256:" + "0" * 64}),
        ("/api/v1/records", {"gpu": "no-such-gpu"}),
        ("/api/v1/operations", {"family": "no-such-family"}),
        ("/api/v1/projects", {"name": "no-such-name"}),
        ("/api/v1/serving-runs", {"gpu": "no-such-gpu"}),
        ("/api/v1/serving-runs", {"scenario": "no-such-scenario"}),
        ("/api/v1/serving-configurations", {"stack": "no-such-stack"}),
    ],
)
def test_a_free_form_filter_matching_nothing_is_an_empty_page(strict, listing, params):
    answer = strict[0].get(listing, params=params)
    assert answer.status_code == 200 and answer.json()["items"] == [], answer.text[:300]


def test_the_records_page_shows_an_unknown_gpu_as_an_empty_ledger(strict):
    page = strict[0].get("/records", params={"gpu": "no-such-gpu"})
    assert page.status_code == 200 and 'data-kind="' not in page.text


# ---------------------------------------------------------------- wording


@pytest.mark.parametrize(
    "route, what",
    [
        ("/api/v1/operations/{}", "an operation"),
        ("/api/v1/implementations/{}", "an implementation"),
        ("/api/v1/workloads/{}", "a workload"),
        ("/api/v1/runs/{}", "a run"),
    ],
)
def test_a_prefix_too_short_is_refused_in_good_english(strict, route, what):
    body = assert_problem(strict[0].get(route.format("abc")), 400, "digest-prefix-too-short")
    assert f"'abc' is too short to name {what}:" in body["detail"]
