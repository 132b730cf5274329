"""The site's public address: one setting, ``$KERNELINDEX_PUBLIC_URL``, and its default, the local
server. Permalinks, citations and the log's origin all start from it. Imports nothing of the store,
so a CLI that reads a server loads no more than this.
"""

from __future__ import annotations

import os

PUBLIC_URL_ENV = "KERNELINDEX_PUBLIC_URL"
DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"


def public_url() -> str:
    """What permalinks and citations name in local mode: $KERNELINDEX_PUBLIC_URL, else the local server."""
    return os.environ.get(PUBLIC_URL_ENV, DEFAULT_PUBLIC_URL).rstrip("/")
