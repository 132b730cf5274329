"""Where a tool's answer comes from: the view function itself over a local store, or the API route that
serves that view on a server, validated into the same model; either way one model, one schema."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from kernelindex.client.protocol import segment
from kernelindex.views.reads import Reads

if TYPE_CHECKING:
    from sqlalchemy import Connection

M = TypeVar("M", bound=BaseModel)


def absolute_links(value: Any, base: str) -> Any:
    """``value`` with every site-relative link (``/runs/...``) made absolute, so an agent can cite it."""
    if isinstance(value, dict):
        return {k: absolute_links(v, base) for k, v in value.items()}
    if isinstance(value, list):
        return [absolute_links(v, base) for v in value]
    if isinstance(value, str) and value.startswith("/") and not value.startswith("//"):
        return f"{base}{value}"
    return value


def path(*parts: str) -> str:
    """An API path after ``/api/v1``, each caller-given segment quoted."""
    return "".join("/" + segment(p) for p in parts)


class Catalog:
    """The reads behind every tool: ``reads`` (local or remote), and one way to ask for any view."""

    def __init__(self, reads: Reads) -> None:
        self.reads = reads

    @property
    def base_url(self) -> str:
        return self.reads.base_url

    @property
    def local(self) -> bool:
        return getattr(self.reads, "store", None) is not None

    def view(
        self,
        model: type[M],
        build: Callable[[Connection, str], M],
        api_path: str,
        params: dict[str, Any] | None = None,
        body: Any = None,
        *,
        links: bool = True,
    ) -> M:
        """``build(conn, base_url)`` over the local store, else the route at ``api_path`` (a POST when
        ``body`` is given); site links made absolute unless ``links`` is false."""
        store = getattr(self.reads, "store", None)
        if store is not None:
            with store.engine.connect() as conn:
                answer: Any = build(conn, self.base_url).model_dump(mode="json", by_alias=True)
        else:
            client = self.reads.client  # type: ignore[attr-defined]
            wanted = {k: v for k, v in (params or {}).items() if v is not None}
            answer = client.post_view(api_path, body) if body is not None else client.view(api_path, wanted)
        return model.model_validate(absolute_links(answer, self.base_url) if links else answer)
