"""In real headless Chromium against a real uvicorn server: a visitor adds a reproduction through
the run page's form and sees it listed with the index's signature checked; a post from another
origin is refused."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from kernelindex.records.signing import key_id, new_private_key
from kernelindex.store.evidence.records import create_api_key
from kernelindex.store.evidence.tables import attestations
from kernelindex.store.tables import runs
from kernelindex.web.app import create_app
from live_kit import chromium, serving

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.fixture()
def server(store):
    app = create_app(store=store)
    app.state.signing_key = new_private_key()
    app.state.signing_label = "this index (browser test)"
    with serving(app) as url:
        yield app, url


@pytest.fixture()
def browser():
    with chromium() as b:
        yield b


def test_visitor_adds_a_reproduction_through_the_page(store, server, browser, seed_digest, rng):
    app, base = server
    with store.begin() as conn:
        token = create_api_key(conn, "browser visitor", frozenset({"attest"})).token
        run_id = conn.execute(select(runs.c.id).where(runs.c.run_digest == seed_digest)).scalar_one()
    value = rng.randrange(7000, 8000)
    page = browser.new_page(base_url=base)
    page.goto(f"/runs/{run_id}")
    page.get_by_text("Add a reproduction or note").click()
    form = page.locator("#attest-form")
    form.locator("select[name=claim]").select_option("reproduced")
    form.locator("input[name=attester_name]").fill("Grace Browser")
    form.locator("textarea[name=note]").fill("Same mean on our B200 <3")
    form.locator("input[name=measured_value]").fill(str(value))
    form.locator("input[name=measured_unit]").fill("ns")
    form.locator("input[name=api_key]").fill(token)
    form.locator("button[type=submit]").click()
    page.wait_for_url(f"**/runs/{run_id}#att-*")
    item = page.locator('li[data-claim="reproduced"]')
    assert item.count() == 1
    text = item.inner_text()
    assert "Grace Browser" in text and "Same mean on our B200 <3" in text
    assert f"{value / 1000:.2f} µs" in text
    signature = item.locator('[data-signature="valid"]')
    assert signature.count() == 1 and "signature holds" in signature.inner_text()
    assert key_id(app.state.signing_key.public_key())[:19] in signature.inner_text()

    # The same form served from another origin (a page on a different port) is refused, nothing stored.
    with store.begin() as conn:
        before = conn.execute(select(func.count()).select_from(attestations)).scalar_one()
    evil = browser.new_page()
    evil.set_content(
        f'<form method="post" action="{base}/runs/{run_id}/attestations">'
        f'<input name="csrf_token" value="guess"><input name="api_key" value="{token}">'
        '<input name="claim" value="could_not_reproduce"><input name="attester_name" value="evil">'
        "<button>go</button></form>"
    )
    with evil.expect_navigation():
        evil.click("button")
    assert "403" in evil.content() and ("cross-site" in evil.content() or "anti-forgery" in evil.content())
    with store.begin() as conn:
        assert conn.execute(select(func.count()).select_from(attestations)).scalar_one() == before
