"""What the sync and async clients share and that does no I/O: paths, retry decisions, backoff,
the ETag cache, and turning an HTTP answer into data or an :class:`ApiError`."""

from __future__ import annotations

import json
import random
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from kernelindex.client.errors import ApiError, client_problem
from kernelindex.records.strict_json import MAX_LINE  # a streamed export line: the importer's bound

T = TypeVar("T")
API = "/api/v1"
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_DELAY_S = 30.0
SERVER_ENV = "KERNELINDEX_SERVER"
API_KEY_ENV = "KERNELINDEX_API_KEY"


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing, the opaque cursor of the next (None on the last page) and, where the
    listing counts them, how many items all its pages hold."""

    items: list[T]
    next: str | None
    total: int | None = None


@dataclass
class RetryPolicy:
    """Retry idempotent requests on connection faults, timeouts and 429/502/503/504, with
    exponential backoff and full jitter, honouring ``Retry-After`` up to ``MAX_DELAY_S``."""

    retries: int = 3
    backoff_s: float = 0.25
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, attempt: int, response: httpx.Response | None = None) -> float:
        after = retry_after_s(response) if response is not None else None
        if after is not None:
            return min(after, MAX_DELAY_S)
        return self.rng.uniform(0, min(self.backoff_s * 2**attempt, MAX_DELAY_S))


def retry_after_s(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class EtagCache:
    """Bodies of earlier GETs by URL with their ETag, so a 304 answer reuses the body (bounded LRU)."""

    def __init__(self, max_entries: int = 256) -> None:
        self._entries: OrderedDict[str, tuple[str, Any]] = OrderedDict()
        self._max = max_entries

    def etag(self, url: str) -> str | None:
        entry = self._entries.get(url)
        return entry[0] if entry else None

    def body(self, url: str) -> Any:
        self._entries.move_to_end(url)
        return self._entries[url][1]

    def keep(self, url: str, etag: str, body: Any) -> None:
        self._entries[url] = (etag, body)
        self._entries.move_to_end(url)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)


def checked_base_url(base_url: str) -> str:
    """The server's address without a trailing slash; a ValueError unless it is an http(s) URL with a host."""
    try:
        url = httpx.URL(base_url.strip())
    except httpx.InvalidURL as exc:
        raise ValueError(f"{base_url!r} is not a server address: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(f"{base_url!r} is not a server address: expected http://HOST[:PORT] or https://HOST")
    return str(url).rstrip("/")


def segment(value: str) -> str:
    """One path segment: ids and digests travel as they are, anything else is escaped."""
    return quote(value.strip(), safe=":")


def clean_params(params: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (params or {}).items() if v is not None}


def should_retry(method: str, attempt: int, policy: RetryPolicy, response: httpx.Response | None) -> bool:
    if method not in IDEMPOTENT or attempt >= policy.retries:
        return False
    return response is None or response.status_code in RETRY_STATUSES


class Attempts:
    """The retry decisions of one request, without I/O: the sync and the asyncio client each send
    and sleep their own way, and ask this after every try what to do next."""

    def __init__(self, method: str, url: str, policy: RetryPolicy, timeout_s: float | None) -> None:
        self.method, self.url, self.policy, self.timeout_s = method, url, policy, timeout_s
        self.attempt = 0

    def after_fault(self, exc: httpx.TransportError) -> float:
        """Seconds to wait before trying again; raises the fault as :class:`ApiError` when it may not."""
        if not should_retry(self.method, self.attempt, self.policy, None):
            raise transport_error(exc, self.method, self.url, self.timeout_s) from None
        return self._next(None)

    def after_answer(self, response: httpx.Response, *, success_ends: bool = False) -> float | None:
        """None when ``response`` is the answer to keep (a success with ``success_ends``, anything
        that may not be retried); else seconds to wait before trying again."""
        if (success_ends and response.is_success) or not should_retry(self.method, self.attempt, self.policy, response):
            return None
        return self._next(response)

    def _next(self, response: httpx.Response | None) -> float:
        delay = self.policy.delay(self.attempt, response)
        self.attempt += 1
        return delay


def transport_error(exc: httpx.TransportError, method: str, url: str, timeout_s: float | None) -> ApiError:
    """The fault as one problem: timeout, unreachable or a truncated answer."""
    if isinstance(exc, httpx.TimeoutException):
        problem = client_problem(
            "timeout", "No answer in time", f"the server did not answer within {timeout_s} s ({type(exc).__name__})"
        )
    elif isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        problem = client_problem(
            "truncated",
            "Truncated answer",
            f"the connection broke before the whole answer arrived: {exc or type(exc).__name__}",
        )
    else:
        problem = client_problem(
            "unreachable", "Server unreachable", f"cannot reach the server: {exc or type(exc).__name__}"
        )
    return ApiError(problem, method=method, url=url)


def decode(response: httpx.Response, method: str, cache: EtagCache | None) -> Any:
    """The JSON body of a successful answer (or the cached one on 304), else an :class:`ApiError`."""
    url = str(response.request.url)
    if response.status_code == 304 and cache is not None and cache.etag(url):
        return cache.body(url)
    if response.is_success:
        body = _json_body(response, method, url)
        etag = response.headers.get("etag")
        if cache is not None and etag and method == "GET":
            cache.keep(url, etag, body)
        return body
    try:
        body = json.loads(response.content)
    except (UnicodeDecodeError, ValueError):
        body = None
    if isinstance(body, dict) and "status" in body and ("title" in body or "detail" in body):
        raise ApiError(body, method=method, url=url)
    reason = response.reason_phrase or "error"
    kind = response.headers.get("content-type", "no content type")
    detail = f"the server answered {response.status_code} {reason} ({kind}, not a problem document)"
    raise ApiError(client_problem("http-error", reason, detail, status=response.status_code), method=method, url=url)


def _json_body(response: httpx.Response, method: str, url: str) -> Any:
    if not response.content:
        return None
    try:
        return json.loads(response.content)
    except (UnicodeDecodeError, ValueError) as exc:
        kind = response.headers.get("content-type", "no content type")
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) != len(response.content):
            detail = f"the answer was cut off after {len(response.content)} of {declared} bytes"
            raise ApiError(
                client_problem("truncated", "Truncated answer", detail, status=response.status_code),
                method=method,
                url=url,
            ) from None
        raise ApiError(
            client_problem(
                "not-json",
                "Answer is not JSON",
                f"the server answered {response.status_code} with {kind} that is not JSON ({exc})",
                status=response.status_code,
            ),
            method=method,
            url=url,
        ) from None


