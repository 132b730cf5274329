"""Compressed replies: brotli where the client accepts it, else gzip, for HTML, JSON, SVG, CSS and
JavaScript above a size threshold.

The outermost middleware, so it sees each reply as it leaves, with every header set. One rule
rides along because only here is the final reply visible: a reply that sets a cookie is never
marked ``public`` (it becomes ``private, no-cache``). The cache's ETags are weak, so one ETag
serves the compressed and the plain bytes alike.
A body the cache shares between visitors is compressed once per coding and kept with the entry.
A reply that carries the visitor's anti-forgery token is only ever gzipped with the token deflated
alone, its parts around the token deflated apart (each ending on a full flush, so none refers to
another): the compressed length then says nothing about how much of the token matches text an
attacker put on the page (BREACH). A client that takes no gzip gets such a reply plain. For a
cached page the parts are deflated once, and each reply splices its visitor's token between them.
Streamed replies (no Content-Length, e.g. server-sent events) pass untouched.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import brotli
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kernelindex.web.http.cache import PERSONAL, SCOPE_ENTRY
from kernelindex.web.http.input_guards import CSRF_STATE

MIN_SIZE = 1024
COMPRESSIBLE = (
    "text/html",
    "application/json",
    "application/problem+json",
    "image/svg+xml",
    "text/css",
    "text/javascript",
    "application/javascript",
    "text/plain",
)
GZIP_LEVEL = 6
BROTLI_QUALITY = 5  # fast: compression runs on the first, uncached reply too


def accepted_coding(accept_encoding: str, preference: tuple[str, ...] = ("br", "gzip")) -> str | None:
    """The first coding of ``preference`` the client accepts with q > 0, else None."""
    accepted: dict[str, float] = {}
    for part in accept_encoding.lower().split(","):
        name, _, params = part.strip().partition(";")
        q = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                q = float(params[2:])
            except ValueError:
                q = 0.0
        accepted[name.strip()] = q
    for coding in preference:
        if accepted.get(coding, accepted.get("*", 0.0)) > 0:
            return coding
    return None


def compress(body: bytes, coding: str) -> bytes:
    if coding == "br":
        return brotli.compress(body, quality=BROTLI_QUALITY)
    return gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0)


GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, mtime 0, unknown OS
FINAL_EMPTY_BLOCK = b"\x03\x00"  # a last, empty, fixed-Huffman deflate block


def deflate_part(data: bytes) -> bytes:
    """Raw deflate of ``data`` ending on a byte boundary, with no reference before or after it."""
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)


def spliced_gzip(parts: list[bytes], filler: bytes, body: bytes) -> bytes:
    """The gzip of ``body`` == ``filler.join(parts_uncompressed)``, from the deflated ``parts``."""
    joined = deflate_part(filler).join(parts)
    return GZIP_HEADER + joined + FINAL_EMPTY_BLOCK + struct.pack("<II", zlib.crc32(body), len(body) & 0xFFFFFFFF)


class CompressionMiddleware:
    def __init__(self, app: ASGIApp, min_size: int = MIN_SIZE) -> None:
        self.app = app
        self.min_size = min_size

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] == "HEAD":  # HEAD: headers of a body never sent
            await self.app(scope, receive, send)
            return
        coding = accepted_coding(Headers(scope=scope).get("accept-encoding", ""))
        start: Message | None = None
        chunks: list[bytes] = []

        async def wrapped(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if "set-cookie" in headers and "public" in headers.get("cache-control", ""):
                    headers["cache-control"] = PERSONAL
                compressible = headers.get("content-type", "").split(";")[0].strip() in COMPRESSIBLE
                if compressible:
                    headers.add_vary_header("Accept-Encoding")
                if (
                    compressible
                    and coding is not None
                    and message["status"] == 200
                    and "content-encoding" not in headers
                    and "content-length" in headers
                    and int(headers["content-length"]) >= self.min_size
                ):
                    start = message  # hold it until the body is complete
                    return
                await send(message)
            elif start is None or coding is None:  # (a start is held only when there is a coding)
                await send(message)
            else:
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    await self._send_compressed(scope, send, start, b"".join(chunks), coding)

        await self.app(scope, receive, wrapped)

    async def _send_compressed(self, scope: Scope, send: Send, start: Message, body: bytes, coding: str) -> None:
        encoded = None
        shared = scope.get(SCOPE_ENTRY)
        token = (scope.get("state", {}).get(CSRF_STATE) or "").encode()
        if shared is not None and not shared[1].personal and shared[1].body == body:
            entries, entry, _, _ = shared
            encoded = entry.encoded.get(coding)
            if encoded is None:
                encoded = entry.encoded[coding] = compress(body, coding)
                entries.grew(entry, len(encoded))
        elif token and token in body:
            if not self._gzip_ok(scope):
                await send(start)
                await send({"type": "http.response.body", "body": body})
                return
            coding, encoded = "gzip", spliced_gzip(self._parts(shared, token, body), token, body)
        if encoded is None:
            encoded = compress(body, coding)
        headers = MutableHeaders(scope=start)
        headers["content-encoding"] = coding
        headers["content-length"] = str(len(encoded))
        await send(start)
        await send({"type": "http.response.body", "body": encoded})

    @staticmethod
    def _parts(shared: tuple | None, token: bytes, body: bytes) -> list[bytes]:
        """The deflated parts of ``body`` around ``token``: kept with the cache's entry when it is one."""
        if shared is not None:
            entries, entry, placeholder, entry_token = shared
            if entry.personal and entry_token == token and entry.body.replace(placeholder, token) == body:
                if entry.parts is None:
                    entry.parts = [deflate_part(part) for part in entry.body.split(placeholder)]
                    entries.grew(entry, sum(len(part) for part in entry.parts))
                return entry.parts
        return [deflate_part(part) for part in body.split(token)]

    @staticmethod
    def _gzip_ok(scope: Scope) -> bool:
        return accepted_coding(Headers(scope=scope).get("accept-encoding", ""), ("gzip",)) == "gzip"
