"""The queue's use cases on a real store: refused submissions, leases, races, expiry, attempts."""

from __future__ import annotations

import json
import random
import threading

import pytest
from queue_kit import counts, register, vector_add_submission

from hostile_kit import SEED, hostile_edit
from kernelindex.services import queue as service
from kernelindex.services.queue import QueueError
from kernelindex.store.reads import queue as reads


def _code(call, *args, **kwargs) -> str:
    with pytest.raises(QueueError) as caught:
        call(*args, **kwargs)
    return caught.value.code


def test_refused_submissions_store_nothing(store):
    before = counts(store)
    big = vector_add_submission()
    big.solution["sources"].append({"path": "padding.py", "content": "#" * (service.MAX_SOLUTION_BYTES + 1)})
    assert _code(service.submit, store, big) == "too_large"
    no_entry = vector_add_submission()
    no_entry.solution["spec"]["entry_point"] = "missing.py::run"
    assert _code(service.submit, store, no_entry) == "bad_solution"
    unknown = vector_add_submission(problem_files=None, problem_name="no_such_problem")
    with pytest.raises(QueueError, match="no_such_problem") as caught:
        service.submit(store, unknown)
    assert caught.value.code == "unknown_problem"
    wrong = vector_add_submission()
    wrong.solution["definition"] = "softmax_f32"
    assert _code(service.submit, store, wrong) == "bad_solution"
    assert _code(service.submit, store, vector_add_submission(replicas=0)) == "bad_request"
    assert _code(service.submit, store, vector_add_submission(hardware="<h200>")) == "bad_request"
    assert _code(service.submit, store, vector_add_submission(protocol={"rounds": 0})) == "bad_request"
    assert counts(store) == before


def test_documents_no_record_can_hold_are_refused_at_submission(store):
    """Each of these passed the format checks and failed later (a traceback in the service, or in the
    runner after the job was taken): an integer past 2**53 or a lone surrogate in the solution, an
    axis past 2**53 in the problem, problem text that is no UTF-8."""
    before = counts(store)
    huge = vector_add_submission()
    huge.solution["spec"]["compile_options"] = {"unroll": 10**30}
    assert _code(service.submit, store, huge) == "bad_solution"
    odd = vector_add_submission()
    odd.solution["sources"][0]["content"] += "# \ud800\n"
    assert _code(service.submit, store, odd) == "bad_solution"
    files = vector_add_submission().problem_files
    case = json.loads(files["workload.jsonl"].splitlines()[0])
    wide = vector_add_submission(problem_files={**files, "workload.jsonl": json.dumps({**case, "axes": {"n": 10**30}})})
    with pytest.raises(QueueError, match="workload.jsonl") as caught:
        service.submit(store, wide)
    assert caught.value.code == "bad_problem"
    broken = vector_add_submission(problem_files={**files, "definition.json": files["definition.json"] + "\ud800"})
    assert _code(service.submit, store, broken) == "bad_problem"
    assert counts(store) == before


def test_same_sources_are_stored_once(store):
    first = service.submit(store, vector_add_submission())
    after_first = counts(store)
    second = service.submit(store, vector_add_submission(replicas=2))
    assert first != second
    assert counts(store)["artifacts"] == after_first["artifacts"]  # problem, document, sources: one copy each
    with store.engine.connect() as conn:
        a, b = reads.request_row(conn, first), reads.request_row(conn, second)
    assert (a.solution_digest, a.problem_digest, a.document_digest) == (
        b.solution_digest,
        b.problem_digest,
        b.document_digest,
    )


def test_a_submitted_problem_can_be_named_later(store):
    service.submit(store, vector_add_submission())
    by_name = service.submit(store, vector_add_submission(problem_files=None, problem_name="vector_add_f32"))
    with store.engine.connect() as conn:
        assert reads.request_row(conn, by_name).problem_name == "vector_add_f32"


