"""Use cases of the rerun queue, one transaction each: submit, lease, heartbeat, complete, fail,
expire, cancel, and registering or revoking a runner key.

A request names a problem (files stored content-addressed), a solution (its solution.json with
sources inline, also content-addressed), the hardware wanted, how many independent runner keys
must complete it, and the measurement protocol. Everything a submission or a result could be
refused for is checked before the first write, so a refusal stores nothing.

The harness adapter (problem and solution formats, the comparators) is imported where a use case
needs it: the site imports this module as it starts, and most servers never see a submission.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from kernelindex.formats.packs import definition_name, problem_folders
from kernelindex.problems import PROBLEMS_DIR
from kernelindex.records.canonical import canonical_json, digest, sha256_digest
from kernelindex.records.errors import RecordError
from kernelindex.records.models import dump_record, parse_record
from kernelindex.records.request_signing import RequestSignatureError, claimed_key_id, verify_request
from kernelindex.records.signing import (
    SignatureError,
    key_id,
    public_key_from_text,
    public_key_to_text,
    verify_envelope,
)
from kernelindex.records.vocabulary import HARNESS_SOURCE
from kernelindex.store import Store
from kernelindex.store.evidence.records import EvidenceError, add_signature, register_signing_key
from kernelindex.store.queue import writes as qs
from kernelindex.store.queue.writes import QueueError
from kernelindex.store.reads import queue as reads
from kernelindex.store.rows import RowError
from kernelindex.store.writer import Writer

__all__ = ["QueueError", "Submission"]

MAX_SOLUTION_BYTES = 256 * 1024  # solution.json with every source inline
MAX_PROBLEM_BYTES = 2 * 1024 * 1024  # definition.json + workload.jsonl
MAX_REPLICAS = 8
MAX_ATTEMPTS = 100  # leases one request may take before it fails
DEFAULT_LEASE_S = 120.0
DEFAULT_PROTOCOL = {"rounds": 10, "warmup": 10, "iterations": 50, "timeout_s": 300.0}
PROTOCOL_BOUNDS = {"rounds": (1, 100), "warmup": (0, 1000), "iterations": (1, 10_000), "timeout_s": (1, 3600)}
HOLDER_FAULTS = {"bad_result", "bad_signature", "environment_mismatch"}  # a result refused for these closes the lease
_HARDWARE = re.compile(r"^[a-z0-9][a-z0-9 ._-]{0,59}$")


def hardware_name(text: str) -> str:
    """A hardware name as requests and runner keys store it: lower case, `cpu` or a GPU product (h200)."""
    value = " ".join(str(text).strip().lower().split())
    if not _HARDWARE.match(value):
        raise QueueError("bad_request", f"hardware {text!r}: expected `cpu` or a GPU product such as H200")
    return value


def hardware_matches(wanted: str, environment: Mapping[str, Any]) -> bool:
    """Does a measured ExecutionEnvironment spec satisfy `wanted`? Whole words of the product must match."""
    hardware = environment.get("hardware") or {}
    gpu = hardware.get("vendor") == "nvidia"
    if wanted == "cpu":
        return not gpu
    words = re.findall(r"[a-z0-9]+", str(hardware.get("product", "")).lower())
    needed = re.findall(r"[a-z0-9]+", wanted)
    software = environment.get("software") or {}
    return gpu and bool(needed) and all(w in words for w in needed) and bool(software.get("cudaToolkit"))


def builtin_problems() -> dict[str, Path]:
    """The problem packs this package ships, by folder name and by definition name."""
    found: dict[str, Path] = {}
    for folder in problem_folders(PROBLEMS_DIR):
        found[folder.name] = folder
        name = definition_name(folder)
        if name is not None:
            found[name] = folder
    return found


@dataclass
class Submission:
    solution: dict[str, Any]  # solution.json with every source inline
    problem_name: str | None = None  # a pack shipped here or a problem submitted before
    problem_files: dict[str, str] | None = None  # or the problem itself
    hardware: str = "cpu"
    replicas: int = 1
    protocol: dict[str, Any] = field(default_factory=dict)
    api_key_id: str | None = None  # who asked over HTTP (rate-limited); None: the operator's CLI
    rerun_of: str | None = None
    max_attempts: int | None = None
    cases: list[str] | None = None  # case uuids or unique prefixes to run (all when None); stored as protocol.cases


def _protocol(given: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - set(DEFAULT_PROTOCOL))
    if unknown:
        raise QueueError("bad_request", f"protocol: unknown field(s) {unknown}; allowed: {sorted(DEFAULT_PROTOCOL)}")
    out = dict(DEFAULT_PROTOCOL)
    for name, value in given.items():
        low, high = PROTOCOL_BOUNDS[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise QueueError("bad_request", f"protocol.{name}: expected a number from {low} to {high}, got {value!r}")
        out[name] = float(value) if name == "timeout_s" else int(value)
    return out


def _problem_files(conn, submission: Submission) -> dict[str, str]:
    from kernelindex.services import harness_adapter as harness

    if submission.problem_files is not None:
        files = submission.problem_files
    else:
        name = (submission.problem_name or "").strip()
        if not name:
            raise QueueError("unknown_problem", "problem: required (a problem pack's name or folder)")
        pack = builtin_problems().get(name)
        stored = None if pack else reads.stored_problem(conn, name)
        if pack is not None:
            files = harness.problem_files(pack)
        elif stored is not None:
            files = json.loads(reads.blob(conn, stored) or b"{}").get("files", {})
        else:
            raise QueueError(
                "unknown_problem", f"problem {name!r}: not a pack shipped here nor a problem submitted before"
            )
    if set(files) != set(harness.PROBLEM_FILES) or not all(isinstance(v, str) for v in files.values()):
        raise QueueError("bad_request", f"problem: expected the text of {', '.join(harness.PROBLEM_FILES)}")
    for name, text in files.items():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise QueueError("bad_problem", f"problem: {name}: holds a lone UTF-16 surrogate, not text") from None
    size = sum(len(v.encode()) for v in files.values())
    if size > MAX_PROBLEM_BYTES:
        raise QueueError("too_large", f"problem: {size} bytes, over the limit of {MAX_PROBLEM_BYTES}")
    return dict(files)


def submit(store: Store, submission: Submission) -> str:
    """Queue a rerun request; returns its id. Refused (nothing stored) for an unknown problem, a solution
    that does not load (no entry point, bad sources), oversize sources or bad parameters."""
    from kernelindex.services import harness_adapter as harness

    hardware = hardware_name(submission.hardware)
    if not 1 <= submission.replicas <= MAX_REPLICAS:
        raise QueueError("bad_request", f"replicas: expected 1 to {MAX_REPLICAS}, got {submission.replicas}")
    if submission.max_attempts is not None and not 1 <= submission.max_attempts <= MAX_ATTEMPTS:
        raise QueueError("bad_request", f"max_attempts: expected 1 to {MAX_ATTEMPTS}, got {submission.max_attempts}")
    protocol = _protocol(submission.protocol)
    if not isinstance(submission.solution, dict):
        raise QueueError("bad_solution", "solution: expected a solution.json object")
    try:
        document = canonical_json(submission.solution)
    except ValueError as exc:  # rfc8785's refusals: a lone surrogate, an integer past 2**53
        raise QueueError("bad_solution", f"solution: has no canonical JSON form ({exc})") from None
    if len(document) > MAX_SOLUTION_BYTES:
        raise QueueError(
            "too_large", f"solution: {len(document)} bytes with its sources, over the limit of {MAX_SOLUTION_BYTES}"
        )
    try:
        bundle, facts = harness.solution_bundle(submission.solution)
    except harness.FormatError as exc:
        raise QueueError("bad_solution", f"solution: {exc.field or ''} {exc.reason}".strip()) from None
    with store.engine.connect() as conn:
        files = _problem_files(conn, submission)
    try:
        definition, cases = harness.problem_summary(files)
    except harness.FormatError as exc:
        raise QueueError(
            "bad_problem", f"problem: {Path(str(exc.file)).name}: {exc.field or ''} {exc.reason}"
        ) from None
    if submission.cases is not None:
        try:
            protocol["cases"] = harness.pick_cases(cases, submission.cases)
        except ValueError as exc:
            raise QueueError("bad_request", f"cases: {exc}") from None
    if facts["definition"] != definition:
        raise QueueError(
            "bad_solution", f"solution is for definition {facts['definition']!r}, the problem is {definition!r}"
        )
    values = {
        "problem_name": definition[:300],
        "solution_name": facts["name"][:300],
        "entry_point": facts["entry_point"][:300],
        "hardware": hardware,
        "replicas": submission.replicas,
        "protocol": protocol,
        "max_attempts": submission.max_attempts or 3 * submission.replicas,
        "submitted_by": submission.api_key_id or "cli",
        "rerun_of": submission.rerun_of,
    }
    with qs.write_transaction(store) as conn:
        if submission.api_key_id is not None:
            _check_submit_rate(conn, submission.api_key_id)
        values["problem_digest"] = qs.store_blob(
            conn, "problem_bundle", "application/json", canonical_json({"files": files})
        )
        values["document_digest"] = qs.store_blob(conn, "solution_document", "application/json", document)
        values["solution_digest"] = qs.store_blob(conn, "implementation_source", "application/json", bundle)
        return qs.insert_request(conn, values)


def _check_submit_rate(conn, api_key_id: str) -> None:
    """An API key may queue at most its daily limit of requests per rolling 24 hours."""
    limit = reads.api_key_daily_limit(conn, api_key_id)
    since = qs.time_text(qs.now() - timedelta(days=1))
    if reads.submissions_since(conn, api_key_id, since) >= limit:
        raise QueueError(
            "rate_limited", f"API key {api_key_id} reached its limit of {limit} rerun requests per 24 hours"
        )


def rerun_submission(store: Store, run_digest: str, **options: Any) -> Submission:
    """A submission repeating a stored run, when its sources and its problem are available here."""
    with store.engine.connect() as conn:
        row = reads.run_source(conn, run_digest)
        if row is None:
            raise QueueError("unknown_run", f"no run with digest {run_digest}")
        spec = (row.manifest or {}).get("spec") or {}
        bundle = reads.blob(conn, (spec.get("source") or {}).get("contentDigest") or "")
    try:
        sources = json.loads(bundle) if bundle else None
    except ValueError:
        sources = None
    if not isinstance(sources, dict) or not {"name", "entryPoint", "sources"} <= set(sources):
        raise QueueError("no_sources", f"run {run_digest}: its implementation's sources are not stored here")
    call = spec.get("callable") or {}
    document = {
        "name": sources["name"],
        "definition": row.operation or "",
        "spec": {
            "languages": [call.get("language", "pytorch")],
            "entry_point": sources["entryPoint"],
            "destination_passing_style": call.get("interface") != "value_returning",
            "target_hardware": (spec.get("support") or {}).get("productsTested") or [],
        },
        "sources": sources["sources"],
    }
    return Submission(solution=document, problem_name=row.operation, rerun_of=run_digest, **options)


def cancel(store: Store, request_id: str) -> None:
    with qs.write_transaction(store) as conn:
        qs.cancel_request(conn, request_id)


def expire(store: Store) -> list[str]:
    with qs.write_transaction(store) as conn:
        return qs.expire_leases(conn, qs.now())


# --- runner keys ---------------------------------------------------------------------------


def register_runner(store: Store, public_key_text: str, *, label: str, machine: str, hardware: str) -> str:
    try:
        public_key = public_key_from_text(public_key_text)
    except SignatureError as exc:
        raise QueueError("bad_request", f"public key: {exc}") from exc
    kid = key_id(public_key)
    with qs.write_transaction(store) as conn:
        qs.add_runner_key(conn, kid, public_key_to_text(public_key), label, machine, hardware_name(hardware))
        register_signing_key(conn, public_key, f"runner {label} on {machine}")
    return kid


def revoke_runner(store: Store, kid: str) -> None:
    with qs.write_transaction(store) as conn:
        qs.revoke_runner_key(conn, kid)


def authenticate_runner(store: Store, headers: Mapping[str, str], method: str, path: str, body: bytes) -> str:
    """The key id of a registered, unrevoked runner whose signature holds for this request."""
    try:
        kid = claimed_key_id(headers)
    except RequestSignatureError as exc:
        raise QueueError("unauthorized", str(exc)) from exc
    with store.engine.connect() as conn:
        row = reads.runner_key(conn, kid)
    if row is None:
        raise QueueError("unauthorized", f"runner key {kid} is not registered here (kernelindex runners add)")
    if row.revoked_at:
        raise QueueError("revoked", f"runner key {kid} was revoked at {row.revoked_at}")
    try:
        verify_request(public_key_from_text(row.public_key), headers, method, path, body)
    except RequestSignatureError as exc:
        raise QueueError("unauthorized", str(exc)) from exc
    return kid


# --- leases --------------------------------------------------------------------------------


def lease(store: Store, kid: str, seconds: float = DEFAULT_LEASE_S) -> dict[str, Any] | None:
    """One job for runner ``kid`` (on the hardware it was registered for), or None when there is none."""
    with qs.write_transaction(store) as conn:
        runner = reads.runner_key(conn, kid)
        taken = qs.take_lease(conn, store.dialect, kid, runner.hardware, seconds)
        if taken is None:
            return None
        held, request = taken
        return {
            "lease": held.id,
            "request": request.id,
            "attempt": held.attempt,
            "expiresAt": held.expires_at,
            "heartbeatEveryS": max(0.5, seconds / 3),
            "hardware": request.hardware,
            "protocol": request.protocol,
            "problem": {"name": request.problem_name, "digest": request.problem_digest},
            "solution": {
                "name": request.solution_name,
                "digest": request.solution_digest,
                "document": request.document_digest,
            },
        }


def heartbeat(store: Store, kid: str, lease_id: str, seconds: float = DEFAULT_LEASE_S) -> str:
    with qs.write_transaction(store) as conn:
        qs.held_lease(conn, lease_id, kid)
        return qs.extend_lease(conn, lease_id, seconds)


def fail(store: Store, kid: str, lease_id: str, reason: str) -> str:
    """The runner gives a job back (it could not run it); the attempt counts. Returns the request's state."""
    with qs.write_transaction(store) as conn:
        qs.held_lease(conn, lease_id, kid)
        return qs.close_lease(conn, lease_id, "failed", reason=f"runner: {reason[:2000]}")


