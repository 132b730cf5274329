"""``GET /api/v1/export``: the whole store as catalog-export JSON Lines, streamed, so that
``kernelindex export --server URL`` writes the same file a local export would."""

from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from kernelindex.ingest.jsonlines import js_dumps
from kernelindex.store.reads.export import count_rows, export_lines
from kernelindex.web.problems import check_known_params

router = APIRouter(prefix="/api/v1", tags=["api"])
ROW_COUNT_HEADER = "X-Row-Count"


@router.get(
    "/export",
    summary="Every stored row as catalog-export JSON Lines (the public format), streamed",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-ndjson": {}}}},
)
def export(request: Request) -> StreamingResponse:
    check_known_params(request, set())
    store = request.app.state.store
    with store.engine.connect() as conn:
        total = count_rows(conn)

    def lines() -> Iterator[bytes]:
        # One connection (one snapshot on PostgreSQL) for the whole stream, batched into ~64 KiB writes.
        with store.engine.connect() as conn:
            chunk: list[str] = []
            size = 0
            for table, row in export_lines(conn):
                line = js_dumps({"table": table, "row": row}) + "\n"
                chunk.append(line)
                size += len(line)
                if size >= 65536:
                    yield "".join(chunk).encode("utf-8")
                    chunk, size = [], 0
            yield "".join(chunk).encode("utf-8")

    return StreamingResponse(lines(), media_type="application/x-ndjson", headers={ROW_COUNT_HEADER: str(total)})
