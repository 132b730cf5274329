"""The search answer (``/?q=``, ``GET /api/v1/search``, ``kernelindex search``, the MCP ``search`` tool): the
answer model is :class:`kernelindex.search.models.SearchAnswer`; a refused query is a 400 refusal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelindex.records.refusal import BadParameter
from kernelindex.search.answer import RANK_ROWS, search
from kernelindex.search.models import SearchAnswer
from kernelindex.search.query import QueryError

if TYPE_CHECKING:
    from sqlalchemy import Connection


def search_view(conn: Connection, text: str, rank_rows: int = RANK_ROWS) -> SearchAnswer:
    """The answer to ``text``, at most ``rank_rows`` rows per rank table."""
    try:
        return search(conn, text, rank_rows=rank_rows)
    except QueryError as exc:
        raise BadParameter("bad-query", str(exc), parameter="q") from None