@dataclass
class _Checked:
    records: list[dict[str, Any]]
    bundles: list[dict[str, Any]]
    artifacts: list[tuple[str, str, str, str, bytes]]  # run digest, role, kind, media type, content
    envelopes: dict[str, Any]
    suite_run: str


def _bad(message: str) -> QueueError:
    return QueueError("bad_result", message)


def _checked_bundle(request, implementation: str, workloads: set[str], bundle: Any, where: str) -> dict[str, Any]:
    """One posted run bundle, parsed: a run of this request's implementation, on one of its
    workloads, by the harness, with the request's protocol and hardware."""
    if not isinstance(bundle, dict) or set(bundle) != {"run", "protocol", "environment"}:
        raise _bad(f"{where}: expected {{run, protocol, environment}}")
    try:
        parsed = {k: dump_record(parse_record(v, where=f"{where}.{k}")) for k, v in bundle.items()}
    except RecordError as exc:
        raise _bad(str(exc)) from None
    spec = parsed["run"]["spec"]
    if spec.get("implementationDigest") != implementation or spec.get("workloadDigest") not in workloads:
        raise _bad(f"{where}.run: names another implementation or workload than this request's")
    if (spec.get("sourceNative") or {}).get("source") != HARNESS_SOURCE:
        raise _bad(f"{where}.run: spec.sourceNative.source must be {HARNESS_SOURCE}")
    measurement = parsed["protocol"]["spec"].get("measurement") or {}
    wanted = request.protocol
    if (measurement.get("warmupIterations"), measurement.get("measuredIterations")) != (
        wanted["warmup"],
        wanted["iterations"],
    ):
        raise _bad(f"{where}.protocol: warm-up/measured iterations differ from the request's protocol")
    if not hardware_matches(request.hardware, parsed["environment"]["spec"]):
        product = (parsed["environment"]["spec"].get("hardware") or {}).get("product")
        raise QueueError(
            "environment_mismatch",
            f"{where}.environment: measured on {product!r}, the request asked for {request.hardware!r}",
        )
    return parsed


