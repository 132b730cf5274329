"""The one slug rule: record names and URL path segments.

Two spellings exist in stored data and both stay: a record name keeps ``_`` and is cut at a length
(120 characters; the upstream importers' names allow 180), while a URL slug turns ``_`` into ``-``
(the public export writes ``042-moe-expert-…`` for the record named ``042_moe_expert_…``) and is
never cut. ``url=True`` picks the second. Pure; no I/O.
"""

from __future__ import annotations

import re

NAME_LIMIT = 120
UPSTREAM_NAME_LIMIT = 180

_NOT_NAME = re.compile(r"[^a-z0-9._-]+")
_NOT_URL = re.compile(r"[^a-z0-9.]+")


def slug(text: object, *, limit: int = NAME_LIMIT, url: bool = False) -> str:
    """``042_MoE expert/bwd`` → ``042_moe-expert-bwd`` (a record name, never empty: ``unnamed``),
    or with ``url=True`` → ``042-moe-expert-bwd`` (a path segment, never empty: ``item``)."""
    lowered = str(text).lower()
    if url:
        return _NOT_URL.sub("-", lowered).strip("-.") or "item"
    return (_NOT_NAME.sub("-", lowered).strip("-._") or "unnamed")[:limit]
