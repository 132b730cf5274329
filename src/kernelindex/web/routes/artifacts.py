"""`GET /artifacts/{digest}`: the bytes of a stored artifact (raw samples, logs, sources, traces),
served by the digest records name them by, so anyone can download the evidence and check it
hashes to that digest."""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from kernelindex.store.reads.artifacts import artifact_by_digest
from kernelindex.views.formatting import safe_url
from kernelindex.web.http.deps import connection
from kernelindex.web.problems import check_known_params, render_problem

router = APIRouter()
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# Served as inert text or JSON whatever the stored media type says: an artifact is evidence to
# read, never a page to render in this site's origin.
_SAFE_TYPES = {"application/json": "application/json", "text/plain": "text/plain; charset=utf-8"}


@router.get("/artifacts/{digest}", include_in_schema=False)
def artifact(request: Request, digest: str) -> Response:
    check_known_params(request, set())
    if not DIGEST.fullmatch(digest):
        return render_problem(request, 400, "bad-digest", f"{digest!r} is not a sha256:<64 hex> digest")
    with connection(request) as conn:
        found = artifact_by_digest(conn, digest)
    if found is None:
        return render_problem(request, 404, "unknown-artifact", f"no stored artifact has digest {digest}")
    if found.content is None:
        external = safe_url(found.uri)
        if external:
            return RedirectResponse(external, status_code=302)
        return render_problem(
            request, 404, "artifact-not-kept", f"artifact {digest} is named but its bytes are not kept here"
        )
    base = (found.media_type or "").split(";")[0].strip().lower()
    media = _SAFE_TYPES.get(base, "application/octet-stream")
    suffix = {"application/json": "json", "text/plain": "txt"}.get(base, "bin")
    return Response(
        found.content,
        media_type=media,
        headers={
            "Content-Disposition": f'inline; filename="{digest[7:23]}.{suffix}"',
            "Cache-Control": "public, max-age=31536000, immutable",
        },
    )
