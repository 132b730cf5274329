"""The evidence part of a run page (and its JSON twin): level with its reasons, signatures
checked now, attestations with theirs, correction requests, a correction banner and CSL-JSON."""

from __future__ import annotations

import json
from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from kernelindex.ranking.evidence_facts import evidence_for_run
from kernelindex.records.attestation import CLAIMS
from kernelindex.records.citation import citation_for, csl_json
from kernelindex.store.evidence.records import (
    ACTIONS,
    PROBLEMS,
    SignatureCheck,
    attestations_for,
    correction_requests_for,
    signature_checks,
)
from kernelindex.store.reads.run_facts import RunFacts, facts_of_run
from kernelindex.store.reads.runs import run_ids_by_digest
from kernelindex.views.common import Document, EvidenceLevel, ViewModel
from kernelindex.views.formatting import format_value

if TYPE_CHECKING:
    from sqlalchemy import Connection

CLAIM_TEXT = {
    "reproduced": "Reproduced",
    "could_not_reproduce": "Could not reproduce",
    "environment_note": "Environment note",
    "regression_observed": "Regression observed",
}


class Signature(ViewModel):
    """A signature over a record, checked now against the key it names."""

    keyId: str
    signer: str
    signedAt: str
    valid: bool
    problem: str | None
    publicKey: str = Field(description="base64 of the raw public key: with the envelope, enough to check it anywhere")
    envelope: Document


class VerifiedRun(ViewModel):
    """A passing controlled rerun of this run (what makes it verified)."""

    run_digest: str
    runner_id: str | None
    runner_host: str | None
    status: str
    signed: bool


class ReproductionRun(ViewModel):
    digest: str
    url: str | None = Field(description="its page when that run is stored here, else null")


class Attestation(ViewModel):
    digest: str
    anchor: str
    claim: str
    claimText: str
    attester: Document
    observedAt: str
    receivedAt: str | None
    note: str | None
    measured: Document | None = Field(description="the attested value as stated, plus its `display`")
    evidence: Document | None
    reproductionRun: ReproductionRun | None
    viaApiKey: bool
    signatures: list[Signature]
    record: Document


class CorrectionRequest(ViewModel):
    id: str
    problem: str
    requested_action: str
    status: str
    resolution: str | None
    created_at: str | None
    resolved_at: str | None


class Superseded(ViewModel):
    kind: Literal["superseded"]
    url: str
    digest: str | None


class Retracted(ViewModel):
    kind: Literal["retracted"]
    at: str
    reason: str


class Forms(ViewModel):
    """Where the run page's forms post, and the choices they offer."""

    attest: str
    report: str
    claims: list[tuple[str, str]]
    problems: list[str]
    actions: list[str]


class EvidencePanel(EvidenceLevel):
    """Everything the evidence partials and the run's JSON show, computed from stored facts now."""

    verifiedRuns: list[VerifiedRun]
    signatures: list[Signature]
    attestations: list[Attestation]
    corrections: list[CorrectionRequest]
    correction: Superseded | Retracted | None
    permalink: str
    cslJson: str
    forms: Forms


class RunEvidence(EvidenceLevel):
    """``GET /api/v1/runs/{id}/evidence``: the panel without its forms, CSL-JSON as JSON."""

    verifiedRuns: list[VerifiedRun]
    signatures: list[Signature]
    attestations: list[Attestation]
    corrections: list[CorrectionRequest]
    correction: Superseded | Retracted | None
    permalink: str
    cslJson: list[Document]


class RecordSignatures(ViewModel):
    """``GET /api/v1/records/{digest}/signatures``: what an offline check needs."""

    record: str
    signatures: list[Signature]


def signature_of(check: SignatureCheck) -> Signature:
    return Signature(
        keyId=check.key_id,
        signer=check.label or check.key_id,
        signedAt=check.signed_at,
        valid=check.valid,
        problem=check.problem,
        publicKey=check.public_key,
        envelope=check.envelope,
    )


