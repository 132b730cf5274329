"""Field types shared by every record kind, each checking what the published schemas check.

Numbers, digests, durations and timestamps get their own validators rather than pydantic's
coercions: a record's digest is computed from the values as written, so a value is either kept
exactly (an int stays an int, a timestamp string keeps its form) or refused with a reason.
"""

from __future__ import annotations

import math
import re
import sys
from typing import Annotated, Any

from pydantic import PlainValidator, StringConstraints, WithJsonSchema
from pydantic_core import PydanticCustomError

from kernelindex.records.durations import AmbiguousDuration, parse_duration_ns

MAX_SAFE_INTEGER = 2**53 - 1
"""JavaScript's Number.MAX_SAFE_INTEGER: the published schemas bound every integer by it."""

IDENTIFIER_PATTERN = r"^[a-z][a-z0-9_]*$"
NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
SOURCE_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"
COMMIT_PATTERN = r"^[0-9a-f]{40}$"
DURATION_PATTERN = r"^\d+(\.\d+)?\s?(ns|us|" + "\u00b5" + r"s|ms|s)$"  # \u00b5: the micro sign
TIMESTAMP_PATTERN = (
    r"^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29"
    r"|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
    r"|(?:02)-(?:0[1-9]|1\d|2[0-8])))"
    r"T(?:(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z))$"
)
# For Python's re the timestamp pattern spells \d as [0-9]: Python's \d also matches non-ASCII
# digits, JSON Schema's (ECMA-262) does not.
_TIMESTAMP = re.compile(TIMESTAMP_PATTERN.replace(r"\d", "[0-9]"))
_DIGEST = re.compile(DIGEST_PATTERN)
_OFFSET = re.compile(r"[+-][0-9]{2}:?[0-9]{2}$")


def _fail(code: str, message: str) -> PydanticCustomError:
    return PydanticCustomError(code, message)


def _check_integer(value: Any, ge: int | None, gt: int | None, le: int | None) -> int:
    # JSON Schema counts 2.0 as an integer; it is stored as 2 (same canonical JSON).
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail("integer_type", "expected an integer")
    _check_bounds(value, ge, gt, le)
    return value


def check_number(value: Any, ge: float | None = None, gt: float | None = None, le: float | None = None) -> int | float:
    """A JSON number as given, or PydanticCustomError. Integers beyond 2**53 are refused although
    the published schemas let them through: RFC 8785 cannot canonicalize them, so no digest."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail("number_type", "expected a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail("number_finite", "expected a finite number (JSON has no NaN or Infinity)")
    if isinstance(value, int) and abs(value) > MAX_SAFE_INTEGER:
        raise _fail("number_domain", f"integer {value} is beyond 2**53-1: RFC 8785 cannot hash it exactly")
    _check_bounds(value, ge, gt, le)
    return value


def _check_bounds(value: float, ge: float | None, gt: float | None, le: float | None) -> None:
    if ge is not None and value < ge:
        raise _fail("too_small", f"must be >= {ge}, got {value}")
    if gt is not None and value <= gt:
        raise _fail("too_small", f"must be > {gt}, got {value}")
    if le is not None and value > le:
        raise _fail("too_large", f"must be <= {le}, got {value}")


def _bounds_schema(ge: float | None, gt: float | None, le: float | None) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    if gt is not None:
        schema["exclusiveMinimum"] = gt
    if ge is not None:
        schema["minimum"] = ge
    if le is not None:
        schema["maximum"] = le
    return schema


# The factories below return an annotation's metadata, not a type, so that every field type is
# spelled `Annotated[...]` and a type checker sees it: `Annotated[int, *integer(ge=0)]`.


def integer(
    *, ge: int | None = None, gt: int | None = None, le: int | None = MAX_SAFE_INTEGER
) -> tuple[PlainValidator, WithJsonSchema]:
    """An integer field bounded like the schemas' (by default at most MAX_SAFE_INTEGER)."""
    low, high = _fast_range(ge, gt, le)

    def check(value: Any) -> int:
        # One call per value: the common case (an int well inside the bounds) returns at once.
        if type(value) is int and low <= value <= high:
            return value
        return _check_integer(value, ge, gt, le)

    return PlainValidator(check), WithJsonSchema({"type": "integer", **_bounds_schema(ge, gt, le)})


def number(
    *, ge: float | None = None, gt: float | None = None, le: float | None = None
) -> tuple[PlainValidator, WithJsonSchema]:
    """A JSON number kept exactly as given: an int stays an int, a float a float."""
    low, high = _fast_range(ge, gt, le)
    low_int, high_int = max(low, -MAX_SAFE_INTEGER), min(high, MAX_SAFE_INTEGER)

    def check(value: Any) -> int | float:
        # The common cases return at once; anything else gets check_number's full reasons.
        kind = type(value)
        if (kind is float and low <= value <= high) or (kind is int and low_int <= value <= high_int):
            return value
        return check_number(value, ge, gt, le)

    return PlainValidator(check), WithJsonSchema({"type": "number", **_bounds_schema(ge, gt, le)})


