"""Posting results: only for a lease the runner holds, signed by its registered key, measured on the
hardware asked for; a refused result stores nothing. Uses one real harness run of the vector-add fixture."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest
from queue_kit import counts, register, vector_add_submission

from kernelindex.records.request_signing import sign_request
from kernelindex.records.signing import new_private_key
from kernelindex.services import queue as service
from kernelindex.services.queue import QueueError
from kernelindex.services.remote_runner import signed_result
from kernelindex.store.reads import queue as reads

pytestmark = pytest.mark.xdist_group("queue_results")  # one worker evaluates vector_suite, not each (-n 2)


def _refused(code: str, *args) -> QueueError:
    with pytest.raises(QueueError) as caught:
        service.complete(*args)
    assert caught.value.code == code, str(caught.value)
    return caught.value


def _lease_state(store, lease_id: str) -> str:
    with store.engine.connect() as conn:
        return reads.lease_row(conn, lease_id).state


def _job(store, hardware="cpu", seconds=60.0):
    service.submit(store, vector_add_submission(hardware=hardware))
    private_key, kid = register(store, "a", hardware=hardware)
    return private_key, kid, service.lease(store, kid, seconds=seconds)


def test_accepted_once_then_a_second_post_is_refused(store, vector_suite):
    key, kid, job = _job(store)
    payload = signed_result(vector_suite, key)
    stored = service.complete(store, kid, job["lease"], payload, {"harnessS": 1.5})
    assert stored["state"] == "done" and len(stored["runs"]) == len(vector_suite.cases) + 1
    assert stored["suiteRun"] in stored["runs"]
    before = counts(store)
    _refused("lease_closed", store, kid, job["lease"], payload)
    assert counts(store) == before
    with store.engine.connect() as conn:
        lease = reads.lease_row(conn, job["lease"])
    assert (
        lease.state == "completed" and lease.timings["harnessS"] == 1.5 and lease.suite_run_digest == stored["suiteRun"]
    )


def test_a_lease_held_by_another_runner(store, vector_suite):
    _, _, job = _job(store)
    other_key, other = register(store, "b")
    before = counts(store)
    _refused("not_holder", store, other, job["lease"], signed_result(vector_suite, other_key))
    assert counts(store) == before and _lease_state(store, job["lease"]) == "active"
    _refused("unknown_lease", store, other, "01900000-0000-7000-8000-000000000000", {})


def test_an_expired_lease(store, vector_suite):
    key, kid, job = _job(store, seconds=-1)
    before = counts(store)
    _refused("lease_closed", store, kid, job["lease"], signed_result(vector_suite, key))
    assert counts(store) == before


def test_forged_signature_closes_the_lease_and_stores_nothing(store, vector_suite):
    key, kid, job = _job(store)
    before = counts(store)
    forged = signed_result(vector_suite, new_private_key())  # signed by a key that is not this runner's
    error = _refused("bad_signature", store, kid, job["lease"], forged)
    assert "no signature by key" in str(error)
    assert counts(store)["runs"] == before["runs"] and _lease_state(store, job["lease"]) == "refused"


def test_altered_signature(store, vector_suite):
    key, kid, job = _job(store)
    payload = signed_result(vector_suite, key)
    altered = copy.deepcopy(payload)
    run_digest = next(iter(altered["signatures"]))
    envelope = altered["signatures"][run_digest]
    other = next(d for d in altered["signatures"] if d != run_digest)
    envelope["payload"] = altered["signatures"][other]["payload"]  # a valid statement about another run
    _refused("bad_signature", store, kid, job["lease"], altered)
    assert counts(store)["runs"] == 0


def test_missing_signature(store, vector_suite):
    key, kid, job = _job(store)
    payload = signed_result(vector_suite, key)
    payload["signatures"].pop(payload["suiteRun"])
    error = _refused("bad_signature", store, kid, job["lease"], payload)
    assert "is not signed" in str(error) and counts(store)["runs"] == 0


def test_environment_that_does_not_match_the_request(store, vector_suite):
    key, kid, job = _job(store, hardware="H200")  # a CPU result for an H200 request
    error = _refused("environment_mismatch", store, kid, job["lease"], signed_result(vector_suite, key))
    assert "'h200'" in str(error) and counts(store)["runs"] == 0
    assert _lease_state(store, job["lease"]) == "refused"
    with store.engine.connect() as conn:
        assert reads.request_row(conn, job["request"]).state == "queued"  # another runner may take it


def test_records_of_another_solution_are_refused(store, vector_suite):
    key, kid, job = _job(store)
    payload = signed_result(vector_suite, key)
    implementation = next(r for r in payload["records"] if r["kind"] == "ImplementationRevision")
    implementation["spec"]["source"]["contentDigest"] = "sha256:" + "0" * 64
    error = _refused("bad_result", store, kid, job["lease"], payload)
    assert "not the submitted solution" in str(error) and counts(store)["runs"] == 0


@pytest.mark.parametrize("field, value", [("kind", 0.0), ("mediaType", {"type": "text/html"})])
def test_an_artifact_described_by_anything_but_text_is_refused(store, vector_suite, field, value):
    """The runner's own words about an artifact are stored as text; anything else was stored as
    its Python repr (found by a seeded fuzz of signed hostile results)."""
    key, kid, job = _job(store)
    payload = signed_result(vector_suite, key)
    payload["artifacts"][0][field] = value
    error = _refused("bad_result", store, kid, job["lease"], payload)
    assert "are strings" in str(error) and counts(store)["runs"] == 0


def test_runner_requests_must_be_signed_by_a_registered_unrevoked_key(store):
    key, kid = register(store, "a")
    path, body = "/api/v1/runner/lease", b"{}"
    assert service.authenticate_runner(store, sign_request(key, "POST", path, body), "POST", path, body) == kid
    headers = sign_request(key, "POST", path, body)
    with pytest.raises(QueueError, match="does not hold"):
        service.authenticate_runner(store, headers, "POST", path, b'{"x": 1}')  # another body
    with pytest.raises(QueueError, match="does not hold"):
        service.authenticate_runner(store, headers, "POST", "/api/v1/runner/leases/x/result", body)  # another path
    stale = sign_request(key, "POST", path, body, now=datetime.now(UTC) - timedelta(hours=1))
    with pytest.raises(QueueError, match="away from the server's clock"):
        service.authenticate_runner(store, stale, "POST", path, body)
    stranger = new_private_key()
    with pytest.raises(QueueError, match="not registered"):
        service.authenticate_runner(store, sign_request(stranger, "POST", path, body), "POST", path, body)
    with pytest.raises(QueueError, match="must be signed"):
        service.authenticate_runner(store, {}, "POST", path, body)
    service.revoke_runner(store, kid)
    with pytest.raises(QueueError) as caught:
        service.authenticate_runner(store, sign_request(key, "POST", path, body), "POST", path, body)
    assert caught.value.code == "revoked"


FIRST, SECOND = "3a1f0e2c-0000-4000-8000-000000000001", "3a1f0e2c-0000-4000-8000-000000000002"


@pytest.fixture(scope="module")
def first_case_suite():
    """A run of vector_add's first case alone (what `runner --cases` or a request's cases make)."""
    from queue_kit import QUICK, VECTOR_ADD, VECTOR_ADD_SOLUTION

    from kernelindex.services import harness_adapter as harness

    return harness.run(VECTOR_ADD, VECTOR_ADD_SOLUTION, harness.evaluation_options(QUICK, "cpu", [FIRST]))


def test_a_result_of_the_requests_cases_is_taken_and_of_others_refused(store, first_case_suite):
    key, kid = register(store, "a")
    asked_other = service.submit(store, vector_add_submission(cases=[SECOND]))
    other = service.lease(store, kid, seconds=60)
    before = counts(store)
    refused = _refused("bad_result", store, kid, other["lease"], signed_result(first_case_suite, key))
    assert f"ran cases the request did not ask for: {FIRST}" in str(refused) and counts(store) == before
    service.cancel(store, asked_other)  # the refusal put it back in the queue
    service.submit(store, vector_add_submission(cases=[FIRST]))
    job = service.lease(store, kid, seconds=60)
    assert job["protocol"]["cases"] == [FIRST]
    stored = service.complete(store, kid, job["lease"], signed_result(first_case_suite, key), {})
    assert stored["state"] == "done" and len(stored["runs"]) == 2  # the one case's run and its suite's
