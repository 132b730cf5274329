"""What each problem ``type`` means: the page ``/problems/<slug>`` that every problem document's
``type`` names (RFC 9457 asks that a type URI, dereferenced, tell a person what went wrong).

A slug missing here would answer its type with a 404; a test reads every slug the source can emit
and checks it has a line here.
"""

from __future__ import annotations

PROBLEM_TYPES: dict[str, str] = {
    # what was asked for
    "not-found": "Nothing by that id, digest, slug or name is in this index, or there is no such page.",
    "ambiguous-name": "The name or slug fits several records; the problem's candidates count them. "
    "Use the id or a digest prefix, or follow one of the links the page lists.",
    "ambiguous-digest-prefix": "The digest prefix fits several records: give more hex characters.",
    "ambiguous": "The identifier fits several records: give an id or a longer digest prefix.",
    "digest-prefix-too-short": "A hex prefix under 8 characters is too short to name one record safely.",
    "method-not-allowed": "The path exists but not with this HTTP method; the Allow header lists those it takes.",
    "http-error": "An HTTP-level refusal; the detail says which.",
    # parameters
    "invalid-parameter": "A query or path parameter is not of its declared type or outside its bounds "
    "(for example limit=abc, limit=0, or an integer past 2^63-1); errors[] names each one.",
    "bad-parameter": "A parameter holds a word this listing does not know (an unknown status or state); "
    "the detail lists the accepted ones.",
    "unknown-parameter": "The request names a query parameter this route does not take (a typo in a filter "
    "would otherwise return everything).",
    "missing-parameter": "A required parameter is absent.",
    "bad-cursor": "The cursor was edited, made by hand, belongs to another listing or has expired: start from "
    "the first page.",
    "bad-query": "The search text could not be read; the detail says which part.",
    "bad-kind": "The record kind asked for is not one this index keeps.",
    "bad-run-count": "Compare takes 2 to 8 distinct runs.",
    "duplicate-run": "Two of the identifiers given to compare name the same run; a run compared with itself says nothing.",
    "bad-character": "The request holds a NUL character, which no id, digest or search text contains.",
    "bad-encoding": "The path or a query parameter is not valid UTF-8 once its percent-escapes are decoded "
    "(%ff, say): it can name nothing here; the parameter member names which one (absent: the path).",
    "too-long": "A query parameter is longer than any id, digest, slug, cursor or search text.",
    "bad-request": "The request was refused as asked; the detail says why.",
    "bad-limit": "The page size is out of bounds.",
    "batch-too-large": "A kernel-resolver batch holds more queries than one request resolves (the problem's "
    "limit says how many); split it.",
    "unknown-kind": "The manifest schema asked for names no record kind of the v1alpha1 format.",
    "bad-size": "A transparency-log size is outside the tree: sizes run from 0 to the current tree size, "
    "and a consistency proof needs from <= to.",
    "not-in-log": "No record with that content digest is a leaf of the transparency log (of the tree size asked).",
    "bad-since": "The since= time is not an ISO 8601 date or time.",
    "invalid": "The request is well-formed but refused for what it says; the detail says why.",
    "unsupported": "The request asks for something this server does not do.",
    "no-runs": "Nothing measured matches: there are no runs to answer with.",
    "environment-mismatch": "A runner's result was measured in another environment than the job it leased.",
    # bodies
    "invalid-body": "A request body field fails its declared type; errors[] names each one.",
    "malformed-body": "The body is not one JSON object.",
    "too-deep": "The JSON body nests deeper than the server reads.",
    "duplicate-field": "A JSON object gives the same key twice, so two readers could read it differently.",
    "unknown-field": "The body carries a field this route does not take.",
    "invisible-character": "Text holds a bidirectional or zero-width control, which would make the shown text "
    "differ from the stored text.",
    "too-large": "The request body is larger than this route accepts.",
    "unsupported-media-type": "The body is not in the media type this route reads (application/json).",
    "invalid-record": "The record does not validate against its schema; the detail names the field.",
    "bad-signature": "A signature or public key does not verify.",
    "bad-reproduction": "The reproduction claim does not match the run it names.",
    "bad-result": "A runner's result does not fit the job it leased.",
    "bad-solution": "The solution is missing or not a solution.json object with its sources inline.",
    "bad-problem": "The problem named or sent is not one the runner can evaluate.",
    "no-sources": "The solution carries no source files.",
    "unknown-problem": "No problem pack by that name is built in.",
    # who is asking
    "unauthorized": "Writes need an API key (Authorization: Bearer ...); it is checked before the body is read.",
    "forbidden": "The API key lacks the scope this write needs.",
    "cross-site": "A form was posted from another site.",
    "csrf": "The form's anti-forgery token is missing or does not match its cookie: reload the page and resend.",
    "revoked": "The key was revoked.",
    "rate-limited": "The API key reached its daily limit.",
    "unknown-key": "No registered key has that id.",
    "unknown-runner": "No registered runner has that key.",
    "replay": "A signed request or record was sent before; each is accepted once.",
    # state
    "conflict": "The request conflicts with what is stored.",
    "duplicate": "That record is already stored.",
    "unknown-run": "No run by that identifier.",
    "unknown-record": "No record by that digest.",
    "unknown-request": "No rerun request by that id.",
    "unknown-lease": "No lease by that id.",
    "lease-closed": "The lease already ended (finished, failed or expired).",
    "not-holder": "Another runner holds this lease.",
    "unavailable": "A service this needs is not running.",
    "internal-error": "The server failed; the error was logged. Nothing was stored.",
}
