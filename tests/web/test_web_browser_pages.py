"""The new pages in real headless Chromium against a real server: entity pages, the ledger and its
filters, docs, compare of three runs with its Markdown copy, the run page's folded citation and
digest copy button. Each page must load with no script error, no live hostile markup, and table
cells that never break a word in two. Set KERNELINDEX_SCREENSHOTS=DIR to keep full-page PNGs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from live_kit import chromium

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]

# Every plain word (letters and digits) in a table cell must sit on one line (the "WorkloadS uite" defect).
SPLIT_WORDS = """() => {
  const split = [];
  for (const cell of document.querySelectorAll("table th, table td")) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent.trim();
      if (!/^[\\p{L}\\p{N}]{2,24}$/u.test(text)) continue;  // a plain word: letters and digits only
      const range = document.createRange();
      range.selectNodeContents(node);
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) split.push(text);
    }
  }
  return split;
}"""


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server, viewport={"width": 820, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    yield pg
    context.close()
    assert errors == [], errors


def visit(page, path: str, name: str) -> None:
    response = page.goto(path)
    assert response is not None and response.status == 200, path
    assert page.evaluate("window.__pwned === undefined"), path
    assert page.evaluate(SPLIT_WORDS) == [], path
    shots = os.environ.get("KERNELINDEX_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(shots) / f"{name}.png"), full_page=True)


def test_implementation_and_project_pages(page, live_store):
    visit(page, "/implementations/impl-fast", "implementation")
    assert page.locator('[data-field="deployable"]').inner_text() == "not deployable"
    assert page.locator('table[data-table="best-per-gpu"] tbody tr').count() == 1
    badge = page.locator("p.badges img")
    assert page.evaluate("img => img.complete && img.naturalWidth > 0", badge.element_handle())
    page.locator('table[data-table="best-per-gpu"] a', has_text="NVIDIA H200").click()
    page.wait_for_url("**/gpus/nvidia-h200")
    visit(page, "/projects/hostile-project", "project")
    assert "<script>" in page.locator("h1").inner_text()  # shown as text
    assert page.locator('table[data-table="held"] tbody tr').count() == 3


def test_gpu_pages_and_coverage_grid(page, live_store):
    visit(page, "/gpus", "gpus")
    cell = page.locator('td[data-cell="synthetic-softmax-rows|nvidia-h200"]')
    assert cell.inner_text().startswith("9")
    visit(page, "/gpus/nvidia-h200", "gpu")
    assert page.locator('table[data-table="best-runs"] tbody tr').count() >= 3


def test_ledger_filters_round_trip(page, live_store):
    visit(page, "/records", "records")
    assert page.locator('tr[data-kind="retraction"]').count() >= 1
    page.select_option('select[name="kind"]', "retraction")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/records?**kind=retraction**")
    kinds = page.locator("table.ledger tbody tr").evaluate_all("rows => rows.map(r => r.dataset.kind)")
    assert kinds and set(kinds) == {"retraction"}
    assert page.locator('select[name="kind"]').input_value() == "retraction"  # the filter stays shown


def test_docs_and_api_reference(page, live_store):
    visit(page, "/docs", "docs")
    page.locator("header.site nav a", has_text="API").click()
    page.wait_for_url("**/docs/api")
    assert page.locator("section.endpoint").count() >= 20
    page.locator('a[href="#model-LedgerPage"]').first.click()
    assert page.locator("#model-LedgerPage").is_visible()
    visit(page, "/docs/api", "docs-api")


def test_compare_three_runs_and_copy_markdown(page, live_store):
    runs = live_store[1].runs
    query = "&".join(f"run={runs[n]}" for n in ("fast", "hostile", "slow"))
    visit(page, f"/compare?{query}", "compare")
    assert "Comparable" in page.locator('[data-field="comparable"]').inner_text()
    page.locator("#markdown summary").click()
    page.get_by_role("button", name="Copy Markdown").click()
    page.wait_for_function("document.querySelector('[data-copy-target=\"compare-markdown\"]').dataset.state")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("| field | A | B | C |")
    assert copied.strip() == page.locator("#compare-markdown").inner_text().strip()
    visit(page, f"/compare?run={runs['fast']}&run={runs['v2-only']}", "compare-groups")
    assert "No ratio is given" in page.locator('[data-field="comparable"]').inner_text()
    assert page.locator('[data-field="ratio"]').count() == 0


def test_run_page_digest_copy_and_folded_citation(page, live_store):
    run_id = live_store[1].runs["fast"]
    visit(page, f"/runs/{run_id}", "run")
    assert not page.locator("#citation-text").is_visible()
    page.get_by_role("button", name="Copy digest").click()
    page.wait_for_function("document.querySelector('[data-copy-target=\"run-digest\"]').dataset.state")
    assert page.evaluate("navigator.clipboard.readText()") == page.locator("#run-digest").inner_text()
    assert page.locator('table[data-table="tensors"] td', has_text="8192 × 4096").count() == 1
    assert "(unit" not in page.locator("section.headline").inner_text()
    visit(page, f"/workloads/{live_store[1].workload_id}", "workload")
