"""No input gives a 5xx: bounded JSON depth on the write endpoints, bounded parameters on every
page route, invisible characters refused in submitted text, and cursors that expire."""

from __future__ import annotations

import json
import os
import random

import pytest
from fastapi.testclient import TestClient
from test_web_api import assert_problem

from kernelindex.search.query import MAX_QUERY_CHARS
from kernelindex.store.evidence.records import create_api_key
from kernelindex.web.app import create_app
from kernelindex.web.http.headers import MAX_PARAM_CHARS
from kernelindex.web.http.input_guards import INVISIBLE, MAX_JSON_DEPTH, check_json_depth
from kernelindex.web.http.pagination import CURSOR_TTL_S, Cursors
from kernelindex.web.problems import Problem

SEED = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))


@pytest.fixture(scope="module")
def reporter(web_filled):
    store = web_filled[0]
    with store.begin() as conn:
        return create_api_key(conn, "hardening tests", frozenset({"attest", "report"})).token


def nested(depth: int, rng: random.Random) -> str:
    """A JSON value nested ``depth`` levels, mixing arrays and objects (and brackets inside strings)."""
    text = '"[{]}"'
    for _ in range(depth):
        text = f"[{text}]" if rng.random() < 0.5 else f'{{"k": {text}, "s": "}}]"}}'
    return text


@pytest.mark.parametrize("route, scope", [("attestations", "attest"), ("corrections", "report")])
def test_deep_json_is_a_400_after_the_key(client, web_filled, route, scope):
    """Who may write is settled first: without a key any body is a 401 (not read); with one, a deep body is a 400."""
    with web_filled[0].begin() as conn:
        token = create_api_key(conn, f"deep {scope}", frozenset({scope})).token
    url = f"/api/v1/runs/{web_filled[1].runs['fast']}/{route}"
    rng = random.Random(SEED)
    keyed = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    for body in ("[" * 90_000, '{"a":' * 15_000, nested(MAX_JSON_DEPTH + 1, rng), '{"spec": ' + nested(200, rng) + "}"):
        assert_problem(client.post(url, content=body, headers={"Content-Type": "application/json"}), 401)
        assert_problem(client.post(url, content=body, headers=keyed), 400, "too-deep")
    # Within the bound, the body is parsed and refused for what it is, not for depth.
    shallow = '{"problem": "other", "details": ' + json.dumps(["x"]) + ', "requestedAction": "retract"}'
    response = client.post(url, content=shallow, headers=keyed)
    assert 400 <= response.status_code < 500 and response.json()["type"] != "/problems/too-deep"


def test_depth_counter_ignores_brackets_in_strings():
    check_json_depth(b'{"a": "' + b"[" * 1000 + b'"}')
    check_json_depth(b'["\\"[[[[" , "\\\\"]' + b"")
    with pytest.raises(Problem):
        check_json_depth(b"[" * (MAX_JSON_DEPTH + 1))


@pytest.mark.parametrize("char", sorted(INVISIBLE))
def test_invisible_characters_are_refused_in_submitted_text(client, filled, reporter, char):
    url = f"/api/v1/runs/{filled.runs['slow']}/corrections"
    body = {"problem": "other", "details": f"looks fine{char}but is not", "requestedAction": "retract"}
    response = client.post(url, json=body, headers={"Authorization": f"Bearer {reporter}"})
    problem = assert_problem(response, 422, "invisible-character")
    assert f"U+{ord(char):04X}" in problem["detail"] and problem["field"] == "body.details"


def test_plain_text_still_goes_through(client, filled, reporter):
    url = f"/api/v1/runs/{filled.runs['slow']}/corrections"
    body = {"problem": "other", "details": "naïve café — 日本語 ✓", "requestedAction": "retract"}
    response = client.post(url, json=body, headers={"Authorization": f"Bearer {reporter}"})
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    "url",
    [
        "/?q=",
        "/records?operation=",
        "/runs?cursor=",
        "/records?since=",
        "/compare?run=",
        "/api/v1/search?q=",
        "/api/v1/records?source=",
        "/gpus?x=",
        "/docs?y=",
    ],
)
def test_oversized_parameters_are_400_on_every_route(client, url):
    response = client.get(url + "a" * 50_001)
    assert response.status_code == 400, (url, response.status_code)


