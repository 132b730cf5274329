"""The numeric field validators' fast paths accept exactly what their full checks accept.

``integer()`` and ``number()`` return at once for an int or a float well inside the bounds and
hand everything else to the full check; this compares both on random and edge values, for every
bound shape the models use, so a fast path can never let through what the full check refuses.
"""

from __future__ import annotations

import math
import random
import sys

import pytest
from pydantic_core import PydanticCustomError

from kernelindex.records.fields import MAX_SAFE_INTEGER, _check_integer, check_number, integer, number

BOUNDS = [
    {},
    {"ge": 0},
    {"gt": 0},
    {"ge": 0, "le": 1},
    {"ge": -MAX_SAFE_INTEGER},
    {"gt": 0.5},
    {"ge": -3, "le": 7.5},
]
EDGES = [
    0, -0.0, 0.0, 1, -1, 1.0, 2.0, 0.5, 1e-320, -1e-320, 5e-324, 7, 7.5, 7.50001, -3, -3.0000001,
    MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER - 1, 2**63, float(2**60),
    math.inf, -math.inf, math.nan, sys.float_info.max, True, False, None, "1", [1],
]  # fmt: skip


def _outcome(check, value):
    try:
        result = check(value)
    except PydanticCustomError as exc:
        return ("refused", exc.type, exc.message())
    return ("kept", type(result), result if result == result else "nan")


def _values(rng: random.Random) -> list:
    randoms = [rng.uniform(-10, 10) for _ in range(300)] + [rng.randint(-(2**60), 2**60) for _ in range(300)]
    return EDGES + randoms + [rng.randint(-5, 10) for _ in range(100)]


@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
def test_fast_paths_decide_like_the_full_checks(bounds):
    rng = random.Random()
    integer_bounds = {"le": MAX_SAFE_INTEGER, **{k: v for k, v in bounds.items() if isinstance(v, int)}}
    fast_integer = integer(**integer_bounds)[0].func
    fast_number = number(**bounds)[0].func
    for value in _values(rng):
        full_int = _outcome(lambda v: _check_integer(v, integer_bounds.get("ge"), integer_bounds.get("gt"),
                                                     integer_bounds["le"]), value)  # fmt: skip
        assert _outcome(fast_integer, value) == full_int, (value, integer_bounds)
        full = _outcome(lambda v: check_number(v, bounds.get("ge"), bounds.get("gt"), bounds.get("le")), value)
        assert _outcome(fast_number, value) == full, (value, bounds)
