"""Ranked comparison groups kept per store generation.

A run page shows its run's rank, which means ranking its whole comparison group: the same work
for every run page of that group, until the store changes. Ranking depends only on stored rows,
and every write moves the store generation, so a group ranked at generation G is reused while
the generation is still G. Per process, bounded by a count of groups (oldest use goes first).
The groups handed out are shared: callers read them, never change them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kernelindex.ranking.cohort import RankedGroup
from kernelindex.store.generation import generation_of, has_written

if TYPE_CHECKING:
    from sqlalchemy import Connection

MAX_GROUPS = 4096

_lock = threading.Lock()
_groups: OrderedDict[tuple[str, str], tuple[int, RankedGroup | None]] = OrderedDict()


def ranked_groups(
    conn: Connection, keys: Iterable[str], rank: Callable[[list[str]], dict[str, RankedGroup]]
) -> dict[str, RankedGroup]:
    """``rank(keys)`` for the groups not yet ranked at this generation; the others as kept."""
    keys = sorted(set(keys))
    if has_written(conn):  # uncommitted rows: what this sees may yet be rolled back
        return rank(keys)
    generation = generation_of(conn)  # read first: rows read after it are at least this new
    if generation is None:
        return rank(keys)
    store = str(conn.engine.url)
    found: dict[str, RankedGroup | None] = {}
    with _lock:
        for key in keys:
            kept = _groups.get((store, key))
            if kept is not None and kept[0] == generation:
                _groups.move_to_end((store, key))
                found[key] = kept[1]
    missing = [key for key in keys if key not in found]
    if missing:
        fresh = rank(missing)
        with _lock:
            for key in missing:
                found[key] = fresh.get(key)
                _groups[(store, key)] = (generation, found[key])
                _groups.move_to_end((store, key))
            while len(_groups) > MAX_GROUPS:
                _groups.popitem(last=False)
    return {key: group for key in keys if (group := found[key]) is not None}
