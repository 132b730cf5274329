"""The serving resolver's one builder (``/serving/resolve``, ``GET /api/v1/resolve/serving``, the MCP
``resolve_serving`` tool): a model and a GPU, optionally the lengths to serve, to the frontier."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelindex.records.refusal import RefusalKind, ViewRefusal
from kernelindex.store.reads import serving as reads
from kernelindex.store.reads.lookup import resolve_model
from kernelindex.views import serving as views

if TYPE_CHECKING:
    from sqlalchemy import Connection


def resolve_serving(
    conn: Connection, model_ident: str, gpu: str, input_len: int | None, output_len: int | None, base_url: str
) -> views.Resolved:
    """Which stacks and configurations serve ``model_ident`` best on ``gpu``; 404 when none has run there."""
    model = dict(resolve_model(conn, model_ident)._mapping)
    runs = reads.model_runs(conn, model["id"], gpu)
    if not runs:
        raise ViewRefusal(
            RefusalKind.NOT_FOUND,
            "no-runs",
            f"no serving runs of {model['name']} on a GPU matching {gpu!r}",
            resource="serving runs",
        )
    runs = [run for run in runs if views.fits_lengths(run, input_len, output_len)]
    if not runs:
        raise ViewRefusal(
            RefusalKind.NOT_FOUND,
            "no-runs",
            f"no serving run of {model['name']} on {gpu!r} admits input_len={input_len} output_len={output_len}",
            resource="serving runs",
        )
    return views.resolve_view(conn, model, gpu, runs, input_len, output_len, base_url)
