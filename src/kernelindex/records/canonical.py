"""Canonical JSON (RFC 8785) and the digests and keys computed from it.

These functions are the contract with the public KernelIndex site: a digest computed here must
equal the one the site publishes for the same record, byte for byte.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from json.encoder import encode_basestring  # type: ignore[attr-defined]  (the C string escaper)
from typing import Any

import rfc8785

from kernelindex import API_VERSION

DIGEST_PREFIX = "sha256:"


SAFE_INTEGER = 2**53  # RFC 8785 numbers are IEEE doubles: integers beyond this are refused


class _Unusual(Exception):
    """A value the fast writer leaves to the reference implementation (which also raises its errors)."""


def canonical_json(value: Any) -> bytes:
    """RFC 8785 bytes of a JSON value (sorted keys, no whitespace, ECMAScript numbers).

    Written by a fast path that uses the C string escaper (JCS escapes exactly what Python's JSON
    escaper does when it leaves non-ASCII as is); anything unusual (a non-ASCII key, whose order is
    by UTF-16 code units, an unsafe integer, a non-finite number, a lone surrogate, a type JSON
    lacks) goes to the ``rfc8785`` package, which also raises its own errors for them."""
    parts: list[str] = []
    try:
        _write(value, parts.append)
        return "".join(parts).encode("utf-8")
    except (_Unusual, UnicodeEncodeError):
        return rfc8785.dumps(value)


def _write(value: Any, out) -> None:
    if isinstance(value, str):
        out(encode_basestring(value))
    elif value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif isinstance(value, int):
        if not -SAFE_INTEGER < value < SAFE_INTEGER:
            raise _Unusual
        out(str(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise _Unusual
        out(es_number(value))
    elif isinstance(value, Mapping):
        keys = list(value)
        if not all(isinstance(k, str) and k.isascii() for k in keys):
            raise _Unusual
        keys.sort()
        out("{")
        for i, key in enumerate(keys):
            if i:
                out(",")
            out(encode_basestring(key))
            out(":")
            _write(value[key], out)
        out("}")
    elif isinstance(value, (list, tuple)):
        out("[")
        for i, item in enumerate(value):
            if i:
                out(",")
            _write(item, out)
        out("]")
    else:
        raise _Unusual


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
