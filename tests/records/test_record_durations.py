"""Duration text to integer nanoseconds: exact for every decimal, refused when in between."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from kernelindex.records.durations import NS_PER_UNIT, AmbiguousDuration, parse_duration_ns

SEED = random.randrange(2**32)


def _decimal_text(nanoseconds: int, unit: str) -> str:
    """nanoseconds written in ``unit`` with exactly the digits it needs (no float rounding)."""
    value = Decimal(nanoseconds) / NS_PER_UNIT[unit]
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def test_random_whole_nanoseconds_survive_every_unit() -> None:
    print(f"seed={SEED}")
    rng = random.Random(SEED)
    for _ in range(2000):
        nanoseconds = rng.choice([rng.randrange(10**4), rng.randrange(10**9), rng.randrange(2**53)])
        unit = rng.choice(sorted(NS_PER_UNIT))
        space = rng.choice(["", " "])
        text = f"{_decimal_text(nanoseconds, unit)}{space}{unit}"
        assert parse_duration_ns(text) == nanoseconds, (SEED, text)


def test_random_fractions_of_a_nanosecond_are_ambiguous() -> None:
    print(f"seed={SEED}")
    rng = random.Random(SEED)
    for _ in range(2000):
        nanoseconds = rng.randrange(10**12)
        unit = rng.choice(["us", "ms", "s"])
        # a whole number of ns plus k tenths of a ns, written exactly in the chosen unit
        tenths = Decimal(rng.randrange(1, 10)) / 10
        text = format((Decimal(nanoseconds) + tenths) / NS_PER_UNIT[unit], "f")
        with pytest.raises(AmbiguousDuration):
            parse_duration_ns(f"{text} {unit}")


def test_float_rounding_would_have_given_the_wrong_answer() -> None:
    # 1.001 us in binary floating point is 1000.9999999999999 ns
    assert float("1.001") * 1000 != 1001
    assert parse_duration_ns("1.001 us") == 1001
    assert parse_duration_ns("1.001 s") == 1_001_000_000


@pytest.mark.parametrize(
    "text", ["8120", "8.1 ps", "-1 ns", ".5 us", "5. us", "5 US", "5  us", "1e3 ns", "\u0661 ns", "5 us\n"]
)
def test_text_that_is_not_a_duration(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration_ns(text)
    assert not isinstance(caught.value, AmbiguousDuration)
