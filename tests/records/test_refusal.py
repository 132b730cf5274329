"""One refusal base: every domain error is a Refusal with a kind, and MCP gets it as one error object."""

from __future__ import annotations

import pytest

from kernelindex.client.errors import ApiError, client_problem
from kernelindex.ingest.problems import ImportFailed, ImportProblem
from kernelindex.ingest.sync import SyncFailed
from kernelindex.ingest.upstream.common import UpstreamError
from kernelindex.records.errors import RecordError
from kernelindex.records.refusal import BadParameter, Refusal, RefusalKind, mcp_error
from kernelindex.records.request_signing import RequestSignatureError
from kernelindex.records.signing import SignatureError
from kernelindex.search.query import QueryError
from kernelindex.services.campaign import RayUnavailable
from kernelindex.store.evidence.api_tokens import TokenError
from kernelindex.store.evidence.records import EvidenceError
from kernelindex.store.queue.writes import QueueError
from kernelindex.store.reads.lookup import LookupFailed
from kernelindex.store.rows import RowError


@pytest.mark.parametrize(
    ("exc", "kind", "code"),
    [
        (LookupFailed(RefusalKind.NOT_FOUND, "run", "x", "no run with id or digest 'x'"), "not_found", "not_found"),
        (LookupFailed(RefusalKind.AMBIGUOUS, "run", "abcdef12", "2 runs match"), "ambiguous", "ambiguous"),
        (RecordError("runs.jsonl line 3", [("spec.status", "unknown")]), "invalid", "invalid_record"),
        (SignatureError("does not hold"), "invalid", "bad_signature"),
        (RequestSignatureError("stale"), "unauthorized", "unauthorized"),
        (EvidenceError("unknown_run", "no run"), "not_found", "unknown_run"),
        (EvidenceError("replay", "seen"), "conflict", "replay"),
        (EvidenceError("unknown_request", "no such request"), "bad_request", "unknown_request"),
        (QueueError("too_large", "too big"), "too_large", "too_large"),
        (QueueError("revoked", "key revoked"), "forbidden", "revoked"),
        (TokenError("malformed"), "unauthorized", "unauthorized"),
        (RowError("spec", "bad"), "invalid", "invalid"),
        (QueryError("too long"), "bad_request", "bad_query"),
        (ImportFailed([ImportProblem("a.jsonl", 2, "spec", "bad")]), "invalid", "invalid"),
        (UpstreamError("a.json", None, "x", "missing"), "invalid", "invalid"),
        (SyncFailed("refused"), "bad_request", "bad_request"),
        (RayUnavailable("no cluster"), "unavailable", "unavailable"),
        (BadParameter("bad-since", "since 'x' is not a date", parameter="since"), "bad_request", "bad-since"),
    ],
)
def test_every_domain_error_is_a_refusal(exc, kind, code):
    assert isinstance(exc, Refusal)
    assert exc.kind == kind and exc.code == code
    assert exc.lines() and all(exc.lines())


def test_the_old_bases_still_catch():
    assert isinstance(RecordError("w", []), ValueError)
    assert isinstance(LookupFailed(RefusalKind.NOT_FOUND, "run", "x", "m"), LookupError)
    assert isinstance(EvidenceError("replay", "m"), ValueError) and isinstance(QueueError("conflict", "m"), ValueError)
    assert isinstance(RayUnavailable("m"), RuntimeError)


def test_import_refusal_lines_are_its_problems():
    exc = ImportFailed([ImportProblem("a.jsonl", 2, "spec", "bad"), ImportProblem("b.jsonl", None, None, "empty")])
    assert exc.lines() == ["a.jsonl:2: spec: bad", "b.jsonl: empty"]


def test_api_errors_read_their_kind_from_the_status():
    def error(status):
        return ApiError({"status": status, "detail": "said the server"}, method="GET", url="http://x/api")

    assert error(404).kind is RefusalKind.NOT_FOUND and error(409).kind is RefusalKind.CONFLICT
    assert error(422).kind is RefusalKind.INVALID and error(500).kind is RefusalKind.UNAVAILABLE
    assert error(404).message == "said the server"
    down = ApiError(client_problem("unreachable", "Unreachable", "connection refused"), method="GET", url="http://x")
    assert down.kind is RefusalKind.UNAVAILABLE and down.lines() == ["connection refused"]


def test_mcp_error():
    assert mcp_error(LookupFailed(RefusalKind.NOT_FOUND, "run", "x", "no run 'x'")) == {
        "code": -32602,
        "message": "no run 'x'",
        "data": {"kind": "not_found", "code": "not_found"},
    }
    assert mcp_error(RayUnavailable("no cluster"))["code"] == -32603
