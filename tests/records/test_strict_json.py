"""The one strict JSON reader: what json.loads would take and a store must not (a key twice, NaN,
1e400, NUL, a lone surrogate, nesting past the limit) is refused by name; the rest reads as json does."""

from __future__ import annotations

import json
import os
import random

import pytest

from kernelindex.records.strict_json import MAX_DEPTH, loads_strict

SEED = int(os.environ.get("KERNELINDEX_TEST_SEED", random.randrange(2**32)))


@pytest.mark.parametrize("depth", [1, 254, 255, 256, 257, MAX_DEPTH])
def test_nesting_up_to_the_limit_reads_back_whatever_orjson_can_write(depth):
    """orjson reads 1,024 levels but writes 255: deeper text takes the slow path and reads the same."""
    text = "[" * depth + "1" + "]" * depth
    value = loads_strict(text)
    assert value == json.loads(text)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 1030])
def test_nesting_past_the_limit_is_refused_at_any_stack_depth(depth):
    text = '{"a":' * depth + "1" + "}" * depth

    def nested_call(levels: int):  # a caller already deep in its own stack gets the same answer
        return nested_call(levels - 1) if levels else loads_strict(text)

    for stack in (0, 300):
        with pytest.raises(ValueError, match="nested too deeply"):
            nested_call(stack)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"a": 1, "b": {"c": 2, "c": 3}}', "duplicate key 'c'"),
        ('{"tolerance": NaN}', "NaN is not JSON"),
        ("[Infinity]", "Infinity is not JSON"),
        ('{"x": 1e400}', "1e400"),
        ('{"name": "a\\u0000b"}', "NUL"),
        ('{"name": "\\ud800"}', "lone UTF-16 surrogate"),
        ('{"a": 1', "Expecting"),
    ],
)
def test_what_json_loads_would_take_is_refused_by_name(text, reason):
    with pytest.raises(ValueError, match=reason):
        loads_strict(text)
    with pytest.raises(ValueError, match=reason):
        loads_strict(text.encode())


def test_any_document_json_writes_reads_back_the_same_in_any_layout():
    rng = random.Random(SEED)

    def value(depth: int):
        kind = rng.randrange(7 if depth < 4 else 4)
        if kind == 0:
            return rng.randrange(-(2**53), 2**53)
        if kind == 1:
            return rng.uniform(-1e300, 1e300) * rng.choice([1, 1e-300])
        if kind == 2:
            return "".join(rng.choice('ab\u00e9\u4e2d\U0001f600"\\\n ') for _ in range(rng.randrange(8)))
        if kind == 3:
            return rng.choice([True, False, None])
        if kind in (4, 5):
            return {f"k{n}{rng.randrange(100)}": value(depth + 1) for n in range(rng.randrange(5))}
        return [value(depth + 1) for _ in range(rng.randrange(5))]

    for _ in range(300):
        doc = value(0)
        for text in (
            json.dumps(doc),
            json.dumps(doc, indent=2, ensure_ascii=False),
            json.dumps(doc, separators=(",", ":")),
        ):
            assert loads_strict(text) == doc, SEED
