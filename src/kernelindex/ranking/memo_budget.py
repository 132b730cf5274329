"""The ranked groups' byte budget per process (:mod:`kernelindex.ranking.memo`). Apart from the memo,
which loads the store, so `kernelindex serve` can share the budget out among its workers before
it builds the app they are forked from."""

from __future__ import annotations

import os

BUDGET_ENV = "KERNELINDEX_RANK_CACHE_BYTES"
DEFAULT_BUDGET = 32 * 1024 * 1024


def budget() -> int:
    """Bytes of ranked groups one process keeps: $KERNELINDEX_RANK_CACHE_BYTES, else 32 MiB."""
    value = os.environ.get(BUDGET_ENV)
    return int(value) if value else DEFAULT_BUDGET
