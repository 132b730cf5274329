"""What `kernelindex serve` settles before its workers start and each worker reads back: the site's
public address, checked in one place (by the CLI and by the app), and the page cache's byte budget.
Nothing here imports a web framework, so `kernelindex serve` refuses a bad setting before it loads
one."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from kernelindex.services.public_url import PUBLIC_URL_ENV  # one setting: the site's address, for citations and links

BUDGET_ENV = "KERNELINDEX_CACHE_BYTES"  # each worker's answer cache, in bytes (serve shares one budget out)
DEFAULT_BUDGET = 32 * 1024 * 1024


def checked_public_url(configured: str | None, named: str = "public_url") -> str | None:
    """The trusted public address (``configured``, else $KERNELINDEX_PUBLIC_URL), checked: an
    http(s) URL with a host and no query, without its trailing slash. None when unset. ``serve
    --public-url`` and the app both ask here; an error names ``named`` or the variable it came from."""
    text = configured if configured is not None else os.environ.get(PUBLIC_URL_ENV)
    if not text:
        return None
    parts = urlsplit(text.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        where = named if configured is not None else PUBLIC_URL_ENV
        raise ValueError(f"{where}: {text!r} is not an http(s) URL of the form https://host[:port][/path]")
    return text.strip().rstrip("/")
