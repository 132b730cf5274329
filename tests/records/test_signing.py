"""DSSE/in-toto signing of record digests: round trip and every way a signature must fail."""

from __future__ import annotations

import base64
import copy
import json
import random

import pytest

from kernelindex.records.canonical import canonical_json, digest
from kernelindex.records.signing import (
    SignatureError,
    envelope_key_ids,
    key_id,
    new_private_key,
    pae,
    private_key_from_pem,
    private_key_to_pem,
    public_key_from_text,
    public_key_to_text,
    sign_record_digest,
    verify_envelope,
)

SIGNED_AT = "2026-11-29T16:00:00Z"


@pytest.fixture()
def record_digest() -> str:
    seed = random.randrange(2**32)
    print(f"seed={seed}")
    value = random.Random(seed).random()
    return digest({"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun", "spec": {"x": value}})


def test_round_trip_names_signer_and_record(record_digest: str) -> None:
    key = new_private_key()
    envelope = sign_record_digest(key, record_digest, "BenchmarkRun", SIGNED_AT)
    checked = verify_envelope(envelope, key.public_key(), record_digest)
    assert checked.key_id == key_id(key.public_key())
    assert checked.record_digest == record_digest
    assert checked.record_kind == "BenchmarkRun"
    assert envelope_key_ids(envelope) == [checked.key_id]
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["subject"][0]["digest"]["sha256"] == record_digest.removeprefix("sha256:")


def test_pae_matches_dsse_spec_example() -> None:
    # The DSSE protocol document's worked example: type "http://example.com/HelloWorld", body "hello world".
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


def test_keys_survive_serialisation() -> None:
    key = new_private_key()
    again = private_key_from_pem(private_key_to_pem(key))
    assert key_id(again.public_key()) == key_id(key.public_key())
    public = public_key_from_text(public_key_to_text(key.public_key()))
    assert key_id(public) == key_id(key.public_key())


def test_forged_signature_is_refused(record_digest: str) -> None:
    key = new_private_key()
    envelope = sign_record_digest(key, record_digest, "BenchmarkRun", SIGNED_AT)
    raw = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
    raw[random.randrange(len(raw))] ^= 0x01
    envelope["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode()
    with pytest.raises(SignatureError, match="forged or altered"):
        verify_envelope(envelope, key.public_key(), record_digest)


def test_altered_payload_is_refused(record_digest: str) -> None:
    key = new_private_key()
    envelope = sign_record_digest(key, record_digest, "BenchmarkRun", SIGNED_AT)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["recordKind"] = "Attestation"
    envelope["payload"] = base64.b64encode(canonical_json(statement)).decode()
    with pytest.raises(SignatureError, match="forged or altered"):
        verify_envelope(envelope, key.public_key(), record_digest)


def test_swapped_payload_type_is_refused(record_digest: str) -> None:
    key = new_private_key()
    envelope = sign_record_digest(key, record_digest, "BenchmarkRun", SIGNED_AT)
    envelope["payloadType"] = "application/json"
    with pytest.raises(SignatureError, match="payloadType"):
        verify_envelope(envelope, key.public_key(), record_digest)


def test_signature_over_a_different_digest_is_refused(record_digest: str) -> None:
    key = new_private_key()
    other = "sha256:" + "ab" * 32
    envelope = sign_record_digest(key, other, "BenchmarkRun", SIGNED_AT)
    with pytest.raises(SignatureError, match=f"covers record {other}, not {record_digest}"):
        verify_envelope(envelope, key.public_key(), record_digest)


def test_wrong_key_is_refused(record_digest: str) -> None:
    key, stranger = new_private_key(), new_private_key()
    envelope = sign_record_digest(key, record_digest, "BenchmarkRun", SIGNED_AT)
    with pytest.raises(SignatureError, match="no signature by key"):
        verify_envelope(envelope, stranger.public_key(), record_digest)
    # Claiming the stranger's key id does not help: the bytes still are not the stranger's signature.
    forged = copy.deepcopy(envelope)
    forged["signatures"][0]["keyid"] = key_id(stranger.public_key())
    with pytest.raises(SignatureError, match="forged or altered"):
        verify_envelope(forged, stranger.public_key(), record_digest)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda e: e.pop("signatures"), "signatures"),
        (lambda e: e.update(extra=1), "unknown field"),
        (lambda e: e.update(payload="%%%not base64"), "base64"),
        (lambda e: e["signatures"].append({"keyid": 1, "sig": "x"}), r"signatures\[1\]"),
        (lambda e: e.update(payload=base64.b64encode(b"not json").decode()), "forged or altered"),
    ],
)
def test_malformed_envelopes_are_refused(record_digest: str, mutate, message: str) -> None:
    key = new_private_key()
    envelope = sign_record_digest(key, record_digest, "BenchmarkRun", SIGNED_AT)
    mutate(envelope)
    with pytest.raises(SignatureError, match=message):
        verify_envelope(envelope, key.public_key(), record_digest)


def test_bad_key_material_is_refused() -> None:
    with pytest.raises(SignatureError, match="32"):
        public_key_from_text(base64.b64encode(b"short").decode())
    with pytest.raises(SignatureError, match="PEM"):
        private_key_from_pem(b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")
    with pytest.raises(SignatureError, match="not sha256"):
        sign_record_digest(new_private_key(), "md5:abc", "BenchmarkRun", SIGNED_AT)
