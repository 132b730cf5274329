"""The anti-forgery token: the form field is the server's HMAC of the visitor's cookie nonce, so a
cookie the poster chose (copied into the field, or planted from a sibling host) proves nothing."""

from __future__ import annotations

import re
import secrets

import pytest
from fastapi.testclient import TestClient

from kernelindex.web.app import create_app
from kernelindex.web.http.input_guards import csrf_field_token

CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')
SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin"}


def report(client: TestClient, run_id: str, field: str):
    """A correction posted through the run page's form, without an API key."""
    form = {"csrf_token": field, "problem": "other", "details": "x", "requested_action": "retract"}
    return client.post(f"/runs/{run_id}/corrections", data=form, headers=SAME_ORIGIN, follow_redirects=False)


def refused_as_forgery(response) -> bool:
    return response.status_code == 403 and "anti-forgery token" in response.text


@pytest.fixture()
def https(web_filled):
    app = create_app(store=web_filled[0])
    with TestClient(app, base_url="https://testserver", raise_server_exceptions=False) as client:
        yield app, client


def test_a_field_equal_to_a_chosen_cookie_is_refused(client, filled):
    run_id = filled.runs["slow"]
    nonce = secrets.token_urlsafe(32)
    secret = client.app.state.csrf_secret
    client.cookies.clear()  # the shared client may hold a nonce the server gave it
    client.cookies.set("ki_csrf", nonce)
    try:
        assert refused_as_forgery(report(client, run_id, nonce))  # double submit of a chosen value
        assert refused_as_forgery(report(client, run_id, csrf_field_token(b"another secret", nonce)))
        passed = report(client, run_id, csrf_field_token(secret, nonce))  # on to the key check
        assert not refused_as_forgery(passed) and passed.status_code in (401, 403, 422), passed.text
    finally:
        client.cookies.clear()


def test_over_https_the_nonce_cookie_is_host_only(https, filled):
    app, client = https
    page = client.get(f"/runs/{filled.runs['slow']}")
    cookie = page.headers["set-cookie"]
    nonce = re.match(r"__Host-ki_csrf=([^;]+);", cookie).group(1)
    attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
    assert {"httponly", "path=/", "samesite=strict", "secure"} <= attributes
    assert not any(a.startswith("domain") for a in attributes)
    assert set(CSRF_INPUT.findall(page.text)) == {csrf_field_token(app.state.csrf_secret, nonce)}
    passed = report(client, filled.runs["slow"], CSRF_INPUT.findall(page.text)[0])
    assert not refused_as_forgery(passed), passed.text

    # A nonce planted without the prefix (a sibling subdomain can set that one) is not read over https,
    # even with the token the planter learned for it by visiting us.
    planted = secrets.token_urlsafe(32)
    client.cookies.clear()
    client.cookies.set("ki_csrf", planted)
    assert refused_as_forgery(report(client, filled.runs["slow"], csrf_field_token(app.state.csrf_secret, planted)))
