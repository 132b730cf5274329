"""The evidence part of a run page (and its JSON twin): level with its reasons, signatures
checked now, attestations with theirs, correction requests, a correction banner and CSL-JSON."""

from __future__ import annotations

import json
from datetime import date
from typing import TYPE_CHECKING, Any

from kernelindex.ranking.evidence_facts import evidence_for_run
from kernelindex.records.attestation import CLAIMS
from kernelindex.records.citation import citation_for, csl_json
from kernelindex.store.evidence_store import (
    ACTIONS,
    PROBLEMS,
    SignatureCheck,
    attestations_for,
    correction_requests_for,
    signature_checks,
)
from kernelindex.store.reads.run_facts import RunFacts, facts_of_run
from kernelindex.store.reads.runs import run_ids_by_digest
from kernelindex.views.formatting import format_value

if TYPE_CHECKING:
    from sqlalchemy import Connection

CLAIM_TEXT = {
    "reproduced": "Reproduced",
    "could_not_reproduce": "Could not reproduce",
    "environment_note": "Environment note",
    "regression_observed": "Regression observed",
}


def signature_dict(check: SignatureCheck) -> dict[str, Any]:
    return {
        "keyId": check.key_id,
        "signer": check.label or check.key_id,
        "signedAt": check.signed_at,
        "valid": check.valid,
        "problem": check.problem,
        "publicKey": check.public_key,
        "envelope": check.envelope,
    }


def _attestation_item(row: Any, checks: list[SignatureCheck], run_ids: dict[str, str]) -> dict[str, Any]:
    spec = row["record"]["spec"]
    measured = spec.get("measured")
    repro = spec.get("reproductionRunDigest")
    return {
        "digest": row["attestation_digest"],
        "anchor": "att-" + row["attestation_digest"].removeprefix("sha256:")[:12],
        "claim": spec["claim"],
        "claimText": CLAIM_TEXT[spec["claim"]],
        "attester": spec["attester"],
        "observedAt": spec["observedAt"],
        "receivedAt": row["created_at"],
        "note": spec.get("note"),
        "measured": dict(measured, display=format_value(measured["value"], measured["unit"])) if measured else None,
        "evidence": spec.get("evidence"),
        "reproductionRun": {"digest": repro, "url": f"/runs/{run_ids[repro]}" if repro in run_ids else None}
        if repro
        else None,
        "viaApiKey": row["api_key_id"] is not None,
        "signatures": [signature_dict(c) for c in checks],
        "record": row["record"],
    }


def evidence_panel(
    conn: Connection, row: Any, base_url: str, today: date, facts: RunFacts | None = None
) -> dict[str, Any]:
    """Everything the evidence partials and the run's JSON show, computed from stored facts now
    (``facts``: the run's :func:`facts_of_run`, when the caller has read them already)."""
    evidence = evidence_for_run(conn, row.run_digest)
    attestation_rows = attestations_for(conn, row.run_digest)
    checks = signature_checks(conn, [row.run_digest] + [a["attestation_digest"] for a in attestation_rows])
    repro_digests = [a["reproduction_run_digest"] for a in attestation_rows if a["reproduction_run_digest"]]
    run_ids = run_ids_by_digest(conn, repro_digests)
    facts = facts or facts_of_run(conn, row.id)
    correction = None
    if facts.superseded_by is not None:
        correction = {"kind": "superseded", "url": f"/runs/{facts.superseded_by}", "digest": facts.superseded_by_digest}
    elif facts.retraction is not None:
        correction = {
            "kind": "retracted",
            "at": facts.retraction.at,
            "reason": facts.retraction.reason or "no reason given",
        }
    citation = citation_for(row.manifest["run"], row.run_digest, base_url, today)
    return {
        "level": evidence.level,
        "reasons": list(evidence.reasons),
        "verifiedRuns": evidence.facts["verified_runs"],
        "signatures": [signature_dict(c) for c in checks.get(row.run_digest, [])],
        "attestations": [
            _attestation_item(a, checks.get(a["attestation_digest"], []), run_ids) for a in attestation_rows
        ],
        "corrections": [
            {
                k: r[k]
                for k in ("id", "problem", "requested_action", "status", "resolution", "created_at", "resolved_at")
            }
            for r in correction_requests_for(conn, row.run_digest)
        ],
        "correction": correction,
        "permalink": citation.permalink,
        "cslJson": json.dumps([csl_json(citation)], indent=2, ensure_ascii=False),
        "forms": {
            "attest": f"/runs/{row.id}/attestations",
            "report": f"/runs/{row.id}/corrections",
            "claims": [(claim, CLAIM_TEXT[claim]) for claim in CLAIMS],
            "problems": list(PROBLEMS),
            "actions": list(ACTIONS),
        },
    }
