"""The level function on its own: each level needs exactly its facts, and says which ones."""

from __future__ import annotations

import itertools

from kernelindex.ranking.evidence import evidence_level

REPORTED = {"source": "sol-execbench", "source_kind": "leaderboard", "status": "passed"}


def _verified(n: int, *, keys=None, hosts=None, signed=True) -> list[dict]:
    keys = keys or [f"sha256:{i:064x}" for i in range(n)]
    hosts = hosts or [f"host-{i}" for i in range(n)]
    return [
        {"run_digest": f"sha256:{i + 100:064x}", "runner_id": k, "runner_host": h, "signed": signed, "status": "passed"}
        for i, (k, h) in enumerate(zip(keys, hosts))
    ]


def test_reproducible_needs_all_three_facts_and_names_the_missing_ones() -> None:
    facts = dict(REPORTED, has_source=True, full_identity=True, has_raw_evidence=True)
    level, reasons = evidence_level(facts)
    assert level == "reproducible" and "raw evidence present" in reasons
    for missing in ("has_source", "full_identity", "has_raw_evidence"):
        level, reasons = evidence_level(dict(facts, **{missing: False}))
        assert level == "reported"
        label = {"has_source": "source code", "full_identity": "full identity", "has_raw_evidence": "raw evidence"}[
            missing
        ]
        assert reasons[-1] == f"not reproducible: missing {label}"
    _, reasons = evidence_level(dict(facts, full_identity=False, missing_identity=["workload"]))
    assert "no stored workload record" in reasons[-1]


def test_replicated_needs_two_signed_runners_that_differ_in_key_and_host() -> None:
    assert evidence_level(dict(REPORTED, verified_runs=_verified(2)))[0] == "replicated"
    same_key = _verified(2, keys=["sha256:" + "a" * 64] * 2)
    same_host = _verified(2, hosts=["h"] * 2)
    unsigned = _verified(2, signed=False)
    for runs in (same_key, same_host, unsigned, _verified(1)):
        level, reasons = evidence_level(dict(REPORTED, verified_runs=runs))
        assert level == "verified" and any("not replicated" in r for r in reasons)
    # Three runners where only one pair is independent still replicate, whatever the order.
    runs = _verified(
        3, keys=["sha256:" + "a" * 64, "sha256:" + "a" * 64, "sha256:" + "b" * 64], hosts=["h1", "h2", "h2"]
    )
    for order in itertools.permutations(runs):
        assert evidence_level(dict(REPORTED, verified_runs=list(order)))[0] == "replicated"
    assert evidence_level(dict(REPORTED, verified_runs=runs[1:]))[0] == "verified"  # same host h2


def test_a_retraction_and_a_failed_harness_run_leave_only_reported() -> None:
    level, reasons = evidence_level(dict(REPORTED, retracted_at="2026-11-29T16:00:00Z", verified_runs=_verified(2)))
    assert level == "reported" and "retracted" in reasons[0]
    level, reasons = evidence_level({"source_kind": "controlled", "status": "timeout", "verified_runs": []})
    assert level == "reported" and "did not pass (status timeout)" in reasons[0]
    assert evidence_level(dict(REPORTED, verified_runs=[dict(_verified(1)[0], status="timeout")]))[0] == "reported"
