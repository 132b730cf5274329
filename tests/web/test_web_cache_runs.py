"""The cached run page is never stale: a maintainer's resolved correction (a retraction) and an
attestation show on the very next request for the page, its JSON and its group's ranking, with
the same ETag refused afterwards (a client revalidating gets the new page, not a 304)."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient

from catalog_kit import catalog_lines, write_catalog
from kernelindex.ingest.catalog import import_catalog
from kernelindex.records.attestation import new_attestation
from kernelindex.records.models import dump_record
from kernelindex.services.corrections import Decision, resolve_correction
from kernelindex.store.database import open_store
from kernelindex.store.evidence.records import add_attestation, add_correction_request, create_api_key
from kernelindex.web.app import create_app
from store_fixtures import BACKENDS, database_url


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    opened = open_store(database_url(request.param, tmp_path))
    import_catalog(opened, write_catalog(tmp_path / "toy.jsonl", catalog_lines()))
    yield opened
    opened.close()


def cached(client: TestClient, path: str) -> str:
    """GET ``path`` until it comes from the cache (same ETag, 304 on revalidation); its ETag."""
    first = client.get(path)
    second = client.get(path)
    assert first.status_code == second.status_code == 200 and first.headers["etag"] == second.headers["etag"]
    assert client.get(path, headers={"If-None-Match": first.headers["etag"]}).status_code == 304
    return first.headers["etag"]


def fresh(client: TestClient, path: str, etag: str):
    """The answer to a revalidation with the old ETag: must be a new 200, not a 304."""
    answer = client.get(path, headers={"If-None-Match": etag})
    assert answer.status_code == 200 and answer.headers["etag"] != etag, f"{path} was stale"
    return answer


def test_a_retraction_and_an_attestation_show_on_the_cached_run_page(store):
    rng = random.Random()
    runs = [line["row"] for line in catalog_lines() if line["table"] == "benchmark_runs"]
    run = rng.choice([r for r in runs if r.get("comparisonKey")])
    page, api, ranking = f"/runs/{run['id']}", f"/api/v1/runs/{run['id']}", f"/api/v1/rankings/{run['comparisonKey']}"
    with TestClient(create_app(store=store)) as client:
        client.get("/")  # take the anti-forgery cookie first, as a browser would have
        tags = {path: cached(client, path) for path in (page, api, ranking)}
        assert "retracted" not in client.get(page).text
        assert run["id"] in [row["runId"] for row in client.get(ranking).json()["rows"]]

        reason = f"timer bug {rng.randrange(10**6)}"
        with store.begin() as conn:
            kid = create_api_key(conn, "reporter", frozenset({"report"})).key_id
            request_id = add_correction_request(
                conn, run["runDigest"], "wrong_value", "the median is off", "retract", kid
            )
        resolve_correction(store, request_id, Decision.RETRACT, reason)

        assert reason in fresh(client, page, tags[page]).text
        assert fresh(client, api, tags[api]).json()["evidenceDetail"]["correction"]["kind"] == "retracted"
        ranked = fresh(client, ranking, tags[ranking]).json()
        assert run["id"] not in [row["runId"] for row in ranked["rows"]]
        assert run["id"] in [x["runId"] for x in ranked["excluded"]]

        tags = {path: cached(client, path) for path in (page, api)}
        attester = f"cache tester {rng.randrange(10**6)}"
        spec = {
            "claim": "reproduced",
            "runDigest": run["runDigest"],
            "attester": {"name": attester},
            "observedAt": "2026-11-30T10:00:00.000Z",
        }
        with store.begin() as conn:
            add_attestation(conn, dump_record(new_attestation(spec)))
        assert attester in fresh(client, page, tags[page]).text
        assert [
            a["attester"]["name"] for a in fresh(client, api, tags[api]).json()["evidenceDetail"]["attestations"]
        ] == [attester]
