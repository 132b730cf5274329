"""Evidence levels come from stored facts: harness reruns on two machines with two runner keys
make a run "replicated"; anything less says exactly what is missing."""

from __future__ import annotations

import pytest
from evidence_fixtures import add_harness_run, seed_bundle
from sqlalchemy import select, update

from kernelindex.ranking.evidence_facts import evidence_for_run, evidence_for_runs
from kernelindex.records.signing import new_private_key, sign_record_digest
from kernelindex.store.evidence.records import record_harness_reproduction, signature_checks
from kernelindex.store.evidence.tables import signatures
from kernelindex.store.tables import runs
from kernelindex.store.writer import Writer


@pytest.fixture()
def store(any_store):
    """These rules must hold on SQLite and on PostgreSQL alike."""
    return any_store


def _reproduce(store, original_digest, host, rng, **kwargs):
    run_digest, key = add_harness_run(store, seed_bundle(), host, seed=rng.randrange(2**32), **kwargs)
    with store.begin() as conn:
        record_harness_reproduction(conn, original_digest, run_digest, key, runner_name=f"runner on {host}")
    return run_digest, key


def test_imported_run_is_reported_and_says_what_is_missing(store, seed_digest) -> None:
    with store.begin() as conn:
        evidence = evidence_for_run(conn, seed_digest)
    assert evidence.level == "reported"
    assert "sol-execbench" in evidence.reasons[0]
    assert "raw evidence" in evidence.reasons[1] and "full identity" in evidence.reasons[1]


def test_two_machines_with_two_runner_keys_make_a_run_replicated(store, seed_digest, rng) -> None:
    first, _ = _reproduce(store, seed_digest, "gpu-host-a", rng)
    with store.begin() as conn:
        assert evidence_for_run(conn, seed_digest).level == "verified"
    second, _ = _reproduce(store, seed_digest, "gpu-host-b", rng)
    with store.begin() as conn:
        levels = evidence_for_runs(conn, [seed_digest, first, second])
    assert levels[seed_digest].level == "replicated"
    assert any("gpu-host-a" in r for r in levels[seed_digest].reasons)
    assert any("gpu-host-b" in r for r in levels[seed_digest].reasons)
    # The harness runs are the same measurement on two machines: each is replicated too.
    assert levels[first].level == levels[second].level == "replicated"


def test_one_key_on_two_machines_or_two_keys_on_one_machine_is_only_verified(store, seed_digest, rng) -> None:
    key = new_private_key()
    _reproduce(store, seed_digest, "host-a", rng, key=key)
    _reproduce(store, seed_digest, "host-b", rng, key=key)
    with store.begin() as conn:
        evidence = evidence_for_run(conn, seed_digest)
    assert evidence.level == "verified"
    assert "not replicated" in evidence.reasons[-1]


def test_unsigned_or_tampered_runner_signatures_do_not_count(store, seed_digest, rng) -> None:
    _reproduce(store, seed_digest, "host-a", rng)
    unsigned, _ = add_harness_run(store, seed_bundle(), "host-b", sign=False, seed=rng.randrange(2**32))
    with store.begin() as conn:
        assert evidence_for_run(conn, seed_digest).level == "verified"
        evidence = evidence_for_run(conn, unsigned)
    assert evidence.level == "verified"
    assert any("no valid runner signature" in r for r in evidence.reasons)

    third, third_key = add_harness_run(store, seed_bundle(), "host-c", seed=rng.randrange(2**32))
    with store.begin() as conn:
        assert evidence_for_run(conn, third).level == "replicated"  # host-a and host-c, both signed
        # Someone swaps the stored envelope for the same key's signature over another record.
        moved = sign_record_digest(third_key, seed_digest, "BenchmarkRun", "2026-11-29T16:00:00Z")
        conn.execute(update(signatures).where(signatures.c.record_digest == third).values(envelope=moved))
        check = signature_checks(conn, [third])[third][0]
        assert not check.valid and "covers record" in check.problem
        assert evidence_for_run(conn, third).level == "verified"


def test_failed_or_retracted_harness_runs_do_not_verify(store, seed_digest, rng) -> None:
    failed, _ = add_harness_run(store, seed_bundle(), "host-a", status="incorrect_numerical", seed=rng.randrange(2**32))
    with store.begin() as conn:
        evidence = evidence_for_run(conn, failed)
    assert evidence.level == "reported" and "did not pass" in evidence.reasons[0]

    first, _ = _reproduce(store, seed_digest, "host-a", rng)
    _reproduce(store, seed_digest, "host-b", rng)
    with store.begin() as conn:
        run_id = conn.execute(select(runs.c.id).where(runs.c.run_digest == first)).scalar_one()
        Writer(conn).retract_run(run_id, "bad clock")
        assert evidence_for_run(conn, seed_digest).level == "verified"
        assert evidence_for_run(conn, first).level == "reported"
