"""The blocking client (httpx.Client underneath)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


class Client(Endpoints):
    """A KernelIndex API client: ``Client("http://127.0.0.1:8000").run("149b7c1a")``.

    Idempotent requests are retried with backoff; GETs revalidate with ``If-None-Match``; every
    failure is one :class:`~kernelindex.client.ApiError`. ``api_key`` defaults to $KERNELINDEX_API_KEY
    (``""``: none); a remote runner passes ``auth=SignedRequests(key)``; ``sync`` follows redirects.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        backoff_s: float = 0.25,
        transport: httpx.BaseTransport | None = None,
        auth: httpx.Auth | None = None,
        follow_redirects: bool = False,
        max_redirects: int = 20,
    ) -> None:
        self.base_url = checked_base_url(base_url)
        self.timeout = timeout
        self.policy = RetryPolicy(retries=retries, backoff_s=backoff_s)
        self.cache = EtagCache()
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=timeout,
            transport=transport,
            auth=auth,
            follow_redirects=follow_redirects,
            max_redirects=max_redirects,
            headers=headers(key, f"kernelindex-client/{__version__}"),
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @contextmanager
    def download(
        self, url: str, *, headers: dict[str, str] | None = None, timeout: httpx.Timeout | float | None = None
    ) -> Iterator[httpx.Response]:
        """One GET of ``url`` (a path on the server, or an absolute URL it pointed to) as an unread
        streamed answer, for files that are not API documents (the catalog export): tried once, any
        status comes back, and faults are httpx's own, so the caller judges the bytes itself."""
        with self._http.stream("GET", url, headers=headers, timeout=timeout or self.timeout) as response:
            yield response

    @contextmanager
    def export(self) -> Iterator[Lines[Iterator[str]]]:
        """The whole catalog as export JSON Lines, streamed: ``with api.export() as out: for line in out.lines``."""
        request = self._http.build_request("GET", f"{API}/export")
        attempts = Attempts("GET", str(request.url), self.policy, self.timeout)
        while True:
            try:
                response = self._http.send(request, stream=True)
            except httpx.TransportError as exc:
                time.sleep(attempts.after_fault(exc))
                continue
            if (delay := attempts.after_answer(response, success_ends=True)) is None:
                break
            response.close()
            time.sleep(delay)
        try:
            if not response.is_success:
                response.read()
                decode(response, "GET", None)

            def lines() -> Iterator[str]:
                cutter = LineCutter("GET", str(request.url))
                try:
                    for piece in response.iter_text():
                        yield from cutter.feed(piece)
                    yield from cutter.end()
                except httpx.TransportError as exc:
                    raise transport_error(exc, "GET", str(request.url), self.timeout) from None

            yield Lines(announced_rows(response), lines())
        finally:
            response.close()

    def _call(
        self, method: str, path: str, params: dict[str, Any] | None = None, json: Any = None, transform=None
    ) -> Any:
        request = self._http.build_request(method, path, params=clean_params(params), json=json)
        etag = self.cache.etag(str(request.url)) if method == "GET" else None
        if etag:
            request.headers["If-None-Match"] = etag
        attempts = Attempts(method, str(request.url), self.policy, self.timeout)
        while True:
            try:
                response = self._http.send(request)
            except httpx.TransportError as exc:
                time.sleep(attempts.after_fault(exc))
                continue
            if (delay := attempts.after_answer(response)) is None:
                body = decode(response, method, self.cache)
                return transform(body) if transform else body
            time.sleep(delay)

    def _iterate(self, path: str, params: dict[str, Any], max_items: int | None) -> Iterator[dict[str, Any]]:
        cursor, given = None, 0
        while True:
            body = self._call("GET", path, {**params, "cursor": cursor})
            for item in body.get("items") or []:
                if max_items is not None and given >= max_items:
                    return
                given += 1
                yield item
            cursor = body.get("next")
            if not cursor:
                return
