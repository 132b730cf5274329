"""The site in real headless Chromium (Debian's, driven by Playwright) against a real uvicorn server.

One browser for the module; the checks follow what a kernel author does: open a seed run page,
read its figures, follow "All results" and "Compare with #1", open the manifest, copy the citation.
"""

from __future__ import annotations

import pytest

from live_kit import chromium

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert errors == [], errors


def figure(page, label: str) -> str:
    return page.locator(f'dd[data-metric="{label}"]').inner_text()


@pytest.mark.parametrize(
    "external, latency, sol, speedup",
    [("4273", "317.9 µs", "0.9189", "8.02×"), ("19969", "7.70 µs", "0.7113", "2.33×")],
)
def test_seed_run_page_figures(page, live_store, external, latency, sol, speedup):
    filled = live_store[1]
    page.goto(f"/runs/{filled.seed_runs[external]}")
    assert page.locator('[data-field="primary"]').inner_text() == latency
    assert figure(page, "SOL score") == sol
    assert figure(page, "Speedup over the reference") == speedup
    assert figure(page, "Cases faster than the baseline") == "16/16 cases faster"
    assert page.locator('[data-field="status"]').inner_text() == "passed"
    # The manifest is collapsed until opened, then shows the record as received.
    manifest = page.locator("#manifest-json")
    assert not manifest.is_visible()
    page.locator("#manifest summary").click()
    assert manifest.is_visible() and f'"externalId": "{external}"' in manifest.inner_text()
    # The citation is folded by default; opened, copying it puts exactly the shown citation on the clipboard.
    assert not page.locator("#citation-text").is_visible()
    page.locator("#cite summary").click()
    page.get_by_role("button", name="Copy citation").click()
    page.wait_for_function("document.querySelector('[data-copy-target=\"citation-text\"]').dataset.state")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.locator("#citation-text").inner_text()
    assert "accessed" in copied and "sha256:" in copied


def test_landing_page_reaches_both_seed_runs(page, live_store):
    """From /, one click on each seed's card opens its run page with the same headline figures."""
    expected = {
        "4273": ("317.9 µs", "0.9189", "8.02×", "16/16 cases faster"),
        "19969": ("7.70 µs", "0.7113", "2.33×", "16/16 cases faster"),
    }
    for external, (latency, sol, speedup, faster) in expected.items():
        page.goto("/")
        card = page.locator(f'article.seed-card[data-seed="{external}"]')
        assert card.locator('[data-seed-figure="latency"]').inner_text() == latency
        assert card.locator('[data-seed-figure="SOL score"]').inner_text() == sol
        card.locator('a[data-link="seed-run"]').click()
        page.wait_for_url(f"**/runs/{live_store[1].seed_runs[external]}")
        assert page.locator('[data-field="primary"]').inner_text() == latency
        assert figure(page, "SOL score") == sol
        assert figure(page, "Speedup over the reference") == speedup
        assert figure(page, "Cases faster than the baseline") == faster


def follow_all_results_and_compare(page, run_id: str) -> None:
    page.goto(f"/runs/{run_id}")
    rank_text = page.locator('[data-field="rank"]').inner_text()
    value = page.locator('[data-field="primary"]').inner_text()
    assert rank_text.startswith("Rank ")
    page.locator('[data-link="all-results"]').click()
    page.wait_for_url("**/workloads/**")
    row = page.locator(f'table.ranking tr:has(a[href="/runs/{run_id}"])').first
    assert value in row.inner_text()
    assert page.locator("svg.plot").count() >= 1
    page.go_back()
    page.locator('[data-link="compare-leader"]').click()
    page.wait_for_url("**/compare?**")
    assert "Comparable" in page.locator('[data-field="comparable"]').inner_text()
    assert "value(A) / value(B)" in page.locator('[data-field="ratio"]').inner_text()


def test_seed_pages_lead_to_their_group_and_the_leader(page, live_store):
    store, filled, has_slice = live_store
    if not has_slice:
        pytest.skip("the seeds' workload records come from the real export, which is absent here")
    for external in ("4273", "19969"):
        follow_all_results_and_compare(page, filled.seed_runs[external])


def test_synthetic_run_leads_to_its_group_and_the_leader(page, live_store):
    follow_all_results_and_compare(page, live_store[1].runs["hostile"])


def test_hostile_text_stays_inert_and_index_reaches_the_seeds(page, live_store):
    filled = live_store[1]
    page.goto(f"/runs/{filled.runs['hostile']}")
    assert page.evaluate("window.__pwned === undefined")
    assert "<script>" in page.locator("h1").inner_text()  # shown as text
    page.goto("/")
    page.get_by_role("link", name="All runs").click()
    for _ in range(5):  # follow the pages until both seeds were listed
        hrefs = page.eval_on_selector_all("table.runs a", "els => els.map(e => e.getAttribute('href'))")
        if all(f"/runs/{rid}" in hrefs for rid in filled.seed_runs.values()):
            break
        page.get_by_role("link", name="More runs").click()
    else:
        pytest.fail("the seed runs are not reachable from the index")
    page.locator(f'a[href="/runs/{filled.seed_runs["4273"]}"]').click()
    assert page.locator('[data-field="primary"]').inner_text() == "317.9 µs"
    assert page.evaluate("window.__pwned === undefined")
