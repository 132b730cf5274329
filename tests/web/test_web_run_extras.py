"""Run page additions that need records of their own: measured correctness of a run and of each
case of a suite run, and the lifecycle notes (disputed by an open correction request; stale)."""

from __future__ import annotations

from datetime import date

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from web_storefill import ENVIRONMENT, fill, protocol, rec

from kernelindex.records.canonical import digest
from kernelindex.store.database import open_store
from kernelindex.store.evidence.records import add_correction_request, create_api_key
from kernelindex.store.reads.lookup import resolve_run
from kernelindex.store.tables import implementations, workloads
from kernelindex.store.writer import Writer
from kernelindex.views.run import STALE_DAYS, run_view
from kernelindex.web.app import create_app

DETAILS = 'timer 3 < 4 "twice" & more'  # plain text with markup-like characters


@pytest.fixture(scope="module")
def suite_store(tmp_path_factory):
    """The small store plus a suite workload, a suite run and one measured case run of impl-fast."""
    store = open_store(str(tmp_path_factory.mktemp("extras") / "extras.db"))
    filled = fill(store, 5)
    with store.begin() as conn:
        case = conn.execute(select(workloads).where(workloads.c.id == filled.workload_id)).first()
        impl = conn.execute(select(implementations).where(implementations.c.slug == "impl-fast")).first()
        op_digest = case.operation_digest
        suite = rec(
            "WorkloadSuite",
            "softmax-suite",
            {
                "operationSpecDigest": op_digest,
                "cases": [{"externalId": "rows-8192", "axes": {"rows": 8192}}],
                "correctness": {"comparator": "elementwise_close"},
                "aggregation": {"metric": "latency", "statistic": "median"},
            },
            title="softmax suite",
        )
        w = Writer(conn)
        w.add_record(suite)
        proto = protocol("v1")

        def run(name, workload_digest, extra):
            spec = {
                "implementationDigest": impl.implementation_digest,
                "workloadDigest": workload_digest,
                "protocolDigest": digest(proto),
                "environmentDigest": digest(ENVIRONMENT),
                "status": "passed",
                "observedAt": "2026-05-01T00:00:00Z",
                "sourceNative": {"source": "test-lab", "benchmark": "suite", "externalId": name},
                **extra,
            }
            return w.add_run_bundle(
                {"run": rec("BenchmarkRun", name, spec, title=name), "protocol": proto, "environment": ENVIRONMENT}
            )

        case_run = run(
            "case-run",
            case.workload_digest,
            {
                "timing": {"primaryStatistic": "median", "latencyNs": {"median": 1000}},
                "correctness": {
                    "comparator": "elementwise_close",
                    "maximumAbsoluteError": 2.5e-06,
                    "maximumRelativeError": 1e-05,
                    "matchedRatio": 0.9995,
                },
            },
        )
        suite_run = run(
            "suite-run",
            digest(suite),
            {"measurements": [{"metric": "latency", "statistic": "median", "unit": "ns", "value": 1000}]},
        )
        key = create_api_key(conn, "tests", frozenset({"report"}))
        add_correction_request(conn, digest_of(conn, filled.runs["slow"]), "other", DETAILS, "retract", key.key_id)
    yield store, filled, case_run, suite_run
    store.close()


def digest_of(conn, run_id):
    return resolve_run(conn, run_id).run_digest


def test_measured_correctness_of_a_case_run_and_per_case_of_a_suite(suite_store):
    store, _, case_run, suite_run = suite_store
    with TestClient(create_app(store=store)) as client:
        case = client.get(f"/api/v1/runs/{case_run}").json()["measuredCorrectness"]
        assert case["run"] == {
            "comparator": "elementwise_close",
            "maxAbsoluteError": 2.5e-06,
            "maxRelativeError": 1e-05,
            "matchedRatio": 0.9995,
        }
        suite = client.get(f"/api/v1/runs/{suite_run}").json()["measuredCorrectness"]
        assert suite["run"] is None and [c["runId"] for c in suite["cases"]] == [case_run]
        assert suite["cases"][0]["measured"]["matchedRatio"] == 0.9995
        page = client.get(f"/runs/{suite_run}").text
        assert 'data-table="cases"' in page and "0.9995" in page and f'href="/runs/{case_run}"' in page


def test_disputed_and_stale_notes(suite_store):
    store, filled, _, _ = suite_store
    with TestClient(create_app(store=store)) as client:
        page = client.get(f"/runs/{filled.runs['slow']}").text
        assert "disputed: 1 open correction request" in page
        assert 'data-field="lifecycle"' not in client.get(f"/runs/{filled.runs['fast']}").text
        ledger = client.get("/api/v1/records", params={"kind": "correction_request"}).json()["items"]
        assert [e["run"]["id"] for e in ledger] == [filled.runs["slow"]] and ledger[0]["detail"]["details"] == DETAILS
        records_page = client.get("/records", params={"kind": "correction_request"}).text
        assert "timer 3 &lt; 4 &#34;twice&#34; &amp; more" in records_page  # escaped, shown as text
    with store.engine.connect() as conn:
        row = resolve_run(conn, filled.runs["fast"])
        fresh = run_view(conn, row, "http://x", date(2026, 12, 1))
        old = run_view(conn, row, "http://x", date(2027, 6, 1))
    assert [n.kind for n in fresh.lifecycle] == []
    assert [n.kind for n in old.lifecycle] == ["stale"] and str(STALE_DAYS) in old.lifecycle[0].text