def _attestation_item(row: Any, checks: list[SignatureCheck], run_ids: dict[str, str]) -> Attestation:
    spec = row["record"]["spec"]
    measured = spec.get("measured")
    repro = spec.get("reproductionRunDigest")
    return Attestation(
        digest=row["attestation_digest"],
        anchor="att-" + row["attestation_digest"].removeprefix("sha256:")[:12],
        claim=spec["claim"],
        claimText=CLAIM_TEXT[spec["claim"]],
        attester=spec["attester"],
        observedAt=spec["observedAt"],
        receivedAt=row["created_at"],
        note=spec.get("note"),
        measured=dict(measured, display=format_value(measured["value"], measured["unit"])) if measured else None,
        evidence=spec.get("evidence"),
        reproductionRun=ReproductionRun(digest=repro, url=f"/runs/{run_ids[repro]}" if repro in run_ids else None)
        if repro
        else None,
        viaApiKey=row["api_key_id"] is not None,
        signatures=[signature_of(c) for c in checks],
        record=row["record"],
    )


def evidence_panel(
    conn: Connection, row: Any, base_url: str, today: date, facts: RunFacts | None = None
) -> EvidencePanel:
    """Everything the evidence partials and the run's JSON show, computed from stored facts now
    (``facts``: the run's :func:`facts_of_run`, when the caller has read them already)."""
    evidence = evidence_for_run(conn, row.run_digest)
    assert evidence is not None  # None only for a digest not stored, and ``row`` is stored
    attestation_rows = attestations_for(conn, row.run_digest)
    checks = signature_checks(conn, [row.run_digest] + [a["attestation_digest"] for a in attestation_rows])
    repro_digests = [a["reproduction_run_digest"] for a in attestation_rows if a["reproduction_run_digest"]]
    run_ids = run_ids_by_digest(conn, repro_digests)
    facts = facts or facts_of_run(conn, row.id)
    correction: Superseded | Retracted | None = None
    if facts.superseded_by is not None:
        correction = Superseded(
            kind="superseded", url=f"/runs/{facts.superseded_by}", digest=facts.superseded_by_digest
        )
    elif facts.retraction is not None:
        correction = Retracted(
            kind="retracted", at=facts.retraction.at, reason=facts.retraction.reason or "no reason given"
        )
    citation = citation_for(row.manifest["run"], row.run_digest, base_url, today)
    return EvidencePanel(
        level=evidence.level,
        reasons=list(evidence.reasons),
        verifiedRuns=evidence.facts["verified_runs"],
        signatures=[signature_of(c) for c in checks.get(row.run_digest, [])],
        attestations=[_attestation_item(a, checks.get(a["attestation_digest"], []), run_ids) for a in attestation_rows],
        corrections=[
            {k: r[k] for k in CorrectionRequest.model_fields} for r in correction_requests_for(conn, row.run_digest)
        ],
        correction=correction,
        permalink=citation.permalink,
        cslJson=json.dumps([csl_json(citation)], indent=2, ensure_ascii=False),
        forms=Forms(
            attest=f"/runs/{row.id}/attestations",
            report=f"/runs/{row.id}/corrections",
            claims=[(claim, CLAIM_TEXT[claim]) for claim in CLAIMS],
            problems=list(PROBLEMS),
            actions=list(ACTIONS),
        ),
    )


def run_evidence(conn: Connection, row: Any, base_url: str, today: date) -> RunEvidence:
    panel = evidence_panel(conn, row, base_url, today)
    return RunEvidence(**panel.model_dump(exclude={"forms", "cslJson"}), cslJson=json.loads(panel.cslJson))


def record_signatures(conn: Connection, digest: str) -> RecordSignatures:
    return RecordSignatures(
        record=digest, signatures=[signature_of(c) for c in signature_checks(conn, [digest]).get(digest, [])]
    )
