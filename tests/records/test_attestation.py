"""The Attestation kind: valid records digest like any other; bad or hostile fields are refused."""

from __future__ import annotations

import random

import pytest

from kernelindex.records.attestation import new_attestation
from kernelindex.records.errors import RecordError
from kernelindex.records.models import dump_record, parse_record, record_digest

RUN = "sha256:" + "1" * 64


def _spec(**changes):
    spec = {
        "claim": "reproduced",
        "runDigest": RUN,
        "attester": {"name": "A. Tester", "github": "a-tester"},
        "observedAt": "2026-11-29T16:01:02.123Z",
        "note": "Matched within 2 % on an H100 (latency < 9 us).",
        "measured": {"value": 8123.5, "unit": "ns", "metric": "latency", "statistic": "median"},
        "evidence": {"uri": "https://example.org/log.txt", "digest": "sha256:" + "2" * 64},
    }
    spec.update(changes)
    return {key: value for key, value in spec.items() if value is not None}


def _record(**changes) -> dict:
    return dump_record(new_attestation(_spec(**changes)))


def test_valid_attestation_parses_like_any_kind_with_a_stable_digest() -> None:
    record = _record()
    assert record["kind"] == "Attestation" and record["apiVersion"] == "kernelindex.dev/v1alpha1"
    parsed = parse_record(record, where="test")
    assert dump_record(parsed) == record
    assert record_digest(parsed) == record_digest(new_attestation(_spec()))
    # Metadata is presentation: renaming keeps the digest, changing a fact does not.
    renamed = parse_record(dict(record, metadata={"name": "other-name"}))
    assert record_digest(renamed) == record_digest(parsed)
    assert record_digest(parse_record(_record(claim="could_not_reproduce"))) != record_digest(parsed)


def test_optional_fields_are_left_out_of_the_record() -> None:
    record = _record(note=None, measured=None, evidence=None)
    assert set(record["spec"]) == {"claim", "runDigest", "attester", "observedAt"}


HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "</p>", "&lt;b&gt;", "&#60;", "<!-- x -->"]


@pytest.mark.parametrize(
    "path",
    [
        ("spec", "note"),
        ("spec", "attester", "name"),
        ("metadata", "title"),
        ("metadata", "description"),
        ("metadata", "authors", 0, "name"),
    ],
)
def test_html_is_refused_in_every_text_field(path) -> None:
    seed = random.randrange(2**32)
    print(f"seed={seed}")
    payload = random.Random(seed).choice(HOSTILE)
    record = _record()
    record["metadata"]["authors"] = [{"name": "someone"}]
    target = record
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = f"fine text {payload}"
    with pytest.raises(RecordError) as info:
        parse_record(record, where="form")
    assert "plain text" in str(info.value)
    assert str(path[-1]) in str(info.value)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"claim": "verified"}, "spec.claim"),
        ({"runDigest": "sha256:xyz"}, "spec.runDigest"),
        ({"observedAt": "2026-02-30T00:00:00Z"}, "spec.observedAt"),
        ({"observedAt": "2026-01-01T00:00:00+02:00"}, "spec.observedAt"),
        ({"note": "x" * 4001}, "spec.note"),
        ({"note": ""}, "spec.note"),
        ({"note": "bell\x07"}, "spec.note"),
        ({"measured": {"value": float("nan"), "unit": "ns"}}, "spec.measured.value"),
        ({"measured": {"value": 1.0, "unit": "Nano Seconds"}}, "spec.measured.unit"),
        ({"evidence": {"uri": "javascript:alert(1)", "digest": "sha256:" + "2" * 64}}, "spec.evidence.uri"),
        ({"evidence": {"uri": "https://x.org/a"}}, "spec.evidence.digest"),
        ({"level": "verified"}, "spec.level"),
        ({"attester": {"name": "x", "role": "maintainer"}}, "spec.attester.role"),
    ],
)
def test_bad_fields_are_refused_by_name(changes, field) -> None:
    record = _record()
    record["spec"].update(changes)
    with pytest.raises(RecordError) as info:
        parse_record(record, where="upload line 3")
    assert str(info.value).startswith("upload line 3: ")
    assert field in [path for path, _ in info.value.problems]