def test_long_search_text_on_the_page_is_a_400(client):
    """The page takes the API's bound; past it (blank text too), and past the headers' bound, a 400 page."""
    for length in (MAX_QUERY_CHARS + 1, MAX_PARAM_CHARS + 1):
        for q in ("a" * length, " " * length):
            page = client.get("/", params={"q": q})
            assert page.status_code == 400 and page.headers["content-type"].startswith("text/html"), page.text
            assert "characters" in page.text
        assert_problem(client.get("/api/v1/search", params={"q": "a" * length}), 400)
    assert client.get("/", params={"q": "a" * MAX_QUERY_CHARS}).status_code == 200
    assert client.get("/api/v1/search", params={"q": "a" * MAX_QUERY_CHARS}).status_code == 200


def test_cursors_expire():
    now = [1_000_000.0]
    cursors = Cursors(b"k" * 32, clock=lambda: now[0])
    token = cursors.encode("runs", 5)
    now[0] += CURSOR_TTL_S
    assert cursors.read("runs", token) == (5, now[0])
    now[0] += 1
    with pytest.raises(Problem, match="expired"):
        cursors.read("runs", token)
    now[0] -= CURSOR_TTL_S * 3  # a cursor from the future (clock skew, or forged time) is refused too
    with pytest.raises(Problem):
        cursors.read("runs", token)


def test_expired_cursor_on_the_api_is_a_400_problem(web_filled):
    now = [2_000_000.0]
    app = create_app(store=web_filled[0])
    app.state.cursors = Cursors(b"s" * 32, clock=lambda: now[0])
    with TestClient(app, raise_server_exceptions=False) as c:
        nxt = c.get("/api/v1/records", params={"limit": 1}).json()["next"]
        assert c.get("/api/v1/records", params={"limit": 1, "cursor": nxt}).status_code == 200
        now[0] += CURSOR_TTL_S + 1
        problem = assert_problem(c.get("/api/v1/records", params={"limit": 1, "cursor": nxt}), 400, "bad-cursor")
        assert problem["parameter"] == "cursor" and "expired" in problem["detail"]
        # The first page, kept by the cache, hands out a new cursor rather than the expired one.
        fresh = c.get("/api/v1/records", params={"limit": 1}).json()["next"]
        assert fresh != nxt and c.get("/api/v1/records", params={"limit": 1, "cursor": fresh}).status_code == 200


def test_rerun_requests_bound_depth_and_refuse_invisible_text(client, web_filled):
    """The queue's submission API takes the same guards as the evidence writes and the /submit form."""
    with web_filled[0].begin() as conn:
        token = create_api_key(conn, "hardening submitter", frozenset({"submit"})).token
    rng = random.Random(SEED)
    url = "/api/v1/rerun-requests"
    queued = client.get(url, params={"state": "queued"}).json()["counts"]
    for body in ('{"solution": ' + nested(MAX_JSON_DEPTH + 1, rng) + "}", "[" * 90_000):
        response = client.post(url, content=body, headers={"Content-Type": "application/json"})
        assert_problem(response, 401)  # without a key the body is not even read
        keyed = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        assert_problem(client.post(url, content=body, headers=keyed), 400, "too-deep")
    char = rng.choice(sorted(INVISIBLE))
    source = {"path": "kernel.py", "content": f"ok = True  # {char}return early"}
    body = {"problem": "vector_add_f32", "solution": {"name": "x", "sources": [source]}}
    response = client.post(url, json=body, headers={"Authorization": f"Bearer {token}"})
    problem = assert_problem(response, 422, "invisible-character")
    assert problem["field"] == "body.solution.sources[0].content" and f"U+{ord(char):04X}" in problem["detail"]
    assert client.get(url, params={"state": "queued"}).json()["counts"] == queued


def test_a_body_with_a_key_given_twice_or_a_nan_is_a_400_on_every_json_route(client, web_filled):
    """One strict reader for every JSON body: json.loads would keep the last of two equal keys (a
    reviewer of the request and the server would read two different submissions) and take NaN."""
    with web_filled[0].begin() as conn:
        token = create_api_key(conn, "strict submitter", frozenset({"submit"})).token
    url = "/api/v1/rerun-requests"
    queued = client.get(url, params={"state": "queued"}).json()["counts"]
    solution = '{"name": "x", "sources": [{"path": "k.py", "content": "ok = 1"}]}'
    for body, reason in (
        ('{"problem": "vector_add_f32", "solution": ' + solution + ', "problem": "other"}', "duplicate key 'problem'"),
        ('{"problem": "vector_add_f32", "solution": ' + solution + ', "replicas": NaN}', "NaN is not JSON"),
    ):
        response = client.post(
            url, content=body, headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        )
        assert reason in assert_problem(response, 400, "malformed-body")["detail"]
    assert client.get(url, params={"state": "queued"}).json()["counts"] == queued
