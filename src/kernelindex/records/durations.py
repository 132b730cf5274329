"""Durations as integer nanoseconds, parsed with exact decimal arithmetic (on integers).

Published records may write a duration as ``"8.1 us"``; binary floats would turn that into
8099.999… ns and a digest nobody else can reproduce, so the text is read as a decimal and
must come out as a whole number of nanoseconds.
"""

from __future__ import annotations

import re

DURATION_TEXT = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s?(ns|us|\u00b5s|ms|s)")
MAX_DIGITS = 64
NS_PER_UNIT = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


class AmbiguousDuration(ValueError):
    """The text names a duration that is not a whole number of nanoseconds."""


def parse_duration_ns(text: str) -> int:
    """``"8.1 us"`` -> 8100. Raises ValueError for text that is not a duration at all and
    AmbiguousDuration for one that falls between two nanoseconds."""
    match = DURATION_TEXT.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration: write integer nanoseconds or text like '8.12 us'")
    number, unit = match.groups()
    if len(number) > MAX_DIGITS:
        raise ValueError(f"{text!r} has more digits than any duration needs")
    whole, _, fraction = number.partition(".")
    # number = digits / 10**len(fraction): integer arithmetic keeps every decimal digit exact.
    numerator = int(whole + fraction) * NS_PER_UNIT[unit]
    denominator = 10 ** len(fraction)
    if numerator % denominator:
        raise AmbiguousDuration(f"{text!r} is not a whole number of nanoseconds")
    return numerator // denominator
