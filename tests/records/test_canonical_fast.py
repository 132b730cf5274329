"""The fast canonical JSON writer gives exactly the rfc8785 package's bytes (and its errors)."""

from __future__ import annotations

import io
import json
import random

import pytest
import rfc8785
import zstandard

from kernelindex.records.canonical import canonical_json

# characters either side of U+E000, from which UTF-16 and code point order differ (UTF-8 lead bytes
# 0xED | 0xEE-0xF4), and text that looks like the number forms rewritten for RFC 8785
ALPHABET = ["a", "Z", "é", "\u2028", "\x7f", "\x1f", "\n", '"', "\\", "😀", "\ue000", "\x00", "/"]
ALPHABET += ["\ud7ff", "\uffff", "\U0010ffff", "1.0,", "2e-7", "3e+16", ".0]"]


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-(2**53) + 1, 2**53 - 1)
    if kind == 2:
        return rng.choice([0.0, -0.0, 1.0, 1e16, 1e21, 1e-7, 5e-324, 1.7976931348623157e308]) * rng.choice([1, -1])
    if kind == 3:
        return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-30, 30)
    if kind in (4, 5):
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(6)))
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = [
        "".join(rng.choice(ALPHABET[:2] if rng.random() < 0.8 else ALPHABET) for _ in range(rng.randrange(1, 4)))
        for _ in range(rng.randrange(5))
    ]
    return {k: random_value(rng, depth + 1) for k in keys}


def test_random_values_match_rfc8785():
    seed = random.randrange(2**32)  # fresh each run; the message names it to replay a failure
    rng = random.Random(seed)
    for _ in range(3000):
        value = random_value(rng)
        assert canonical_json(value) == rfc8785.dumps(value), (seed, value)


@pytest.mark.parametrize("value", [2**53, -(2**53), 10**30, float("nan"), float("inf"), {"x": [1, "\ud800"]}])
def test_values_rfc8785_refuses_are_refused_alike(value):
    with pytest.raises(rfc8785.CanonicalizationError):
        rfc8785.dumps(value)
    with pytest.raises(rfc8785.CanonicalizationError):
        canonical_json(value)


def test_every_row_of_the_real_export_matches(catalog_path):
    with open(catalog_path, "rb") as raw:
        for line in io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8"):
            row = json.loads(line)["row"]
            assert canonical_json(row) == rfc8785.dumps(row)


@pytest.mark.parametrize(
    "value",
    [
        {"value": 12.0, "samples": [1.0, -0.0, 2.5, 3.0], "nested": {"n": 9007199254740991.0}},
        {"edge": 9007199254740992.0, "whole": 4.0},  # past the safe integers: left to the token pass
        [1.0, 1e-7, 1e16, 1e21],  # whole floats beside exponents: both rewritings
        {"text": "1.0, not a number", "n": 2.0},
        ({"tuple": 1.0},),  # not a list: the token pass rewrites it
    ],
    ids=["whole", "unsafe", "exponents", "text", "tuple"],
)
def test_whole_floats_are_written_as_rfc8785_writes_them(value):
    assert canonical_json(value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value",
    [{"a": None, "b": float("nan")}, [None, float("inf")], {"n": None, "deep": [{"x": -float("inf")}]}],
    ids=["nan", "inf", "deep"],
)
def test_a_non_finite_number_beside_a_null_is_refused(value):
    """orjson writes NaN as null: beside a real null the value still goes where it is refused."""
    with pytest.raises(rfc8785.CanonicalizationError):
        canonical_json(value)


def test_nulls_in_tuples_match_rfc8785():
    value = {"t": (None, 1.0, "x"), "n": None}
    assert canonical_json(value) == rfc8785.dumps(value)
