"""Canonical JSON (RFC 8785) and the digests and keys computed from it.

These functions are the contract with the public KernelIndex site: a digest computed here must
equal the one the site publishes for the same record, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import orjson
import rfc8785

from kernelindex import API_VERSION

DIGEST_PREFIX = "sha256:"


SAFE_INTEGER = 2**53  # RFC 8785 numbers are IEEE doubles: integers beyond this are refused


class _Unusual(Exception):
    """A value left to the reference implementation (which also raises its errors for it)."""


# In json.dumps output, what may differ from RFC 8785: a float written "1.0" or "1e-05" (ECMAScript
# writes "1" and "0.00001"), and an integer near or past 2**53 (refused by RFC 8785). Text inside a
# string may trip these too: harmless, the tokens are then looked at one by one.
_FLOAT_FORMS = re.compile(r"[0-9]\.0[,\]}]|[0-9]\.0$|[0-9]e[+-]")
_LONG_INTEGER = re.compile(r"[:,\[]-?[0-9]{16}|^-?[0-9]{16}")
# A character whose UTF-16 order differs from its code point order: keys holding one sort differently.
_HIGH = re.compile(r"[\ue000-\U0010ffff]")
# The same on orjson's UTF-8 output (whose exponents have no padding: "1e-7", "1e+16"), looked
# for by patterns that start with a literal, which the regex engine finds by a fast scan (a
# pattern that starts with a class or an alternation is tried at every byte: 3x slower on a
# record; text matching them only costs the token-wise pass). orjson refuses unsafe integers.
_POINT_ZERO = re.compile(rb"\.0[,\]}]")
# An exponent is a digit's, with digits after it up to the number's end: not the "2e-4d" of a UUID
# in a string (every third record holds one), which would send the record to the token pass.
_EXPONENT_MINUS = re.compile(rb"e-(?<=[0-9]e-)(?=[0-9]+(?:[,\]}]|$))")
_EXPONENT_PLUS = re.compile(rb"e\+(?<=[0-9]e\+)(?=[0-9]+(?:[,\]}]|$))")
# Every byte but the lead bytes of characters at or past U+E000 (0xEE-0xF4): what is left once they
# are deleted says whether the text holds one (5x faster than searching for them).
_BELOW_HIGH_UTF8 = bytes(range(0xEE))
# orjson options: integers only in RFC 8785's safe range, and what the standard library would not
# write (dates, dataclasses, subclasses of str/int/dict) handed back to it, not written orjson's way.
_ORJSON_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_STRICT_INTEGER
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# JSON tokens: a whole string (so nothing inside one is taken for a number), or a number.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?')


def _ecmascript_number(match: re.Match) -> str:
    token = match.group(0)
    if token[0] == '"':
        return token
    if "." in token or "e" in token:
        return es_number(float(token))
    if len(token) >= 16 and not -SAFE_INTEGER < int(token) < SAFE_INTEGER:
        raise _Unusual
    return token


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value (sorted keys, no whitespace, ECMAScript numbers).

    Written by orjson (its string escapes are JCS's, keys sort by code point, and most of its
    numbers are already ECMAScript's), with the number tokens that may differ ("1.0", "1e+16")
    rewritten. What orjson refuses (integers past 2**53, non-text keys, a lone surrogate) goes
    through the standard library's C encoder the same way, and anything unusual there (a type JSON
    lacks, a non-finite number, an unsafe integer, a character past U+E000 that could reorder keys)
    goes to the ``rfc8785`` package, which also raises its errors for them."""
    try:
        data = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError
        return _canonical_by_stdlib(value)
    # orjson writes NaN and the infinities as null: a value holding a null that does not read back
    # equal holds one (or a tuple, read back as a list) and goes to the standard library's encoder,
    # which refuses them. Reading back costs a tenth of that encoder, and half the records hold a null.
    if b"null" in data and orjson.loads(data) != value:
        return _canonical_by_stdlib(value)
    if not data.isascii() and data.translate(None, _BELOW_HIGH_UTF8):
        return rfc8785.dumps(value)
    if _rewritten_numbers(data):  # most often whole floats ("12.0"): written as integers, no token pass
        data = orjson.dumps(_whole_floats_as_ints(value), option=_ORJSON_OPTIONS)
        if _rewritten_numbers(data):
            return _TOKEN.sub(_ecmascript_number, data.decode("utf-8")).encode("utf-8")
    return data