def _check_run_signatures(runner, signatures: Mapping[str, Any], run_digests: list[str]) -> None:
    """Every run signed by the runner's own key, as a BenchmarkRun."""
    public_key = public_key_from_text(runner.public_key)
    for run_digest in run_digests:
        envelope = signatures.get(run_digest)
        if envelope is None:
            raise QueueError("bad_signature", f"result.signatures: run {run_digest} is not signed")
        try:
            checked = verify_envelope(envelope, public_key, run_digest)
        except SignatureError as exc:
            raise QueueError("bad_signature", f"result.signatures[{run_digest}]: {exc}") from None
        if checked.record_kind != "BenchmarkRun":
            raise QueueError("bad_signature", f"result.signatures[{run_digest}]: signed as a {checked.record_kind}")


def _cases_ran(request, records: list[dict]) -> list[str] | None:
    """The case uuids a result ran when it ran some of the problem's (its suite of fewer cases than the
    problem has names them), None when it ran them all; refused when it ran a case the request did not ask
    for. The digests are checked after: the suite must be exactly the one of those cases."""
    total = sum(r["kind"] == "WorkloadCase" for r in records)
    suites = [r["spec"].get("cases") or [] for r in records if r["kind"] == "WorkloadSuite"]
    partial = [cases for cases in suites if len(cases) < total]
    if len(partial) > 1:
        raise _bad("result.records: more than one suite of the cases that ran")
    if not partial:
        return None
    ran = [str(case.get("externalId")) for case in partial[0]]
    asked = request.protocol.get("cases")
    if asked is not None and not set(ran) <= set(asked):
        raise _bad(f"result.records: ran cases the request did not ask for: {', '.join(sorted(set(ran) - set(asked)))}")
    return ran


