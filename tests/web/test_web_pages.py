"""Server-rendered pages: the seed figures, the sections a run page must have, and hostile record
text shown inert everywhere."""

from __future__ import annotations

import html
import re

import pytest
from web_storefill import HOSTILE_AUTHOR, HOSTILE_TITLE, HOSTILE_URL, SAFE_URL


def text_of(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


@pytest.mark.parametrize(
    "external, figures",
    [
        (
            "4273",
            [
                "317.9 µs",
                "0.9189",
                "8.02×",
                "16/16 cases faster",
                "sol-submission-4273",
                "4273",
                "SOL-ExecBench evaluation stack v1.0",
                "harness_reported",
                "sol_execbench_leaderboard",
                "NVIDIA B200",
                "sm_100",
                "2026-05-27",
                "sha256:149b7c1a1939a75a91d18a57f3397ca18d85d92b369ae5b5700400ef015bf41e",
            ],
        ),
        (
            "19969",
            [
                "7.70 µs",
                "0.7113",
                "2.33×",
                "16/16 cases faster",
                "19969",
                "SOL-ExecBench evaluation stack v1.1",
                "sha256:deb0ae259fd84c5e3321ed2b634493bcfbbe08ba88b3646967d236453e2c8bc6",
            ],
        ),
    ],
)
def test_seed_run_page_shows_the_source_figures(client, filled, external, figures):
    page = client.get(f"/runs/{filled.seed_runs[external]}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    text = text_of(page.text)
    for figure in figures:
        assert figure in text, figure
    for section in (
        "Identity",
        "Correctness",
        "Workload",
        "Measurements",
        "Protocol",
        "Environment",
        "Artifacts",
        "Replications and notes",
        "Canonical manifest",
        "Cite this record",
        "Source-native metrics",
    ):
        assert f">{section}" in page.text, section
    assert "The source did not publish a correctness policy" in text  # no workload record: nothing known
    assert "Not ranked: pending_workload" in text
    assert f'href="/api/v1/runs/{filled.seed_runs[external]}"' in page.text


def test_ranked_run_page(client, filled):
    text = text_of(client.get(f"/runs/{filled.runs['hostile']}").text)
    assert "Rank 3 in its comparison group of 4 ranked runs" in text
    assert "95% interval" in text and "2000 resamples" in text
    assert "Compare with #1" in text and "All results for synthetic_softmax_rows rows=8192" in text
    leader = text_of(client.get(f"/runs/{filled.runs['fast']}").text)
    assert "Rank 1 in its comparison group" in leader and "This run is #1 in its group" in leader
    gone = text_of(client.get(f"/runs/{filled.runs['retracted']}").text)
    assert "Not ranked: retracted" in gone and "the timer was wrong <b>really</b>" in gone


def test_workload_page_groups_plot_and_other_evidence(client, filled):
    page = client.get(f"/workloads/{filled.workload_id}").text
    assert page.count('<section class="group"') == 4  # 3 groups of this workload + 1 of the other record;
    # the group with no ranked run (no metric) has no plot
    assert page.count("<svg") == 3 and "<script" not in page.split("</head>")[1]
    text = text_of(page)
    assert "Other evidence for this problem" in text and "Test harness v2 · NVIDIA H200 test box" in text
    for code in ("not_passed", "retracted", "superseded", "no_primary_metric"):
        assert code in text
    assert "lower latency is better" in text and "Leader history" in text


def test_compare_page(client, filled):
    text = text_of(client.get("/compare", params={"a": filled.runs["fast"], "b": filled.runs["v2-only"]}).text)
    assert "Not comparable: the comparison keys differ in protocol" in text
    same = text_of(client.get("/compare", params={"a": filled.runs["hostile"], "b": filled.runs["fast"]}).text)
    assert "Comparable: both runs have the same comparison key" in same and "value(A) / value(B) =" in same


def test_index_search_operation_source_and_runs_pages(client, filled):
    index = text_of(client.get("/").text)
    assert "Latest runs" in index and "synthetic_softmax_rows" in index and "All runs" in index
    runs_page = client.get("/runs?limit=200").text
    for run_id in list(filled.seed_runs.values()) + list(filled.runs.values()):
        assert f'href="/runs/{run_id}"' in runs_page
    found = text_of(client.get("/", params={"q": "rowwise_softmax_alias"}).text)
    assert "Search: “rowwise_softmax_alias”" in found and "synthetic_softmax_rows" in found
    assert "9" in text_of(client.get("/operations/synthetic-softmax-rows").text)
    assert "controlled" in text_of(client.get("/sources/test-lab").text)


def test_page_errors_are_html_problems(client, filled):
    missing = client.get("/runs/does-not-exist")
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert "no run with id or digest" in text_of(missing.text)
    assert client.get(f"/runs/{filled.runs['fast']}?debug=1").status_code == 400
    assert client.get("/?cursor=broken").status_code == 400
    assert client.get("/compare?a=x").status_code == 400  # one run: compare takes 2 to 8


def pages(filled):
    return [
        f"/runs/{filled.runs['hostile']}",
        f"/workloads/{filled.workload_id}",
        "/",
        "/runs",
        "/sources/test-lab",
        f"/compare?a={filled.runs['hostile']}&b={filled.runs['fast']}",
        f"/runs/{filled.runs['fast']}",
    ]


def test_hostile_record_text_is_inert_everywhere(client, filled):
    for url in pages(filled):
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.text
        assert "<script>window.__pwned" not in body and "onerror=" not in body.replace("onerror=&#34;", "")
        assert 'href="javascript:' not in body.lower() and "<i>controlled</i>" not in body
        assert "default-src 'self'" in response.headers["content-security-policy"]
        # the only script is the site's own copy button helper
        assert re.findall(r"<script[^>]*>", body) == ['<script src="/static/copy.js" defer>']
    run_page = client.get(pages(filled)[0]).text
    assert html.escape(HOSTILE_TITLE, quote=False).replace('"', "&#34;") in run_page
    assert HOSTILE_AUTHOR.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;") in run_page
    assert HOSTILE_URL in text_of(run_page)  # shown as text ...
    assert f'href="{html.escape(SAFE_URL)}"' in run_page  # ... while http(s) links stay links (raw samples)
    assert f'href="{html.escape(SAFE_URL)}"' in client.get(f"/runs/{filled.runs['fast']}").text  # source ref
