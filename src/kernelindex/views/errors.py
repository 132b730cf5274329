"""The one refusal a view raises on purpose (a bad count, a bad date): the web answers it as an RFC 9457
problem, the CLI prints it and the MCP tools return it as a tool error, so views need not know HTTP."""

from __future__ import annotations

from typing import Any


class Refusal(Exception):
    """``status`` and ``slug`` say how HTTP answers it; ``extra`` are the problem document's own members."""

    def __init__(self, status: int, slug: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.slug = slug
        self.detail = detail
        self.extra = extra
