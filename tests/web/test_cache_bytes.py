"""The answer cache counts the bytes an entry really holds (body, variants, headers, the objects around
them), so its budget bounds the worker's memory, not only the bodies."""

from __future__ import annotations

import random
import sys

from kernelindex.web.http.cache import Entry, LRUBytes


def _deep(value, seen=None) -> int:
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, (list, tuple)):
        size += sum(_deep(v, seen) for v in value)
    elif isinstance(value, dict):
        size += sum(_deep(k, seen) + _deep(v, seen) for k, v in value.items())
    elif hasattr(value, "__dict__"):
        size += _deep(vars(value), seen)
    return size


def test_counted_sizes_cover_the_objects_and_the_budget_holds():
    seed = random.randrange(2**32)
    print(f"cache seed: {seed}")
    rng = random.Random(seed)
    budget = 256 * 1024
    cache = LRUBytes(budget)
    for n in range(2000):
        headers = [(f"x-h{i}".encode(), rng.randbytes(rng.randint(1, 60))) for i in range(rng.randint(1, 8))]
        entry = Entry(headers=headers, body=rng.randbytes(rng.randint(0, 3000)), etag=f"{n:032x}", personal=False)
        key = "/runs/" + "x" * rng.randint(1, 400) + f"?n={n}"
        assert entry.size >= _deep(entry) - sys.getsizeof(entry.body) + len(entry.body) - 64
        cache.put(key, entry)
        assert cache.used <= budget
    assert cache.used == sum(e.size + len(k) for k, e in cache._entries.items())
    assert len(cache) < 2000  # it evicted