def _rewritten_numbers(data: bytes) -> bool:
    """Whether orjson's output may hold a number that ECMAScript writes otherwise."""
    return bool(
        data.endswith(b".0") or _POINT_ZERO.search(data) or _EXPONENT_MINUS.search(data) or _EXPONENT_PLUS.search(data)
    )


def _whole_floats_as_ints(value: Any) -> Any:
    """``value`` with every float that is a whole number within RFC 8785's safe integers as an
    int: ECMAScript writes both alike ("12", where orjson writes "12.0"), and a measurement row's
    numbers are mostly such floats. Anything else (a tuple, a subclass) left as it is, for the
    token pass to see."""
    kind = type(value)
    if kind is float:
        return int(value) if value.is_integer() and -SAFE_INTEGER < value < SAFE_INTEGER else value
    if kind is dict:
        return {key: _whole_floats_as_ints(item) for key, item in value.items()}
    if kind is list:
        return [_whole_floats_as_ints(item) for item in value]
    return value


def _canonical_by_stdlib(value: Any) -> bytes:
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        if (".0" in text or "e-" in text or "e+" in text) and _FLOAT_FORMS.search(text) or _LONG_INTEGER.search(text):
            text = _TOKEN.sub(_ecmascript_number, text)
        if not text.isascii() and _HIGH.search(text):
            raise _Unusual
        return text.encode("utf-8")
    except (TypeError, ValueError, _Unusual):  # UnicodeEncodeError (a lone surrogate) is a ValueError
        return rfc8785.dumps(value)


def es_number(value: float) -> str:
    """A float as ECMAScript's Number::toString writes it (shortest round-trip digits)."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} has no JSON form")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exp = repr(abs(value)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + int(exp or 0) - (len(whole + frac) - len((whole + frac).lstrip("0")))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + ("e+" if e > 0 else "e-") + str(abs(e))
    return sign + text


def sha256_digest(data: bytes) -> str:
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest(record: Mapping[str, Any]) -> str:
    """Content digest of a record: metadata is left out so a retitle keeps the identity."""
    body = {
        "apiVersion": record.get("apiVersion", API_VERSION),
        "kind": record["kind"],
        "spec": record["spec"],
    }
    return sha256_digest(canonical_json(body))


def correctness_key(correctness: Any) -> str:
    """Key of a workload case's correctness policy (``workloadCase.spec.correctness``)."""
    return sha256_digest(canonical_json({"correctness": correctness}))


def metric_key(metric: str | None, statistic: str | None, unit: str | None) -> str:
    """``metric:statistic:unit`` of a run's primary metric, or ``none`` when it has none."""
    if not metric or not statistic or not unit:
        return "none"
    return f"{metric}:{statistic}:{unit}"


@lru_cache(maxsize=4096)  # runs of one cohort ask for the same key: thousands per catalog import
def comparison_key(
    *,
    operation: str | None,
    workload: str,
    protocol: str,
    environment: str,
    correctness: str | None,
    metric: str,
) -> str:
    """The cohort key: runs are ranked only against runs with the same key.

    The implementation is deliberately absent: implementations are what a cohort compares.
    """
    body = {
        "v": 1,
        "operation": operation,
        "workload": workload,
        "protocol": protocol,
        "environment": environment,
        "correctness": correctness,
        "metric": metric,
    }
    return sha256_digest(canonical_json(body))
