"""The transparency log over HTTP: ``/api/v1/log/checkpoint`` and its two proofs.

The checkpoint is JSON (the view :class:`~kernelindex.views.transparency_log.LogCheckpoint`), and
the bare C2SP signed note at ``checkpoint.txt``, as transparency-log tools fetch it.
Every size is a bounded integer; a digest not in the log is a 404 problem.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse

from kernelindex.services.log_checkpoints import CheckpointSigner
from kernelindex.views import transparency_log as log_views
from kernelindex.web.http.deps import connection
from kernelindex.web.problems import check_known_params

router = APIRouter(prefix="/api/v1/log", tags=["log"])
MAX = log_views.MAX_SIZE


def signer(request: Request) -> CheckpointSigner:
    """The app's one signer (made on first use; its watcher signs each new tree size)."""
    state = request.app.state
    if getattr(state, "log_signer", None) is None:
        state.log_signer = CheckpointSigner()
    return state.log_signer


@router.get(
    "/checkpoint",
    response_model=log_views.LogCheckpoint,
    summary="The log's newest checkpoint, signed (its C2SP signed note, root and verifier key)",
)
def get_checkpoint(request: Request) -> log_views.LogCheckpoint:
    check_known_params(request, set())
    return log_views.current_checkpoint(signer(request), request.app.state.store)


@router.get(
    "/checkpoint.txt",
    response_class=PlainTextResponse,
    summary="The newest checkpoint as the bare C2SP signed note, as transparency-log tools fetch it",
)
def get_checkpoint_note(request: Request) -> PlainTextResponse:
    check_known_params(request, set())
    return PlainTextResponse(log_views.current_checkpoint(signer(request), request.app.state.store).note)


@router.get(
    "/proof/inclusion",
    response_model=log_views.InclusionProof,
    summary="RFC 9162 inclusion proof of the record with this content digest in the tree of `size` leaves",
)
def get_inclusion(
    request: Request,
    digest: str = Query(..., min_length=1, max_length=80, description="the record's content digest (sha256:…)"),
    size: int | None = Query(None, ge=0, le=MAX, description="tree size (default: the whole log)"),
) -> log_views.InclusionProof:
    check_known_params(request, {"digest", "size"})
    with connection(request) as conn:
        return log_views.inclusion_proof(conn, digest, size)


@router.get(
    "/proof/consistency",
    response_model=log_views.ConsistencyProof,
    summary="RFC 9162 consistency proof: the tree of `to` leaves extends the tree of `from` leaves",
)
def get_consistency(
    request: Request,
    from_: int = Query(..., alias="from", ge=0, le=MAX, description="the older tree's size"),
    to: int | None = Query(None, ge=0, le=MAX, description="the newer tree's size (default: the whole log)"),
) -> log_views.ConsistencyProof:
    check_known_params(request, {"from", "to"})
    with connection(request) as conn:
        return log_views.consistency_proof(conn, from_, to)
