"""Runs and workloads by id, full digest, or a unique digest prefix (8+ hex), as `kernelindex show` takes them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import insert, select
from test_web_api import assert_problem
from web_storefill import SAMPLE_DIR

from kernelindex.ingest.bundles import import_bundles
from kernelindex.store.database import open_store
from kernelindex.store.ids import uuid7
from kernelindex.store.tables import runs, workloads
from kernelindex.web.app import create_app


def spellings(full: str) -> list[str]:
    hexpart = full.removeprefix("sha256:")
    return [full, hexpart, full[: 7 + 12], hexpart[:8], hexpart[:8].upper(), f" {hexpart[:10]} "]


def test_run_by_every_spelling(client, filled):
    run_id = filled.runs["fast"]
    full = client.get(f"/api/v1/runs/{run_id}").json()["digest"]
    for ident in spellings(full):
        assert client.get(f"/api/v1/runs/{ident}").json()["id"] == run_id, ident
    page = client.get(f"/runs/{full.removeprefix('sha256:')[:9]}")
    assert page.status_code == 200 and f'href="/api/v1/runs/{run_id}"' in page.text
    cmp = client.get("/api/v1/compare", params={"a": full[7:17], "b": filled.runs["slow"]}).json()
    assert cmp["runs"][0]["id"] == run_id


def test_workload_by_every_spelling(client, filled):
    full = client.get(f"/api/v1/workloads/{filled.workload_id}").json()["digest"]
    for ident in spellings(full):
        assert client.get(f"/api/v1/workloads/{ident}").json()["id"] == filled.workload_id, ident
    assert client.get(f"/workloads/{full[7:20]}").status_code == 200


@pytest.mark.parametrize("route", ["/api/v1/runs/{}", "/api/v1/workloads/{}"])
@pytest.mark.parametrize("ident", ["abc", "sha256:1234567", "ABCDEF1"])
def test_short_prefixes_are_400(client, route, ident):
    body = assert_problem(client.get(route.format(ident)), 400, "digest-prefix-too-short")
    assert body["minimumPrefix"] == 8


def test_unknown_prefix_is_404_and_html_pages_say_so(client):
    assert_problem(client.get("/api/v1/runs/00000000ff"), 404, "not-found")
    assert_problem(client.get("/api/v1/workloads/sha256:00000000ff"), 404, "not-found")
    page = client.get("/runs/abc")
    assert page.status_code == 400 and "at least 8 hex characters" in page.text


def test_ambiguous_prefixes_are_409_with_the_candidate_count(tmp_path):
    """Two records whose digests share a prefix (at 8 hex characters that takes ~65k runs; here the rows
    are copied under crafted digests, since no record can be made to hash to a chosen prefix)."""
    store = open_store(str(tmp_path / "ambiguous.db"))
    import_bundles(store, sorted(SAMPLE_DIR.glob("*.json")))
    with store.begin() as conn:
        model = conn.execute(select(runs)).mappings().first()
        for tail in ("aa", "bb", "cc"):
            row = {k: v for k, v in model.items() if k != "seq"}
            conn.execute(insert(runs).values({**row, "id": uuid7(), "run_digest": "sha256:0123abcd" + tail + "0" * 54}))
        wl = {
            "id": uuid7(),
            "workload_digest": "sha256:0123abcd" + "e" * 56,
            "kind": "WorkloadCase",
            "correctness_key": "none",
            "manifest": {},
            "export_row": {},
        }
        conn.execute(insert(workloads).values(wl))
        conn.execute(insert(workloads).values({**wl, "id": uuid7(), "workload_digest": "sha256:0123abcd" + "f" * 56}))
    try:
        with TestClient(create_app(store=store)) as client:
            body = assert_problem(client.get("/api/v1/runs/0123abcd"), 409, "ambiguous-digest-prefix")
            assert body["candidates"] == 3
            assert client.get("/api/v1/runs/sha256:0123abcdbb").json()["digest"].endswith("bb" + "0" * 54)
            body = assert_problem(client.get("/api/v1/workloads/0123ABCD"), 409, "ambiguous-digest-prefix")
            assert body["candidates"] == 2
            page = client.get("/runs/0123abcd")
            assert page.status_code == 409 and "matches 3 runs" in page.text
    finally:
        store.close()
