"""Storing attestations, API keys and correction requests: each refusal names its reason and
leaves nothing behind."""

from __future__ import annotations

import base64
import copy

import pytest
from evidence_fixtures import add_harness_run, seed_bundle
from sqlalchemy import func, select

from kernelindex.records.attestation import new_attestation
from kernelindex.records.canonical import digest
from kernelindex.records.models import dump_record
from kernelindex.records.signing import key_id, new_private_key, sign_record_digest
from kernelindex.store.evidence.records import (
    EvidenceError,
    add_attestation,
    add_correction_request,
    attestations_for,
    authenticate,
    close_correction_request,
    create_api_key,
    revoke_api_key,
    signature_checks,
)
from kernelindex.store.evidence.tables import attestations, correction_requests, signatures, signing_keys

NOW = "2026-11-29T16:10:00.000Z"


@pytest.fixture()
def store(any_store):
    """These rules must hold on SQLite and on PostgreSQL alike."""
    return any_store


def _counts(store) -> tuple[int, int, int, int]:
    with store.begin() as conn:
        return tuple(
            conn.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (attestations, signatures, signing_keys, correction_requests)
        )


def _attestation(run_digest: str, rng, key=None, **changes) -> dict:
    spec = {
        "claim": "reproduced",
        "runDigest": run_digest,
        "attester": {"name": f"tester {rng.randrange(1000)}"},
        "observedAt": NOW,
        "measured": {"value": rng.randrange(7000, 9000), "unit": "ns", "metric": "latency", "statistic": "mean"},
    }
    if key is not None:
        spec["attester"]["keyId"] = key_id(key.public_key())
    spec.update(changes)
    return dump_record(new_attestation(spec))


def _signed(record: dict, key) -> dict:
    return sign_record_digest(key, digest(record), "Attestation", NOW)


def test_signed_attestation_is_stored_with_a_checked_signature(store, seed_digest, rng) -> None:
    key = new_private_key()
    record = _attestation(seed_digest, rng, key)
    with store.begin() as conn:
        stored = add_attestation(conn, record, envelope=_signed(record, key), public_key=key.public_key())
        assert stored == digest(record)
        rows = attestations_for(conn, seed_digest)
        assert [r["attestation_digest"] for r in rows] == [stored]
        assert rows[0]["signer_key_id"] == key_id(key.public_key())
        (check,) = signature_checks(conn, [stored])[stored]
        assert check.valid and check.key_id == key_id(key.public_key())


def _refused(store, code: str, message: str, **kwargs) -> None:
    before = _counts(store)
    with pytest.raises(EvidenceError) as info:
        with store.begin() as conn:
            add_attestation(conn, **kwargs)
    assert info.value.code == code
    assert message in str(info.value)
    assert _counts(store) == before, "a refused attestation left rows behind"


