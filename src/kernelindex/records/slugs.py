"""Slugs: one spelling for every URL path segment we make (lower case, words joined by hyphens).

The public export writes ``042-moe-expert-…`` for the record named ``042_moe_expert_…``; records
we make from our own packs get the same slug, so one problem never has two spellings.
"""

from __future__ import annotations

import re

_NOT_SLUG = re.compile(r"[^a-z0-9.]+")


def slugify(name: str) -> str:
    """``042_MoE expert/bwd`` → ``042-moe-expert-bwd``; never empty (falls back to ``item``)."""
    return _NOT_SLUG.sub("-", name.lower()).strip("-.") or "item"