def _check_result(conn, request, runner, payload: Mapping[str, Any]) -> _Checked:
    """Everything a posted result must satisfy, checked before anything is written."""
    from kernelindex.services import harness_adapter as harness

    for name, kind in (
        ("records", list),
        ("bundles", list),
        ("artifacts", list),
        ("signatures", dict),
        ("suiteRun", str),
    ):
        if not isinstance(payload.get(name), kind):
            raise _bad(f"result.{name}: required, a {kind.__name__}")
    records = []
    for index, record in enumerate(payload["records"]):
        try:
            records.append(dump_record(parse_record(record, where=f"result.records[{index}]")))
        except RecordError as exc:
            raise _bad(str(exc)) from None
    files = json.loads(reads.blob(conn, request.problem_digest) or b"{}")["files"]
    ran = _cases_ran(request, records)
    expected = harness.expected_problem_digests(files, ran)
    problem = {digest(r) for r in records if r["kind"] != "ImplementationRevision"}
    if problem != expected:
        raise _bad(f"result.records: the problem's records differ from problem {request.problem_name} as submitted")
    implementations = [r for r in records if r["kind"] == "ImplementationRevision"]
    if len(implementations) != 1:
        raise _bad("result.records: expected exactly one ImplementationRevision")
    implementation = implementations[0]
    if (implementation["spec"].get("source") or {}).get("contentDigest") != request.solution_digest:
        raise _bad(
            f"result.records: the implementation's sources are not the submitted solution {request.solution_digest}"
        )
    workloads = {digest(r) for r in records if r["kind"] in ("WorkloadCase", "WorkloadSuite")}
    bundles = [
        _checked_bundle(request, digest(implementation), workloads, bundle, f"result.bundles[{index}]")
        for index, bundle in enumerate(payload["bundles"])
    ]
    run_digests = [digest(parsed["run"]) for parsed in bundles]
    wanted_runs = (len(ran) if ran is not None else len(expected) - 2) + 1  # each case run, and the suite's
    if len(set(run_digests)) != wanted_runs or payload["suiteRun"] not in run_digests:
        raise _bad(
            f"result.bundles: expected one run per case and one for the suite ({wanted_runs}), "
            f"got {len(set(run_digests))}"
        )
    _check_run_signatures(runner, payload["signatures"], run_digests)
    artifacts = []
    for index, item in enumerate(payload["artifacts"]):
        where = f"result.artifacts[{index}]"
        if not isinstance(item, dict) or item.get("runDigest") not in run_digests:
            raise _bad(f"{where}.runDigest: not one of the posted runs")
        if item.get("role") not in ("rawSamples", "logs", "solutionOutput") or not isinstance(item.get("content"), str):
            raise _bad(f"{where}: role must be rawSamples, logs or solutionOutput, content base64")
        try:
            content = base64.b64decode(item["content"], validate=True)
        except (binascii.Error, ValueError):
            raise _bad(f"{where}.content: not base64") from None
        kind, media_type = item.get("kind", ""), item.get("mediaType", "")
        if not isinstance(kind, str) or not isinstance(media_type, str):
            raise _bad(f"{where}: kind and mediaType, when given, are strings")
        artifacts.append((item["runDigest"], item["role"], kind, media_type, content))
    evidence = {d for b in bundles for d in _evidence_digests(b["run"]["spec"])}
    missing = evidence - {sha256_digest(a[4]) for a in artifacts}
    if missing:
        raise _bad(f"result.artifacts: the runs cite evidence that was not posted: {sorted(missing)[:3]}")
    return _Checked(
        records, bundles, artifacts, {d: payload["signatures"][d] for d in run_digests}, payload["suiteRun"]
    )


