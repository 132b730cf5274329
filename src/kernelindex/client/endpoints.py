"""The API's routes as methods, written once for both clients.

Each method describes its request and hands it to ``self._call`` (or ``self._iterate`` for a
whole listing): the sync client answers with the value, the async one with an awaitable (or an
async iterator), so the two clients cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelindex.client.protocol import API, Page, segment
from kernelindex.records.envelope import Record
from kernelindex.records.models import parse_record

View = dict[str, Any]
"""A JSON view as the API returns it (the same dict the site's page is rendered from)."""


@dataclass(frozen=True)
class RunRecords:
    """The records a run was published as, parsed into the record models."""

    digest: str
    run: Record
    protocol: Record
    environment: Record


def _run_records(view: View) -> RunRecords:
    manifest = view.get("manifest") or {}
    where = f"run {view.get('digest')}"
    return RunRecords(
        digest=view["digest"],
        run=parse_record(manifest.get("run"), where=f"{where} (run)"),
        protocol=parse_record(manifest.get("protocol"), where=f"{where} (protocol)"),
        environment=parse_record(manifest.get("environment"), where=f"{where} (environment)"),
    )


def _page(body: Any) -> Page[View]:
    total = body.get("total")
    return Page(
        items=list(body.get("items") or []), next=body.get("next"), total=total if isinstance(total, int) else None
    )


class Endpoints:
    """Route methods; subclasses supply ``_call(method, path, params, json, transform)`` and
    ``_iterate(path, params, max_items)``."""

    def _call(
        self, method: str, path: str, params: dict[str, Any] | None = None, json: Any = None, transform=None
    ) -> Any:
        raise NotImplementedError

    def _iterate(self, path: str, params: dict[str, Any], max_items: int | None) -> Any:
        raise NotImplementedError

    # --- runs
    def run(self, ident: str) -> Any:
        """A run's view by id, digest or unique 8+ hex digest prefix: rank, evidence, measurements, manifest."""
        return self._call("GET", f"{API}/runs/{segment(ident)}")

    def run_records(self, ident: str) -> Any:
        """The run's own records (run, protocol, environment) as typed record models."""
        return self._call("GET", f"{API}/runs/{segment(ident)}", transform=_run_records)

    def evidence(self, ident: str) -> Any:
        """A run's evidence level with its reasons, signatures and attestations."""
        return self._call("GET", f"{API}/runs/{segment(ident)}/evidence")

    def runs_page(self, *, cursor: str | None = None, limit: int | None = None, **filters: str | None) -> Any:
        """One page of runs; filters: operation, workload, comparisonKey, status, source, hardware."""
        return self._call("GET", f"{API}/runs", {**filters, "cursor": cursor, "limit": limit}, transform=_page)

    def iter_runs(self, *, max_items: int | None = None, page_size: int | None = None, **filters: str | None) -> Any:
        """Every run matching the filters (up to ``max_items``), following the cursors page after page."""
        return self._iterate(f"{API}/runs", {**filters, "limit": page_size}, max_items)

    def compare(self, *runs: str) -> Any:
        """2 to 8 runs side by side: what differs, and ratios only inside one comparison group."""
        params = {"a": runs[0], "b": runs[1]} if len(runs) == 2 else {"run": list(runs)}
        return self._call("GET", f"{API}/compare", params)

    def records_page(
        self, *, since: str | None = None, cursor: str | None = None, limit: int | None = None, **filters: str | None
    ) -> Any:
        """One page of the records ledger (new runs, leaders, corrections, retractions), newest first;
        filters: operation, gpu, source, kind."""
        return self._call(
            "GET", f"{API}/records", {**filters, "since": since, "cursor": cursor, "limit": limit}, transform=_page
        )

    def iter_records(
        self,
        *,
        since: str | None = None,
        max_items: int | None = None,
        page_size: int | None = None,
        **filters: str | None,
    ) -> Any:
        """Every ledger entry at or after ``since`` (ISO 8601), following the cursors."""
        return self._iterate(f"{API}/records", {**filters, "since": since, "limit": page_size}, max_items)

    def implementation(self, ident: str) -> Any:
        """An implementation: install command, licence, sources, deployability, best run per GPU."""
        return self._call("GET", f"{API}/implementations/{segment(ident)}")

    def search(self, q: str) -> Any:
        """The answer to a query (``GET /api/v1/search``): rank tables for the workload it pins, or
        the nearest measured cases; the document ``kernelindex search --json`` prints."""
        return self._call("GET", f"{API}/search", {"q": q})

    def signatures(self, digest: str) -> Any:
        return self._call("GET", f"{API}/records/{segment(digest)}/signatures")

    # --- workloads, rankings, operations, sources
    def workload(self, ident: str) -> Any:
        """A workload's leaderboard: every comparison group, ranked, and the rest of its problem's evidence."""
        return self._call("GET", f"{API}/workloads/{segment(ident)}")

    def iter_workloads(self, *, operation: str | None = None, max_items: int | None = None) -> Any:
        return self._iterate(f"{API}/workloads", {"operation": operation}, max_items)

    def ranking(self, comparison_key: str) -> Any:
        """One comparison group, fully ranked."""
        return self._call("GET", f"{API}/rankings/{segment(comparison_key)}")

    def rankings(self, target: str, *, limit: int | None = None) -> Any:
        """The ranked groups a comparison key, workload, operation or run names (``kernelindex rank TARGET``)."""
        return self._call("GET", f"{API}/rankings", {"target": target, "limit": limit})

    def operation(self, slug: str) -> Any:
        return self._call("GET", f"{API}/operations/{segment(slug)}")

    def iter_operations(self, *, family: str | None = None, max_items: int | None = None) -> Any:
        return self._iterate(f"{API}/operations", {"family": family}, max_items)

    def sources(self) -> Any:
        return self._call("GET", f"{API}/sources", transform=lambda body: body["items"])

    def source(self, slug: str) -> Any:
        return self._call("GET", f"{API}/sources/{segment(slug)}")

    # --- the transparency log (check what these return with kernelindex.records.checkpoint)
    def log_checkpoint(self) -> Any:
        """The log's newest signed checkpoint: origin, size, rootHash, the C2SP note, its verifier key."""
        return self._call("GET", f"{API}/log/checkpoint")

    def log_inclusion(self, digest: str, size: int | None = None) -> Any:
        """The RFC 9162 inclusion proof of the record with content ``digest`` in the tree of ``size`` leaves."""
        params: dict[str, Any] = {"digest": digest} | ({"size": size} if size is not None else {})
        return self._call("GET", f"{API}/log/proof/inclusion", params=params)

    def log_consistency(self, old: int, new: int | None = None) -> Any:
        """The RFC 9162 proof that the tree of ``new`` leaves (default: all) extends the one of ``old``."""
        params: dict[str, Any] = {"from": old} | ({"to": new} if new is not None else {})
        return self._call("GET", f"{API}/log/proof/consistency", params=params)

    # --- writes (never retried: they are not idempotent)
    def attest(
        self,
        run: str,
        spec: dict[str, Any],
        *,
        metadata: dict[str, Any] | None = None,
        signature: dict[str, Any] | None = None,
        public_key: str | None = None,
    ) -> Any:
        """Add an attestation to a run (needs an API key with the ``attest`` scope)."""
        body = {"spec": spec, "metadata": metadata, "signature": signature, "publicKey": public_key}
        return self._call(
            "POST", f"{API}/runs/{segment(run)}/attestations", json={k: v for k, v in body.items() if v is not None}
        )

    def submit_rerun(
        self,
        problem: str | dict[str, str],
        solution: dict[str, Any],
        *,
        hardware: str = "cpu",
        replicas: int = 1,
        protocol: dict[str, Any] | None = None,
    ) -> Any:
        """Queue a kernel for verification (needs an API key with the ``submit`` scope): ``problem`` is a
        problem's name on the server or its files; ``solution`` a solution.json with its sources inline."""
        body = {
            "problem": problem,
            "solution": solution,
            "hardware": hardware,
            "replicas": replicas,
            "protocol": protocol,
        }
        return self._call("POST", f"{API}/rerun-requests", json={k: v for k, v in body.items() if v is not None})

    def rerun_request(self, request_id: str) -> Any:
        """One rerun request with its state, leases and resulting runs."""
        return self._call("GET", f"{API}/rerun-requests/{segment(request_id)}")

    # --- a remote runner's calls (signed: ``auth=SignedRequests(key)``)
    def lease(self) -> Any:
        """Lease one queued job for this runner: the job, or None when the queue has nothing for it."""
        return self._call("POST", f"{API}/runner/lease", json={})

    def heartbeat(self, lease: str) -> Any:
        """Keep a lease alive while its job runs."""
        return self._call("POST", f"{API}/runner/leases/{segment(lease)}/heartbeat", json={})

    def fail_lease(self, lease: str, reason: str) -> Any:
        """Give a leased job back to the queue, saying why."""
        return self._call("POST", f"{API}/runner/leases/{segment(lease)}/fail", json={"reason": reason})

    def post_result(self, lease: str, result: dict[str, Any], timings: dict[str, float]) -> Any:
        """Post a leased job's signed records; the stored runs, the request's state and the suite run."""
        return self._call(
            "POST", f"{API}/runner/leases/{segment(lease)}/result", json={"result": result, "timings": timings}
        )

    def runner_blob(self, digest: str) -> Any:
        """A job's input (problem files or solution document) by its digest."""
        return self._call("GET", f"{API}/runner/blobs/{segment(digest)}")

    # --- any view
    def view(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """Any JSON view under the API, ``path`` after ``/api/v1`` with its segments already quoted."""
        return self._call("GET", f"{API}{path}", params)

    def post_view(self, path: str, body: Any) -> Any:
        """A read answered for a JSON body (the kernel resolver): ``path`` after ``/api/v1``."""
        return self._call("POST", f"{API}{path}", json=body)
