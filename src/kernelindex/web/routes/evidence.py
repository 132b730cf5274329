"""The site's only writes: attestations and correction requests, by form and by JSON API; plus
the evidence read routes and the permalink by digest.

Why each guard exists:
- API key on every write (hashed at rest, scoped, revocable, per-key daily limit): a write is
  always attributable and can be cut off.
- Forms: an HttpOnly SameSite=Strict cookie with a random nonce, and a hidden field that must be
  the HMAC of that nonce under the server's secret (so a cookie a visitor sets for themselves
  cannot be matched by copying it into the field), plus an Origin / Sec-Fetch-Site check, so
  another site cannot post through a visitor.
- Bodies nest at most 32 levels and carry no bidi or zero-width controls (see ``input_guards``).
- JSON API: only ``application/json`` with a bearer key, which a cross-site form cannot send.
- Bodies are read up to a fixed size and refused beyond it before anything is parsed.
A refused write raises before the transaction commits, so nothing of it is stored.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders

from kernelindex.records.attestation import new_attestation
from kernelindex.records.errors import RecordError
from kernelindex.records.models import dump_record
from kernelindex.records.signing import SignatureError, private_key_from_pem, public_key_from_text
from kernelindex.store.evidence.records import EvidenceError, authenticate, utc_now
from kernelindex.store.reads.attestations import attested_run_digest
from kernelindex.store.reads.lookup import resolve_run
from kernelindex.store.reads.runs import run_by_digest
from kernelindex.store.reads.serving import serving_run_by_digest
from kernelindex.views import evidence
from kernelindex.views.common import today
from kernelindex.web.http.bodies import (
    AttestationBody,
    AttestationCreated,
    CorrectionBody,
    CorrectionCreated,
    fields_of,
    request_body,
)
from kernelindex.web.http.deps import base_url, connection, not_found
from kernelindex.web.http.input_guards import (
    CSRF_STATE,
    check_json_depth,
    check_visible_text,
    csrf_field_token,
    csrf_matches,
    json_object,
)
from kernelindex.web.problems import Problem, check_known_params

CSRF_COOKIE = "ki_csrf"
CSRF_HOST_COOKIE = "__Host-ki_csrf"  # its name over https
NONCE_CHARS = 43  # secrets.token_urlsafe(32)
CSRF_FIELD = "csrf_token"
MAX_FORM_BYTES = 16 * 1024
MAX_JSON_BYTES = 96 * 1024
SIGNING_KEY_ENV = "KERNELINDEX_SIGNING_KEY"
CSRF_SECRET_ENV = "KERNELINDEX_CSRF_SECRET"  # set it when several server processes share one site

STATUS = {
    "invalid_record": 422,
    "bad_request": 400,
    "bad_signature": 422,
    "bad_reproduction": 422,
    "unknown_key": 422,
    "unknown_run": 404,
    "unknown_record": 404,
    "replay": 409,
    "unauthorized": 401,
    "forbidden": 403,
    "rate_limited": 429,
}

ATTEST_FORM_FIELDS = {
    CSRF_FIELD,
    "api_key",
    "claim",
    "attester_name",
    "note",
    "measured_value",
    "measured_unit",
    "evidence_uri",
    "evidence_digest",
}
REPORT_FORM_FIELDS = {CSRF_FIELD, "api_key", "problem", "details", "requested_action"}
API_ATTEST_FIELDS = fields_of(AttestationBody)
API_REPORT_FIELDS = fields_of(CorrectionBody)

router = APIRouter(include_in_schema=True)


# --- guards --------------------------------------------------------------------------------


async def read_limited(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it passes ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise Problem(413, "too-large", f"request body over {limit} bytes is refused", limit=limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Problem(413, "too-large", f"request body over {limit} bytes is refused", limit=limit)
    return bytes(body)


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def check_same_origin(request: Request) -> None:
    """Refuse a form post that the browser marks as coming from another site.

    Sec-Fetch-Site is trusted first: our pages send ``Referrer-Policy: no-referrer``, under which
    browsers write ``Origin: null`` even on same-origin posts, so a null Origin proves nothing.
    """
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        if fetch_site not in ("same-origin", "none"):
            raise Problem(403, "cross-site", f"cross-site form posts are refused (Sec-Fetch-Site: {fetch_site})")
        return
    origin = request.headers.get("origin")
    if origin not in (None, "null") and origin.rstrip("/") != base_url(request):
        raise Problem(403, "cross-site", f"form posted from origin {origin!r}, expected {base_url(request)!r}")


async def read_form(request: Request, allowed: set[str]) -> dict[str, str]:
    check_same_origin(request)
    if _media_type(request) != "application/x-www-form-urlencoded":
        raise Problem(415, "unsupported-media-type", "forms must be sent as application/x-www-form-urlencoded")
    body = await read_limited(request, MAX_FORM_BYTES)
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False, max_num_fields=40)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Problem(400, "malformed-body", f"form body cannot be read: {exc}") from exc
    form: dict[str, str] = {}
    for name, value in pairs:
        if name not in allowed:
            raise Problem(400, "unknown-field", f"unknown form field {name!r}", field=name)
        if name in form:
            raise Problem(400, "duplicate-field", f"form field {name!r} given twice", field=name)
        form[name] = value
    cookie = request.cookies.get(csrf_cookie_name(request.scope))
    token = form.pop(CSRF_FIELD, None)
    if not csrf_matches(request.app.state.csrf_secret, cookie, token):
        raise Problem(
            403, "csrf", "the form's anti-forgery token is missing or does not match; reload the page and retry"
        )
    for name, value in form.items():
        check_visible_text(value, name)
    return form


async def read_json(request: Request, allowed: set[str]) -> dict[str, Any]:
    if _media_type(request) != "application/json":
        raise Problem(415, "unsupported-media-type", "send the body as application/json")
    body = await read_limited(request, MAX_JSON_BYTES)
    check_json_depth(body)
    data = json_object(body, allowed)
    check_visible_text(data, "body")
    return data


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else None


def _check_key(request: Request, scope: str) -> None:
    with connection(request) as conn:
        authenticate(conn, bearer(request), scope)


async def require_key(request: Request, scope: str) -> None:
    """401/403 before the body is read or checked: who may write is settled before what they wrote.
    The use case authenticates again inside its transaction (a key revoked meanwhile still fails)."""
    try:
        await run_in_threadpool(_check_key, request, scope)
    except EvidenceError as exc:
        raise _problem(exc) from exc


def _problem(exc: EvidenceError) -> Problem:
    return Problem(STATUS.get(exc.code, 400), exc.code.replace("_", "-"), str(exc))


def _run_row(conn, run_id: str):
    """The run a write route names: the same resolver as every page (id, digest or unique prefix)."""
    return resolve_run(conn, run_id)


# --- writes --------------------------------------------------------------------------------
# Their services (and the writer under them) load on the first write, not as the site starts.


def _store_attestation(request: Request, run_id: str, token: str | None, build, envelope=None, public_key=None):
    """Authenticate, build the record for the run, store and (if configured) countersign it."""
    from kernelindex.services.attestations import attest_with_api_key

    state = request.app.state
    try:
        return attest_with_api_key(
            state.store,
            token,
            run_id,
            build,
            envelope=envelope,
            public_key=public_key,
            countersign_key=getattr(state, "signing_key", None),
            countersign_label=getattr(state, "signing_label", None),
        )
    except EvidenceError as exc:
        raise _problem(exc) from exc


def _form_spec(form: dict[str, str], run_digest: str) -> dict[str, Any]:
    def text(name: str) -> str | None:
        value = form.get(name, "").strip()
        return value or None

    spec: dict[str, Any] = {
        "claim": text("claim") or "",
        "runDigest": run_digest,
        "attester": {"name": text("attester_name") or ""},
        "observedAt": utc_now(),
    }
    if text("note"):
        spec["note"] = text("note")
    if text("measured_value") or text("measured_unit"):
        try:
            value = float(text("measured_value") or "")
        except ValueError:
            raise Problem(422, "invalid-record", "measured_value: expected a number", field="measured_value") from None
        spec["measured"] = {"value": int(value) if value.is_integer() else value, "unit": text("measured_unit") or ""}
    if text("evidence_uri") or text("evidence_digest"):
        spec["evidence"] = {"uri": text("evidence_uri") or "", "digest": text("evidence_digest") or ""}
    return spec


def _build(spec: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    try:
        record = dump_record(new_attestation(spec))
    except RecordError as exc:
        raise EvidenceError("invalid_record", str(exc)) from exc
    if metadata is not None:
        record["metadata"] = metadata
    return record


@router.post("/runs/{run_id}/attestations", include_in_schema=False)
async def attest_form(request: Request, run_id: str):
    form = await read_form(request, ATTEST_FORM_FIELDS)
    token = form.get("api_key", "").strip() or None
    row, digest = await run_in_threadpool(
        _store_attestation, request, run_id, token, lambda row: _build(_form_spec(form, row.run_digest))
    )
    anchor = "att-" + digest.removeprefix("sha256:")[:12]
    return RedirectResponse(f"/runs/{row.id}#{anchor}", status_code=303)


@router.post(
    "/api/v1/runs/{run_id}/attestations",
    status_code=201,
    summary="Add an attestation to a run (API key with `attest`)",
    response_model=AttestationCreated,
    openapi_extra=request_body(AttestationBody),
)
async def attest_api(request: Request, run_id: str):
    await require_key(request, "attest")
    data = await read_json(request, API_ATTEST_FIELDS)
    spec = data.get("spec")
    if not isinstance(spec, dict):
        raise Problem(422, "invalid-record", "spec: required, a JSON object", field="spec")
    public_key = None
    if data.get("publicKey") is not None:
        try:
            public_key = public_key_from_text(str(data["publicKey"]))
        except SignatureError as exc:
            raise Problem(422, "bad-signature", f"publicKey: {exc}", field="publicKey") from exc

    def build(row) -> dict[str, Any]:
        given = dict(spec)
        if given.setdefault("runDigest", row.run_digest) != row.run_digest:
            raise EvidenceError("invalid_record", f"spec.runDigest {given['runDigest']} is not run {row.run_digest}")
        given.setdefault("observedAt", utc_now())
        return _build(given, data.get("metadata"))

    row, digest = await run_in_threadpool(
        _store_attestation, request, run_id, bearer(request), build, data.get("signature"), public_key
    )
    return JSONResponse(
        {
            "digest": digest,
            "run": row.run_digest,
            "permalink": f"{base_url(request)}/r/{digest}",
            "links": {"run": f"/runs/{row.id}", "attestations": f"/api/v1/runs/{row.id}/attestations"},
        },
        status_code=201,
    )


def _store_correction(request: Request, run_id: str, token: str | None, problem: str, details: str, action: str):
    from kernelindex.services.corrections import report_correction

    try:
        return report_correction(request.app.state.store, token, run_id, problem, details, action)
    except EvidenceError as exc:
        raise _problem(exc) from exc


@router.post("/runs/{run_id}/corrections", include_in_schema=False)
async def report_form(request: Request, run_id: str):
    form = await read_form(request, REPORT_FORM_FIELDS)
    row, request_id = await run_in_threadpool(
        _store_correction,
        request,
        run_id,
        form.get("api_key", "").strip() or None,
        form.get("problem", ""),
        form.get("details", "").strip(),
        form.get("requested_action", ""),
    )
    return RedirectResponse(f"/runs/{row.id}#corrections", status_code=303)


@router.post(
    "/api/v1/runs/{run_id}/corrections",
    status_code=201,
    summary="Report a problem with a run (API key with `report`)",
    response_model=CorrectionCreated,
    openapi_extra=request_body(CorrectionBody),
)
async def report_api(request: Request, run_id: str):
    await require_key(request, "report")
    data = await read_json(request, API_REPORT_FIELDS)
    fields: dict[str, str] = {}
    for name in API_REPORT_FIELDS:
        value = data.get(name)
        if not isinstance(value, str):
            raise Problem(422, "invalid-record", f"{name}: required, a string", field=name)
        fields[name] = value
    row, request_id = await run_in_threadpool(
        _store_correction,
        request,
        run_id,
        bearer(request),
        fields["problem"],
        fields["details"],
        fields["requestedAction"],
    )
    return JSONResponse({"id": request_id, "run": row.run_digest, "status": "open"}, status_code=201)


# --- reads ---------------------------------------------------------------------------------


@router.get(
    "/api/v1/runs/{run_id}/evidence",
    response_model=evidence.RunEvidence,
    summary="A run's evidence level, its reasons, signatures and attestations",
)
def evidence_api(request: Request, run_id: str) -> evidence.RunEvidence:
    check_known_params(request, set())
    with connection(request) as conn:
        return evidence.run_evidence(conn, _run_row(conn, run_id), base_url(request), today())


@router.get(
    "/api/v1/records/{digest}/signatures",
    response_model=evidence.RecordSignatures,
    summary="Every signature over a record, with envelope and public key",
)
def record_signatures(request: Request, digest: str) -> evidence.RecordSignatures:
    """What an offline check needs: save an envelope beside the record and run
    ``kernelindex verify-signatures --record RECORD.json --public-key KEY.pub``."""
    check_known_params(request, set())
    with connection(request) as conn:
        return evidence.record_signatures(conn, digest)


@router.get("/r/{digest}", include_in_schema=False)
def permalink(request: Request, digest: str):
    """A record by digest, forever: a run (even superseded or retracted: its page says so) or an attestation."""
    check_known_params(request, set())
    with connection(request) as conn:
        row = run_by_digest(conn, digest) if digest.startswith("sha256:") else None
        if row is not None:
            return RedirectResponse(f"/runs/{row.id}", status_code=302)
        attested = attested_run_digest(conn, digest)
        run = run_by_digest(conn, attested) if attested is not None else None
        serving = serving_run_by_digest(conn, digest) if run is None else None
    if serving:
        return RedirectResponse(f"/serving-runs/{serving}", status_code=302)
    if run is None:
        raise not_found("record", digest)
    return RedirectResponse(f"/runs/{run.id}#att-{digest.removeprefix('sha256:')[:12]}", status_code=302)


# --- wiring --------------------------------------------------------------------------------


def _load_signing_key(app: FastAPI) -> None:
    path = os.environ.get(SIGNING_KEY_ENV)
    app.state.signing_key = private_key_from_pem(Path(path).read_bytes()) if path else None
    app.state.signing_label = f"this index ({socket.gethostname()})"


def install(app: FastAPI) -> None:
    """Add the routes and the anti-forgery cookie to the app (called from ``create_app``)."""
    _load_signing_key(app)
    configured = os.environ.get(CSRF_SECRET_ENV)
    app.state.csrf_secret = configured.encode() if configured else secrets.token_bytes(32)
    app.include_router(router)

    app.add_middleware(CsrfCookieMiddleware)


def csrf_cookie_name(scope) -> str:
    """Over https the nonce cookie is ``__Host-`` prefixed: browsers take such a cookie only from
    this very host, Secure, with Path=/, so a sibling subdomain or a plain-http man in the middle
    cannot plant a nonce whose form token it learned by visiting us with that nonce itself."""
    return CSRF_HOST_COOKIE if scope.get("scheme") == "https" else CSRF_COOKIE


class CsrfCookieMiddleware:
    """Gives each visitor an anti-forgery token (``request.state.csrf_token``, the HMAC of the
    visitor's cookie nonce), setting the nonce cookie on the first HTML page. Plain ASGI: it runs on
    every request, cached pages included (the cache puts this token into the page on the way out)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        name = csrf_cookie_name(scope)
        cookie = Request(scope).cookies.get(name)
        fresh = not cookie or len(cookie) != NONCE_CHARS
        nonce = cookie if cookie and not fresh else secrets.token_urlsafe(32)  # the form field is its HMAC
        scope.setdefault("state", {})[CSRF_STATE] = csrf_field_token(scope["app"].state.csrf_secret, nonce)

        async def send_with_cookie(message) -> None:
            if fresh and scope["method"] == "GET" and message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if headers.get("content-type", "").startswith("text/html"):
                    made = Response()
                    made.set_cookie(
                        name,
                        nonce,
                        httponly=True,
                        samesite="strict",
                        secure=scope.get("scheme") == "https",
                        path="/",
                    )
                    headers.append("set-cookie", made.headers["set-cookie"])
            await send(message)

        await self.app(scope, receive, send_with_cookie)
