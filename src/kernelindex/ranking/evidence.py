"""Evidence level of a run, derived from stored facts by this one function (never chosen by a
submitter), with the facts that gave it, so a page can say why.

Levels, weakest first:
- ``reported``: a source says so.
- ``reproducible``: source code, full identity (implementation, workload, protocol and
  environment records all stored) and raw evidence are present: anyone could rerun it.
- ``verified``: this index's harness ran it (or repeated it) and it passed.
- ``replicated``: verified on two or more independent runners: runs whose signatures by
  different runner keys hold, from different machines.

Community attestations never move a level; a harness repeat linked to the run does, because it
is a verified run in its own right. A retracted run is only ``reported``: its number stands
withdrawn whatever evidence it once had.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

from kernelindex.records.vocabulary import CONTROLLED, UNSANDBOXED_RERUN, EvidenceLevel, RunStatus


def _short(digest: str | None) -> str:
    return (digest or "?")[:19] + "…"


def _verified_runs(run_facts: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The passing harness runs that count for this run: its own (if it is one) and linked repeats."""
    listed = run_facts.get("verified_runs")
    if listed is not None:
        return [run for run in listed if run.get("status", RunStatus.PASSED) == RunStatus.PASSED]
    if run_facts.get("source_kind") == CONTROLLED and run_facts.get("status") == RunStatus.PASSED:
        return [
            {
                "run_digest": run_facts.get("run_digest"),
                "runner_id": run_facts.get("runner_id"),
                "runner_host": run_facts.get("runner_host"),
                "signed": bool(run_facts.get("signed")),
            }
        ]
    return []


def _independent(runs: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Two signed runs whose runner keys differ and whose hosts differ, or [] if there is no such pair."""
    signed = [run for run in runs if run.get("signed") and run.get("runner_id") and run.get("runner_host")]
    for first, second in combinations(signed, 2):
        if first["runner_id"] != second["runner_id"] and first["runner_host"] != second["runner_host"]:
            return [first, second]
    return []


def _describe(run: Mapping[str, Any]) -> str:
    signed = "signature holds" if run.get("signed") else "no valid runner signature"
    return (
        f"run {_short(run.get('run_digest'))} passed in this index's harness on host "
        f"{run.get('runner_host') or 'unknown'} (runner key {_short(run.get('runner_id'))}; {signed})"
    )


def evidence_level(run_facts: Mapping[str, Any]) -> tuple[str, list[str]]:
    """``(level, reasons)`` from a run's stored facts.

    Keys read (all optional but ``status``): ``source_kind``, ``source``, ``status``,
    ``retracted_at``, ``has_source``, ``full_identity``, ``missing_identity`` (list of names),
    ``has_raw_evidence``, and ``verified_runs`` (dicts with ``run_digest``, ``runner_id``,
    ``runner_host``, ``signed``, ``status``); without ``verified_runs`` a passing controlled run
    counts as its own verified run.
    """
    if run_facts.get("retracted_at"):
        return EvidenceLevel.REPORTED.value, [
            f"retracted at {run_facts['retracted_at']}: its evidence no longer counts"
        ]
    verified = _verified_runs(run_facts)
    independent = _independent(verified)
    if independent:
        keys = {run["runner_id"] for run in verified if run.get("signed")}
        hosts = {run["runner_host"] for run in verified if run.get("signed")}
        return EvidenceLevel.REPLICATED.value, [
            f"independent runners: {len(keys)} runner keys on {len(hosts)} machines with valid signatures"
        ] + [_describe(run) for run in verified]
    if verified:
        return EvidenceLevel.VERIFIED.value, [_describe(run) for run in verified] + [
            "not replicated: needs passing runs signed by two different runner keys on two different machines"
        ]
    reasons: list[str] = []
    if run_facts.get("source_kind") == UNSANDBOXED_RERUN:
        reasons.append(
            "this index's harness reran it without a sandbox (its log says why): reproducible at most, never verified"
        )
    if run_facts.get("source_kind") == CONTROLLED:
        reasons.append(f"this index's harness ran it but it did not pass (status {run_facts.get('status')})")
    source = run_facts.get("source") or run_facts.get("source_kind") or "an unknown source"
    checks = [
        ("source code available", "source code", run_facts.get("has_source")),
        ("full identity stored", "full identity", run_facts.get("full_identity")),
        ("raw evidence present", "raw evidence", run_facts.get("has_raw_evidence")),
    ]
    if all(ok for _, _, ok in checks):
        return EvidenceLevel.REPRODUCIBLE.value, [fact for fact, _, _ in checks] + [
            f"reported by {source}; not yet rerun here"
        ]
    missing = ", ".join(name for _, name, ok in checks if not ok)
    if run_facts.get("missing_identity"):
        missing += f" (no stored {', '.join(run_facts['missing_identity'])} record)"
    reasons.append(f"reported by {source}; not rerun by this index")
    reasons.append(f"not reproducible: missing {missing}")
    return EvidenceLevel.REPORTED.value, reasons
