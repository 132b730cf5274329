"""The asyncio client (httpx.AsyncClient underneath): the same methods as :class:`Client`, awaited."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from kernelindex import __version__
from kernelindex.client.endpoints import Endpoints
from kernelindex.client.protocol import (
    API,
    API_KEY_ENV,
    Attempts,
    EtagCache,
    LineCutter,
    Lines,
    RetryPolicy,
    announced_rows,
    checked_base_url,
    clean_params,
    decode,
    headers,
    transport_error,
)


class AsyncClient(Endpoints):
    """``async with AsyncClient(url) as c: view = await c.run("149b7c1a")``; listings are ``async for``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        backoff_s: float = 0.25,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = checked_base_url(base_url)
        self.timeout = timeout
        self.policy = RetryPolicy(retries=retries, backoff_s=backoff_s)
        self.cache = EtagCache()
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            headers=headers(key, f"kernelindex-client/{__version__}"),
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    @asynccontextmanager
    async def export(self) -> AsyncIterator[Lines[AsyncIterator[str]]]:
        """The whole catalog as export JSON Lines: ``async with api.export() as out: async for line in out.lines``."""
        request = self._http.build_request("GET", f"{API}/export")
        attempts = Attempts("GET", str(request.url), self.policy, self.timeout)
        while True:
            try:
                response = await self._http.send(request, stream=True)
            except httpx.TransportError as exc:
                await asyncio.sleep(attempts.after_fault(exc))
                continue
            if (delay := attempts.after_answer(response, success_ends=True)) is None:
                break
            await response.aclose()
            await asyncio.sleep(delay)
        try:
            if not response.is_success:
                await response.aread()
                decode(response, "GET", None)

            async def lines() -> AsyncIterator[str]:
                cutter = LineCutter("GET", str(request.url))
                try:
                    async for piece in response.aiter_text():
                        for line in cutter.feed(piece):
                            yield line
                    for line in cutter.end():
                        yield line
                except httpx.TransportError as exc:
                    raise transport_error(exc, "GET", str(request.url), self.timeout) from None

            yield Lines(announced_rows(response), lines())
        finally:
            await response.aclose()

    async def _call(
        self, method: str, path: str, params: dict[str, Any] | None = None, json: Any = None, transform=None
    ) -> Any:
        request = self._http.build_request(method, path, params=clean_params(params), json=json)
        etag = self.cache.etag(str(request.url)) if method == "GET" else None
        if etag:
            request.headers["If-None-Match"] = etag
        attempts = Attempts(method, str(request.url), self.policy, self.timeout)
        while True:
            try:
                response = await self._http.send(request)
            except httpx.TransportError as exc:
                await asyncio.sleep(attempts.after_fault(exc))
                continue
            if (delay := attempts.after_answer(response)) is None:
                body = decode(response, method, self.cache)
                return transform(body) if transform else body
            await asyncio.sleep(delay)

    async def _iterate(self, path: str, params: dict[str, Any], max_items: int | None) -> AsyncIterator[dict[str, Any]]:
        cursor, given = None, 0
        while True:
            body = await self._call("GET", path, {**params, "cursor": cursor})
            for item in body.get("items") or []:
                if max_items is not None and given >= max_items:
                    return
                given += 1
                yield item
            cursor = body.get("next")
            if not cursor:
                return