def _evidence_digests(spec: Mapping[str, Any]) -> list[str]:
    return [ref["digest"] for ref in (spec.get("evidence") or {}).values() if isinstance(ref, dict) and "digest" in ref]


def complete(
    store: Store, kid: str, lease_id: str, payload: Mapping[str, Any], timings: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """Store a runner's signed result for the lease it holds, in one transaction; what was stored.

    A result refused for what it contains (records, signatures, environment) also closes the lease
    as refused, so the request goes to another runner; one refused because the lease is not
    held, expired or already closed changes nothing.
    """
    started = time.perf_counter()
    try:
        with qs.write_transaction(store) as conn:
            held = qs.held_lease(conn, lease_id, kid)
            request = reads.request_row(conn, held.request_id)
            runner = reads.runner_key(conn, kid)
            checked = _check_result(conn, request, runner, payload)
            stored = _store_result(conn, checked, kid, runner.machine)
            spent = {k: float(v) for k, v in (timings or {}).items() if isinstance(v, (int, float))}
            spent["storeS"] = time.perf_counter() - started
            state = qs.close_lease(
                conn, lease_id, "completed", suite_run_digest=checked.suite_run, run_digests=stored, timings=spent
            )
            return {
                "lease": lease_id,
                "request": request.id,
                "state": state,
                "suiteRun": checked.suite_run,
                "runs": stored,
            }
    except QueueError as exc:
        if exc.code in HOLDER_FAULTS:
            _refuse_lease(store, kid, lease_id, f"result refused: {exc}"[:4000])
        raise


def _refuse_lease(store: Store, kid: str, lease_id: str, reason: str) -> None:
    """Close the lease whose result was refused for its content (unless it closed meanwhile)."""
    try:
        with qs.write_transaction(store) as conn:
            qs.held_lease(conn, lease_id, kid)
            qs.close_lease(conn, lease_id, "refused", reason=reason)
    except QueueError:
        pass  # it expired or was cancelled in between: the request was settled then


def _store_result(conn, checked: _Checked, kid: str, machine: str) -> list[str]:
    from kernelindex.services import harness_adapter as harness

    writer = Writer(conn)
    source_slug, source_kind, source_name = harness.SOURCE
    writer.ensure_source(source_slug, source_kind, source_name)
    try:
        for record in checked.records:
            writer.add_record(record)
        run_ids = {}
        for bundle in checked.bundles:
            run_digest = digest(bundle["run"])
            run_ids[run_digest] = writer.add_run_bundle(bundle, runner_id=kid, runner_host=machine)
            if run_ids[run_digest] is None:
                raise QueueError("duplicate", f"run {run_digest} is already stored (a result is posted once)")
        for run_digest, role, kind, media_type, content in checked.artifacts:
            writer.add_artifact(
                run_id=run_ids[run_digest],
                role=role,
                kind=kind or "artifact",
                media_type=media_type or "application/octet-stream",
                content=content,
            )
        for run_digest, envelope in checked.envelopes.items():
            add_signature(conn, envelope, run_digest, kind="BenchmarkRun")
    except (RowError, EvidenceError) as exc:
        raise _bad(f"result refused by the store: {exc}") from None
    return list(run_ids)
