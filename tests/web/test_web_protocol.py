"""HTTP as clients use it: HEAD on every GET route, CORS on the read API, bounded integers, one
validation mapper, and absolute links that take the trusted public URL instead of ``Host``."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from kernelindex.store.evidence.records import create_api_key
from kernelindex.web.app import create_app

PROBLEM = "application/problem+json"
HUGE = "9223372036854775808"  # 2**63: one past what SQLite stores


def _walk(routes, prefix=""):
    for r in routes:
        if isinstance(r, APIRoute):
            yield prefix + r.path, r.methods
        elif hasattr(r, "original_router"):  # an included router
            yield from _walk(r.original_router.routes, prefix + r.include_context.prefix)


def get_routes(app) -> list[str]:
    """Every GET route without path parameters (those are covered by the fuzz and the crawl)."""
    return sorted({path for path, methods in _walk(app.routes) if "GET" in methods and "{" not in path})


def test_head_answers_like_get_without_a_body(client):
    paths = get_routes(client.app)
    assert "/api/v1/runs" in paths and "/" in paths
    for path in paths:
        got = client.get(path)
        head = client.head(path)
        assert head.status_code == got.status_code, path
        assert head.content == b"", path
        assert head.headers.get("content-type") == got.headers.get("content-type"), path


def test_a_wrong_method_says_which_are_allowed(client):
    response = client.delete("/api/v1/runs")
    assert response.status_code == 405 and response.headers["content-type"].startswith(PROBLEM)
    assert "GET" in response.headers["allow"]
    assert response.json()["title"] == "Method not allowed"


def test_read_api_is_open_to_any_origin_and_writes_are_not(client):
    origin = {"Origin": "https://elsewhere.example"}
    read = client.get("/api/v1/runs", headers=origin)
    assert read.status_code == 200 and read.headers["access-control-allow-origin"] == "*"
    preflight = client.options(
        "/api/v1/runs",
        headers={**origin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "accept"},
    )
    assert preflight.status_code == 200, preflight.text
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "GET" in preflight.headers["access-control-allow-methods"]
    write = client.options("/api/v1/rerun-requests", headers={**origin, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in write.headers
    assert "access-control-allow-origin" not in client.get("/runs", headers=origin).headers  # pages: same-origin


@pytest.mark.parametrize(
    "path",
    [
        f"/api/v1/rerun-requests?before={HUGE}",
        f"/api/v1/rerun-requests?before=-{HUGE}",
        f"/queue?before={HUGE}",
        "/api/v1/rerun-requests?limit=0",
        f"/api/v1/runs?limit={HUGE}",
        "/api/v1/runs?limit=abc",
        "/api/v1/runs?limit=0",
        f"/api/v1/rankings?target=x&limit={HUGE}",
        "/api/v1/runs?status=exploded",
        "/api/v1/rerun-requests?state=exploded",
    ],
)
def test_bad_integers_and_words_are_400_problems(client, path):
    response = client.get(path)
    assert response.status_code == 400, (path, response.status_code, response.text[:300])
    if path.startswith("/api/"):
        body = response.json()
        assert response.headers["content-type"].startswith(PROBLEM) and body["title"] == "Bad request"
        assert body["type"] in ("/problems/invalid-parameter", "/problems/bad-parameter")


def test_limit_abc_and_limit_0_are_one_problem(client):
    abc, zero = client.get("/api/v1/runs?limit=abc").json(), client.get("/api/v1/runs?limit=0").json()
    assert abc["type"] == zero["type"] == "/problems/invalid-parameter"
    assert abc["errors"][0]["where"] == zero["errors"][0]["where"] == "query.limit"


def test_absolute_links_take_the_public_url_not_the_host_header(web_filled):
    forged = {"Host": "attacker.example"}
    with TestClient(create_app(store=web_filled[0], public_url="https://kernels.example.org/")) as c:
        llms = c.get("/llms.txt", headers=forged).text
        sitemap = c.get("/sitemap.xml", headers=forged).text
        listing = c.get("/api/v1/runs?limit=1", headers=forged).json()
    assert "attacker.example" not in llms + sitemap
    assert "https://kernels.example.org/" in llms and "<loc>https://kernels.example.org/" in sitemap
    assert listing["links"]["next"].startswith("https://kernels.example.org/api/v1/runs?")


def test_a_bad_public_url_is_refused_at_start(web_filled):
    with pytest.raises(ValueError, match="public_url: 'kernels.example.org' is not an http"):
        create_app(store=web_filled[0], public_url="kernels.example.org")


def test_write_refusals_are_titled_and_authentication_comes_first(client, web_filled):
    url = f"/api/v1/runs/{web_filled[1].runs['fast']}/corrections"
    unkeyed = client.post(url, content="not json at all", headers={"Content-Type": "text/plain"})
    assert unkeyed.status_code == 401 and unkeyed.json()["title"] == "Authentication required"
    with web_filled[0].begin() as conn:
        token = create_api_key(conn, "protocol reporter", frozenset({"report"})).token
    keyed = {"Authorization": f"Bearer {token}"}
    wrong_type = client.post(url, content="{}", headers={**keyed, "Content-Type": "text/plain"})
    assert wrong_type.status_code == 415 and wrong_type.json()["title"] == "Unsupported media type"
    huge = client.post(url, content="x" * (200 * 1024), headers={**keyed, "Content-Type": "application/json"})
    assert huge.status_code == 413 and huge.json()["title"] == "Content too large"


def test_an_app_that_shut_down_holds_none_of_the_stores_connections(web_filled):
    """Apps made and closed over one store give back what they took: on PostgreSQL every app shares
    the store's pool (15 connections), so a connection kept per app (the cache's generation reader)
    would leave the 16th app none: its request would wait out the pool's timeout and fail."""
    apps = []  # kept alive, so nothing is given back by the garbage collector either
    for _ in range(20):
        apps.append(create_app(store=web_filled[0]))
        with TestClient(apps[-1], raise_server_exceptions=False) as c:
            assert c.get("/api/v1/runs", params={"limit": 1}).status_code == 200
