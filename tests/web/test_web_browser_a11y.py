"""Every kind of page in real headless Chromium: axe-core finds no violation, the skip link leads to the
content, the landing, operation and run pages do not scroll sideways on a 390 px phone, /gpus is a
compact heat map, and /compare without runs is a picker that refuses one run given twice."""

from __future__ import annotations

import httpx
import pytest

from live_kit import chromium

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

axe_sync = pytest.importorskip("axe_playwright_python.sync_playwright")
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def kinds(live_server, live_store):
    """One path of each page kind, named; ids come from the store the server reads."""
    filled = live_store[1]
    run = filled.runs["fast"]
    key = httpx.get(f"{live_server}/api/v1/runs/{run}").json()["identity"]["comparisonKey"]
    return {
        "landing": "/",
        "search": "/?q=softmax",
        "runs": "/runs",
        "run": f"/runs/{run}",
        "seed run": f"/runs/{filled.seed_runs['4273']}",
        "workload": f"/workloads/{filled.workload_id}",
        "operation": "/operations/synthetic-softmax-rows",
        "ranking": f"/rankings/{key}",
        "compare picker": "/compare",
        "compare": f"/compare?run={run}&run={filled.runs['slow']}",
        "source": "/sources/test-lab",
        "implementation": "/implementations/impl-fast",
        "project": "/projects/hostile-project",
        "gpus": "/gpus",
        "gpu": "/gpus/nvidia-h200",
        "records": "/records",
        "models": "/models",
        "serving resolver": "/serving/resolve",
        "queue": "/queue",
        "submit": "/submit",
        "docs": "/docs",
        "api reference": "/docs/api",
        "problem types": "/problems",
        "problem type": "/problems/invalid-parameter",
        "problem": "/runs/no-such-run",
    }


def new_page(browser, live_server, viewport=None):
    context = browser.new_context(base_url=live_server, viewport=viewport or {"width": 1280, "height": 900})
    return context, context.new_page()


def test_axe_finds_no_violation_on_any_page_kind(browser, live_server, kinds):
    axe = axe_sync.Axe()
    context, page = new_page(browser, live_server)
    found = {}
    try:
        for name, path in kinds.items():
            response = page.goto(path)
            assert response is not None and response.status == (404 if name == "problem" else 200), (name, path)
            violations = axe.run(page).response["violations"]
            if violations:
                found[name] = [(v["id"], v["impact"], [n["target"] for n in v["nodes"][:3]]) for v in violations]
    finally:
        context.close()
    assert found == {}, found


@pytest.mark.parametrize("name", ["landing", "operation", "run", "seed run", "gpus", "compare picker"])
def test_no_sideways_scroll_on_a_phone(browser, live_server, kinds, name):
    context, page = new_page(browser, live_server, PHONE)
    try:
        page.goto(kinds[name])
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{kinds[name]} is {width} px wide at a {PHONE['width']} px viewport"
    finally:
        context.close()


def test_skip_link_leads_to_the_content(browser, live_server):
    context, page = new_page(browser, live_server)
    try:
        page.goto("/")
        page.keyboard.press("Tab")
        focused = page.evaluate("document.activeElement.textContent")
        assert focused == "Skip to content" and page.locator("a.skip-link").is_visible()
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "content"
    finally:
        context.close()


def test_gpus_is_a_compact_heat_map(browser, live_server):
    context, page = new_page(browser, live_server)
    try:
        page.goto("/gpus")
        grid = page.locator("table.heatmap")
        rows = grid.locator("tbody tr").count()
        box = grid.locator("tbody").bounding_box()
        assert rows >= 2 and box is not None
        assert box["height"] / rows < 30, f"{box['height'] / rows:.0f} px per operation row"
        names = grid.locator("tbody th")
        tall = names.evaluate_all("cells => cells.filter(c => c.getBoundingClientRect().height > 24).length")
        assert tall == 0, "operation names stay on one line"
        cell = grid.locator('td[data-cell="synthetic-softmax-rows|nvidia-h200"]')
        assert cell.get_attribute("class").startswith("heat-") and "runs" in cell.get_attribute("title")
    finally:
        context.close()


def test_compare_picker_and_the_same_run_twice(browser, live_server, live_store):
    filled = live_store[1]
    context, page = new_page(browser, live_server)
    try:
        response = page.goto("/compare")
        assert response is not None and response.status == 200
        boxes = page.locator('form[data-form="compare-pick"] input[type="checkbox"]')
        assert boxes.count() >= 2
        boxes.nth(0).check()
        boxes.nth(1).check()
        page.get_by_role("button", name="Compare").click()
        page.wait_for_url("**/compare?**")
        assert page.locator("h1").inner_text() == "Compare 2 runs"
        twice = page.goto(f"/compare?run={filled.runs['fast']}&run={filled.runs['fast']}")
        assert twice is not None and twice.status == 400
        assert "same run" in page.locator(".problem-detail").inner_text()
    finally:
        context.close()
