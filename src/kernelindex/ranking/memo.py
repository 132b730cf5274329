"""Ranked comparison groups kept per store generation.

A run page shows its run's rank, which means ranking its whole comparison group: the same work
for every run page of that group, until the store changes. Ranking depends only on stored rows,
and every write moves the store generation, so a group ranked at generation G is reused while
the generation is still G. Per process, bounded by the bytes the kept groups hold, counted object
by object when a group is kept (a group holds every run's raw samples, so a count of groups bounds
nothing: a few large groups can hold hundreds of MiB); the oldest use goes first. The groups handed
out are shared: callers read them, never change them.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kernelindex.ranking.cohort import RankedGroup
from kernelindex.ranking.memo_budget import budget
from kernelindex.store.generation import generation_of, has_written

if TYPE_CHECKING:
    from sqlalchemy import Connection


_lock = threading.Lock()
_groups: OrderedDict[tuple[str, str], tuple[int, RankedGroup | None, int]] = OrderedDict()
_used = 0


def _size(value: object) -> int:
    """Bytes of ``value`` and every object it holds (dataclass fields, tuples, lists), each counted once."""
    seen: set[int] = set()
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if id(item) in seen or item is None or isinstance(item, (bool, int)) and -5 <= item <= 256:
            continue  # None, booleans and small integers are shared by the interpreter
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif hasattr(item, "__dataclass_fields__"):
            stack.extend(getattr(item, name) for name in item.__dataclass_fields__)
    return total


def kept_bytes() -> int:
    """Bytes the kept groups hold now (what the budget bounds)."""
    return _used


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
        sizes = {key: _size(fresh.get(key)) + sys.getsizeof(store) + sys.getsizeof(key) for key in missing}
        _keep(store, generation, {key: fresh.get(key) for key in missing}, sizes)
        found.update({key: fresh.get(key) for key in missing})
    return {key: group for key in keys if (group := found[key]) is not None}


def _keep(store: str, generation: int, groups: dict[str, RankedGroup | None], sizes: dict[str, int]) -> None:
    """Keep ``groups`` within the budget: one larger than an eighth of it is not kept at all."""
    global _used
    limit = budget()
    with _lock:
        for key, group in groups.items():
            old = _groups.pop((store, key), None)
            if old is not None:
                _used -= old[2]
            if sizes[key] > limit // 8:
                continue
            _groups[(store, key)] = (generation, group, sizes[key])
            _used += sizes[key]
        while _used > limit and _groups:
            _, (_, _, size) = _groups.popitem(last=False)
            _used -= size