def test_two_runners_racing_for_one_job_exactly_one_gets_it(any_store):
    request_id = service.submit(any_store, vector_add_submission())
    keys = [register(any_store, f"r{n}")[1] for n in range(6)]
    start = threading.Barrier(len(keys))
    got: dict[str, object] = {}

    def take(kid: str) -> None:
        start.wait()
        got[kid] = service.lease(any_store, kid)

    threads = [threading.Thread(target=take, args=(kid,)) for kid in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [job for job in got.values() if job is not None]
    assert len(got) == len(keys) and len(winners) == 1
    assert winners[0]["request"] == request_id
    with any_store.engine.connect() as conn:
        assert reads.request_row(conn, request_id).state == "leased"
        assert len(reads.leases_of(conn, request_id)) == 1


def test_replicas_go_to_different_keys(any_store):
    request_id = service.submit(any_store, vector_add_submission(replicas=2))
    (_, a), (_, b), (_, c) = (register(any_store, n) for n in "abc")
    assert service.lease(any_store, a)["request"] == request_id
    assert service.lease(any_store, a) is None  # the same key never holds two replicas
    assert service.lease(any_store, b)["request"] == request_id
    assert service.lease(any_store, c) is None
    with any_store.engine.connect() as conn:
        assert reads.request_row(conn, request_id).state == "leased"


def test_hardware_decides_who_gets_a_job(store):
    service.submit(store, vector_add_submission(hardware="H200"))
    _, cpu = register(store, "cpu-runner")
    _, gpu = register(store, "gpu-runner", hardware="h200")
    assert service.lease(store, cpu) is None
    assert service.lease(store, gpu)["hardware"] == "h200"


def test_expired_lease_goes_back_and_attempts_run_out(store):
    request_id = service.submit(store, vector_add_submission(max_attempts=2))
    (_, a), (_, b), (_, c) = (register(store, n) for n in "abc")
    first = service.lease(store, a, seconds=-1)  # already past its expiry: the runner "died"
    assert _code(service.heartbeat, store, a, first["lease"]) == "lease_closed"
    second = service.lease(store, b, seconds=-1)
    assert second["request"] == request_id and second["attempt"] == 2
    assert service.lease(store, c) is None  # the sweep in this call expired the second lease: attempts used up
    with store.engine.connect() as conn:
        row = reads.request_row(conn, request_id)
        leases = reads.leases_of(conn, request_id)
    assert row.state == "failed" and [lease.state for lease in leases] == ["expired", "expired"]
    assert "2 attempt(s) used" in row.failure
    for lease in leases:  # each reason names that lease's own deadline, not the moment the sweep saw it
        assert f"lease expired at {lease.expires_at} (no heartbeat)" in row.failure
        assert lease.finished_at > lease.expires_at


def test_runner_gives_a_job_back(store):
    request_id = service.submit(store, vector_add_submission())
    (_, a), (_, b) = register(store, "a"), register(store, "b")
    job = service.lease(store, a)
    assert _code(service.fail, store, b, job["lease"], "not mine") == "not_holder"
    assert service.fail(store, a, job["lease"], "CUDA out of memory") == "queued"
    again = service.lease(store, b)
    assert again["request"] == request_id and again["attempt"] == 2


def test_cancel(store):
    request_id = service.submit(store, vector_add_submission())
    _, a = register(store, "a")
    job = service.lease(store, a)
    service.cancel(store, request_id)
    assert _code(service.heartbeat, store, a, job["lease"]) == "lease_closed"
    assert _code(service.cancel, store, request_id) == "conflict"


def test_revoked_and_duplicate_runner_keys(store):
    private_key, kid = register(store, "a")
    from kernelindex.records.signing import public_key_to_text

    text = public_key_to_text(private_key.public_key())
    assert _code(service.register_runner, store, text, label="a", machine="m", hardware="cpu") == "conflict"
    service.revoke_runner(store, kid)
    assert _code(service.revoke_runner, store, kid) == "unknown_runner"
    assert _code(service.register_runner, store, text, label="a", machine="m", hardware="cpu") == "conflict"


def test_any_hostile_value_in_a_submission_is_queued_or_refused_by_code(store):
    """Seeded property: a hostile value at a random place of the solution document or of a problem
    file; submit() queues it or raises QueueError (what the API turns into a 4xx), nothing else."""
    rng = random.Random(f"{SEED}-submit")
    print(f"hostile submission seed: {SEED} (set KERNELINDEX_TEST_SEED to repeat)")
    for _ in range(40):
        submission = vector_add_submission()
        part = rng.choice(["solution", "definition.json", "workload.jsonl"])
        if part == "solution":
            what = hostile_edit(submission.solution, rng)
        elif part == "definition.json":
            document = json.loads(submission.problem_files[part])
            what = hostile_edit(document, rng)
            submission.problem_files[part] = json.dumps(document)
        else:
            document = json.loads(submission.problem_files[part].splitlines()[0])
            what = hostile_edit(document, rng)
            submission.problem_files[part] = json.dumps(document) + "\n"
        before = counts(store)
        try:
            service.submit(store, submission)
        except QueueError:
            assert counts(store) == before, f"{part}: {what} (seed {SEED})"
        except Exception as exc:  # noqa: BLE001 - what the property is about
            pytest.fail(f"{part}: {what} (seed {SEED}): {exc!r}")