def headers(api_key: str | None, user_agent: str) -> dict[str, str]:
    out = {"Accept": "application/json, application/problem+json", "User-Agent": user_agent}
    if api_key:
        out["Authorization"] = f"Bearer {api_key}"
    return out


@dataclass
class Lines(Generic[T]):
    """A streamed JSON Lines answer: the rows the server announced (``X-Row-Count``) and the lines."""

    total: int | None
    lines: T


def announced_rows(response: httpx.Response) -> int | None:
    value = response.headers.get("x-row-count", "")
    return int(value) if value.isdigit() else None


class LineCutter:
    """Lines out of a streamed answer's text pieces (without their line ends), none longer than
    :data:`MAX_LINE`: a line past it is refused as soon as that much of it has come, after every
    line that ended before it."""

    def __init__(self, method: str, url: str) -> None:
        self.method, self.url = method, url
        self._pending: list[str] = []  # pieces of the line not ended yet
        self._size = 0

    def feed(self, piece: str) -> Iterator[str]:
        *ended, tail = piece.split("\n")
        if ended:
            ended[0] = "".join([*self._pending, ended[0]])
            self._pending, self._size = [], 0
        for line in ended:
            self._bound(len(line))
            yield line.removesuffix("\r")
        if tail:
            self._pending.append(tail)
            self._size += len(tail)
            self._bound(self._size)

    def end(self) -> list[str]:
        """The last line, when the answer did not end with a line end."""
        last = "".join(self._pending).removesuffix("\r")
        self._pending, self._size = [], 0
        return [last] if last else []

    def _bound(self, size: int) -> None:
        if size > MAX_LINE:
            detail = f"the server sent a line longer than {MAX_LINE} characters, the most one export line may hold"
            raise ApiError(client_problem("line-too-long", "Line too long", detail), method=self.method, url=self.url)