def _fast_range(ge: float | None, gt: float | None, le: float | None) -> tuple[float, float]:
    """Closed bounds that only values every check accepts lie within (``gt`` made strict by going
    one step up to the next float; NaN and the infinities fall outside: finite floats only)."""
    low = -sys.float_info.max
    if ge is not None:
        low = max(low, ge)
    if gt is not None:
        low = max(low, math.nextafter(gt, math.inf))
    high = sys.float_info.max if le is None else min(sys.float_info.max, le)
    return low, high


def text(max_length: int, pattern: str | None = None) -> StringConstraints:
    return StringConstraints(max_length=max_length, pattern=pattern)


SafeInt = Annotated[int, *integer(ge=-MAX_SAFE_INTEGER)]
Count = Annotated[int, *integer(ge=0)]
PositiveInt = Annotated[int, *integer(gt=0)]
Number = Annotated[int | float, *number()]
NonNegativeNumber = Annotated[int | float, *number(ge=0)]
PositiveNumber = Annotated[int | float, *number(gt=0)]
Ratio = Annotated[int | float, *number(ge=0, le=1)]
Identifier = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]
Name = Annotated[str, text(200, NAME_PATTERN)]
SourceSlug = Annotated[str, text(100, SOURCE_PATTERN)]
Commit = Annotated[str, StringConstraints(pattern=COMMIT_PATTERN)]
Text50 = Annotated[str, text(50)]
Text100 = Annotated[str, text(100)]
PRODUCT_MAX = 100  # characters of a hardware product's name (an implementation's productsTested)
Product = Annotated[str, text(PRODUCT_MAX)]
Text120 = Annotated[str, text(120)]
Text200 = Annotated[str, text(200)]
Text500 = Annotated[str, text(500)]
Text1000 = Annotated[str, text(1000)]
Text2000 = Annotated[str, text(2000)]
Uri = Text2000


def _check_digest(value: Any) -> str:
    if not isinstance(value, str) or not _DIGEST.fullmatch(value):
        raise _fail("bad_digest", f"bad digest {value!r}: expected 'sha256:' and 64 lowercase hex digits")
    return value


Digest = Annotated[
    str,
    PlainValidator(_check_digest),
    WithJsonSchema({"type": "string", "pattern": DIGEST_PATTERN}),
]


_EXAMPLE_STAMP = "2026-05-27T05:56:21.957Z"


def _check_timestamp(value: Any) -> str:
    if not isinstance(value, str):
        raise _fail("timestamp_type", f"expected a UTC ISO-8601 timestamp string like {_EXAMPLE_STAMP}")
    if _TIMESTAMP.fullmatch(value):
        return value
    offset = _OFFSET.search(value)
    if offset is not None:
        raise _fail(
            "timestamp_offset",
            f"timestamp {value!r} has offset {offset.group()}: write it in UTC with a trailing Z",
        )
    if value[-1:] not in ("Z", "z") and _TIMESTAMP.fullmatch(value + "Z"):
        raise _fail("timestamp_naive", f"naive timestamp {value!r}: no time zone; write it in UTC with a trailing Z")
    raise _fail("timestamp_format", f"{value!r} is not a UTC ISO-8601 timestamp like {_EXAMPLE_STAMP}")


Timestamp = Annotated[
    str,
    PlainValidator(_check_timestamp),
    WithJsonSchema({"type": "string", "format": "date-time", "pattern": TIMESTAMP_PATTERN}),
]
"""Kept as the given string (so digests survive a round trip); only the UTC 'Z' form is valid."""


def _check_duration(value: Any) -> int:
    if isinstance(value, str):
        try:
            value = parse_duration_ns(value)
        except AmbiguousDuration as exc:
            raise _fail("ambiguous_duration", f"ambiguous duration: {exc}") from None
        except ValueError as exc:
            raise _fail("duration_format", str(exc)) from None
        if value > MAX_SAFE_INTEGER:
            raise _fail("duration_domain", f"duration {value} ns is beyond 2**53-1 ns")
    elif isinstance(value, float) and not value.is_integer():
        reason = f"ambiguous duration: {value!r} is not a whole number of nanoseconds"
        raise _fail("ambiguous_duration", reason)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        raise _fail("negative_duration", f"negative duration {value!r}")
    return _check_integer(value, 0, None, MAX_SAFE_INTEGER)


DURATION_SCHEMA = {
    "anyOf": [
        {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER},
        {"type": "string", "pattern": DURATION_PATTERN},
    ]
}
Duration = Annotated[int, PlainValidator(_check_duration), WithJsonSchema(DURATION_SCHEMA)]
"""Integer nanoseconds; text like "8.1 us" is converted exactly and stored as the integer."""