def test_attacks_on_attestations_are_refused_and_store_nothing(store, seed_digest, rng) -> None:
    key, other_key = new_private_key(), new_private_key()
    record = _attestation(seed_digest, rng, key)
    good = _signed(record, key)

    _refused(store, "unknown_run", "no run with digest", record=_attestation("sha256:" + "9" * 64, rng))
    forged = copy.deepcopy(good)
    raw = bytearray(base64.b64decode(good["signatures"][0]["sig"]))
    raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
    forged["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()
    _refused(store, "bad_signature", "forged or altered", record=record, envelope=forged, public_key=key.public_key())
    altered = copy.deepcopy(record)
    altered["spec"]["measured"]["value"] += 1
    _refused(store, "bad_signature", "covers record", record=altered, envelope=good, public_key=key.public_key())
    _refused(
        store, "bad_signature", "no signature by key", record=record, envelope=good, public_key=other_key.public_key()
    )
    _refused(store, "unknown_key", "not registered", record=record, envelope=good)
    _refused(store, "bad_signature", "no signature came", record=record)
    html = _attestation(seed_digest, rng)
    html["spec"]["note"] = "<script>alert(1)</script>"
    _refused(store, "invalid_record", "spec.note", record=html)
    _refused(store, "invalid_record", "kind", record=seed_bundle()["run"])

    with store.begin() as conn:
        add_attestation(conn, record, envelope=good, public_key=key.public_key())
    _refused(store, "replay", "already recorded", record=record, envelope=good, public_key=key.public_key())


def test_reproduction_links_only_to_a_harness_run_of_the_same_implementation(store, seed_digest, rng) -> None:
    other_seed = digest(seed_bundle("sol-009-sf-tensor-submission-4273.json")["run"])
    _refused(
        store,
        "bad_reproduction",
        "not made by this index's harness",
        record=_attestation(seed_digest, rng, reproductionRunDigest=other_seed),
    )
    harness_digest, _ = add_harness_run(store, seed_bundle(), "host-a", seed=rng.randrange(2**32))
    _refused(
        store,
        "bad_reproduction",
        "different implementation",
        record=_attestation(other_seed, rng, reproductionRunDigest=harness_digest),
    )
    with store.begin() as conn:
        add_attestation(conn, _attestation(seed_digest, rng, reproductionRunDigest=harness_digest))


def test_api_keys_authenticate_by_scope_and_stop_when_revoked(store) -> None:
    with store.begin() as conn:
        writer = create_api_key(conn, "writer", frozenset({"attest"}))
        assert authenticate(conn, writer.token, "attest") == writer.key_id
        for token, scope, code in [
            (None, "attest", "unauthorized"),
            ("ki_" + "0" * 16 + "_" + "A" * 43, "attest", "unauthorized"),
            (writer.token[:-1] + ("A" if writer.token[-1] != "A" else "B"), "attest", "unauthorized"),
            (writer.token, "report", "forbidden"),
        ]:
            with pytest.raises(EvidenceError) as info:
                authenticate(conn, token, scope)
            assert info.value.code == code
        revoke_api_key(conn, writer.key_id)
        with pytest.raises(EvidenceError, match="revoked"):
            authenticate(conn, writer.token, "attest")
        with pytest.raises(EvidenceError, match="no active API key"):
            revoke_api_key(conn, writer.key_id)


def test_daily_limit_counts_attestations_per_key(store, seed_digest, rng) -> None:
    with store.begin() as conn:
        token = create_api_key(conn, "limited", frozenset({"attest"}), daily_limit=2)
    for minute in range(2):
        with store.begin() as conn:
            add_attestation(
                conn, _attestation(seed_digest, rng, observedAt=f"2026-11-29T16:0{minute}:00Z"), api_key_id=token.key_id
            )
    _refused(
        store,
        "rate_limited",
        "limit of 2 attestations per 24 hours",
        record=_attestation(seed_digest, rng, observedAt="2026-11-29T16:05:00Z"),
        api_key_id=token.key_id,
    )


def test_correction_requests_are_checked_then_closed_by_a_maintainer(store, seed_digest) -> None:
    with store.begin() as conn:
        token = create_api_key(conn, "reporter", frozenset({"report"}))
    before = _counts(store)
    for args, message in [
        (("sha256:" + "9" * 64, "wrong_value", "x", "retract"), "no run"),
        ((seed_digest, "because", "x", "retract"), "problem"),
        ((seed_digest, "wrong_value", "x", "delete"), "requested_action"),
        ((seed_digest, "wrong_value", "<b>x</b>", "retract"), "plain text"),
        ((seed_digest, "wrong_value", "x" * 4001, "retract"), "4000"),
    ]:
        with pytest.raises(EvidenceError, match=message):
            with store.begin() as conn:
                add_correction_request(conn, *args, token.key_id)
    assert _counts(store) == before
    with store.begin() as conn:
        request_id = add_correction_request(
            conn, seed_digest, "wrong_value", "mean is 7.7 us not 7.6", "retract", token.key_id
        )
        close_correction_request(conn, request_id, "rejected", "the source confirms the value")
        with pytest.raises(EvidenceError, match="no open correction request"):
            close_correction_request(conn, request_id, "accepted", "again")


def test_racing_writes_with_one_key_cannot_overrun_its_limit(store, seed_digest, rng):
    """Eight threads post at once with a key allowed 3 a day: exactly 3 are stored."""
    import threading

    if store.dialect != "postgresql":
        pytest.skip("SQLite serialises all writers; the row lock matters on PostgreSQL")
    with store.begin() as conn:
        token = create_api_key(conn, "racer", frozenset({"attest"}), daily_limit=3)
    barrier = threading.Barrier(8)
    outcomes: list[str] = []

    def post(index: int) -> None:
        record = _attestation(seed_digest, rng, observedAt=f"2026-11-29T17:00:{index:02d}Z")
        barrier.wait()
        try:
            with store.begin() as conn:
                add_attestation(conn, record, api_key_id=token.key_id)
            outcomes.append("stored")
        except EvidenceError as exc:
            outcomes.append(exc.code)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["rate_limited"] * 5 + ["stored"] * 3
    with store.begin() as conn:
        assert len(attestations_for(conn, seed_digest)) == 3
