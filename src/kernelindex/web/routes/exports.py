"""The catalog export as a download, the way a KernelIndex server offers it, so another server can
``kernelindex sync`` from this one: ``/api/v1/exports/latest.json`` points at the newest export,
``/api/v1/exports/catalog.jsonl.zst`` redirects to it, and the file is named by its digest."""

from __future__ import annotations

import re

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, RedirectResponse
from pydantic import BaseModel, ConfigDict

from kernelindex.web.http.deps import not_found
from kernelindex.web.problems import check_known_params

router = APIRouter(prefix="/api/v1/exports")
_HEX = re.compile(r"^[0-9a-f]{64}$")


class LatestExport(BaseModel):
    """Where the newest catalog export is, and what ``kernelindex sync`` checks it against."""

    model_config = ConfigDict(extra="forbid")

    digest: str
    sizeBytes: int
    createdAt: str
    url: str


@router.get("/latest.json", response_model=LatestExport, summary="The newest catalog export: its digest, size and URL")
def latest(request: Request) -> LatestExport:
    check_known_params(request, set())
    export = request.app.state.export_cache.latest()
    return LatestExport(
        digest=export.digest, sizeBytes=export.size, createdAt=export.created_at, url=f"/api/v1/exports/{export.name}"
    )


@router.get("/catalog.jsonl.zst", summary="Redirects to the newest catalog export")
def newest(request: Request) -> RedirectResponse:
    check_known_params(request, set())
    export = request.app.state.export_cache.latest()
    return RedirectResponse(f"/api/v1/exports/{export.name}", status_code=302)


@router.get("/catalog-{hex_digest}.jsonl.zst", summary="One catalog export, named by its sha256")
def export_file(request: Request, hex_digest: str) -> FileResponse:
    check_known_params(request, set())
    path = request.app.state.export_cache.file(hex_digest) if _HEX.fullmatch(hex_digest) else None
    if path is None:
        raise not_found("catalog export", hex_digest[:64])
    headers = {"X-Content-Digest": f"sha256:{hex_digest}", "Cache-Control": "public, max-age=31536000, immutable"}
    return FileResponse(path, media_type="application/zstd", filename=path.name, headers=headers)
