"""Runner requests signed with the runner's Ed25519 key, as an ``httpx.Auth``: the signature covers the
bytes httpx actually sends (method, path, body), so no caller serialises a body twice."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import httpx

from kernelindex.records.request_signing import sign_request

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


class SignedRequests(httpx.Auth):
    """Signs every request of a :class:`~kernelindex.client.Client` (``Client(url, auth=SignedRequests(key))``)."""

    requires_request_body = True

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self.private_key = private_key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers.update(sign_request(self.private_key, request.method, request.url.path, request.content))
        yield request
